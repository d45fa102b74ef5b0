"""Algorithm base class, registry and result type.

An algorithm is a class with a pydantic ``Config`` (defaults from its paper, each
field described) and a :meth:`Algorithm.step` that maps the evaluation at θ_k to
the evaluation at θ_{k+1} (plus its dual variables). The observer / time-limit /
stop handling is the single loop of :mod:`solvers.algorithms.driver`.

A new algorithm is its Config, declared in the paper's module of :mod:`solvers.catalog`
(importable without torch, so the API validates specs without loading this package)::

    @ALGORITHMS.declare("name", implementation="solvers.algorithms.mine:Mine", paper="...",
                        aliases=("..",), description="...")
    class MineConfig(AlgorithmConfig): ...

and one module in this folder::

    @ALGORITHMS.implements("name")
    class Mine(Algorithm):
        def step(self, k, current): ...
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch
from pydantic import BaseModel
from torch import Tensor, nn

from ..catalog.base import ALGORITHMS, AlgorithmConfig  # noqa: F401  (ALGORITHMS re-exported for the implementations)
from ..observer import IterationRecord
from ..problem import Evaluation, Problem


@dataclass
class SolveResult:
    model: nn.Module
    status: str                     # "completed" | "stopped" | "diverged"
    stop_reason: str | None         # e.g. "cancelled", "time_limit", "diverged"
    iterations: int
    solver_time_s: float
    samples_seen: int
    last: IterationRecord | None    # the final (last finite) iterate's record
    config: BaseModel               # the resolved config actually used
    message: str | None = None      # why a diverged run stopped, naming the step sizes to lower
    tried: list[dict] = field(default_factory=list)  # auto's portfolio: one entry per solve (solvers.auto)

    @property
    def diverged(self) -> bool:
        """The driver stopped at a non-finite iterate, or the returned model holds a non-finite parameter."""
        return self.status == "diverged" or not all(torch.isfinite(p).all() for p in self.model.parameters())


class Algorithm:
    """θ-update rule of one solver; instantiated per solve with a fresh model."""

    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    paper: ClassVar[str] = ""
    description: ClassVar[str] = ""
    supported_models: ClassVar[tuple[str, ...]] = ("linear", "mlp")
    supported_constraints: ClassVar[tuple[str, ...] | None] = None  # None = every registered family
    Config: ClassVar[type[AlgorithmConfig]] = AlgorithmConfig
    #: the run's iteration budget K (set by the driver before :meth:`start`; None when unknown).
    horizon: int | None = None
    #: the ``time.perf_counter()`` instant by which the run must end: the job's ``time_limit_s`` counted from the
    #: loop's start (set by the driver before the first step; None outside it). Work in :meth:`finish` that can run
    #: long (the deterministic threshold MIP) spends only what is left of it.
    deadline: float | None = None
    #: optional held-out Problem (the validation split) for output rules that select an iterate on it
    #: (set by the driver before :meth:`start`; None when the caller gave none).
    validation: Problem | None = None
    #: an algorithm sets this True when its own stopping rule fires (e.g. SFLS's U(r_k) ≥ −ε_opt);
    #: the driver then ends the run with status "completed".
    converged: bool = False
    #: False when no step builds an autograd graph (gradients in score space, :mod:`.score_space`): the driver
    #: then runs the iterations with grad mode off.
    needs_autograd: bool = True

    def __init__(self, problem: Problem, config: AlgorithmConfig, model: nn.Module, seed: int = 0) -> None:
        self.problem = problem
        self.config = self.resolve_config(config, problem)
        self.model = model
        self.params = [p for p in model.parameters() if p.requires_grad]
        if hasattr(problem, "auxiliary_parameters"):  # e.g. the θ_p of partial statistical parity
            self.params += problem.auxiliary_parameters()
        self.sampler = problem.sampler(seed)

    def batch(self) -> Tensor | None:
        """Indices of the next mini-batch, or None for the full batch."""
        size = self.config.batch_size
        return None if size is None or size >= self.problem.n_samples else self.sampler.uniform(size)

    def evaluate(self) -> Evaluation:
        """F and G at the current θ on the next batch (the whole training set when full batch).

        The batch is kept as ``last_batch`` so a resumed run re-evaluates the same point (checkpoints)."""
        self.last_batch = self.batch()
        return self.problem.evaluate(self.model, self.last_batch)

    @classmethod
    def for_model(cls, model_type: str) -> type["Algorithm"]:
        """The class that trains models of ``model_type`` under this solver's name (itself, unless a solver trains
        some model type by other means, e.g. ``erm`` boosting a gbdt model)."""
        return cls

    @classmethod
    def resolve_config(cls, config: AlgorithmConfig, problem: Problem) -> AlgorithmConfig:
        """Fill problem-dependent defaults (e.g. per-model-type paper values)."""
        return config

    def start(self, current: Evaluation) -> None:
        """Initialise dual variables from the evaluation at θ_0."""

    def step(self, k: int, current: Evaluation) -> tuple[Evaluation, dict[str, Tensor] | None]:
        """One iteration k → k+1: return the evaluation at θ_{k+1} and the duals."""
        raise NotImplementedError

    def finish(self) -> Evaluation | None:
        """After the last iteration: put the paper's output point (e.g. a random or averaged
        iterate) into the model and return its full-batch evaluation; None = the last iterate."""
        return None

    def samples_per_step(self) -> int:
        return min(self.config.batch_size or self.problem.n_samples, self.problem.n_samples)


def gradient(loss: Tensor, params: list[Tensor]) -> list[Tensor]:
    """∇_θ loss (zeros for parameters the loss does not depend on)."""
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]


def project(problem, params: list[Tensor]) -> None:
    """θ ← Π_Θ(θ) in place (``problem.project_``); nothing to do when the problem has no domain (Θ = R^d)."""
    if getattr(problem, "domain", True) is not None:
        problem.project_(params)

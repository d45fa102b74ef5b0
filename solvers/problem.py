"""The constrained learning problem (paper eq. 3) on already-built tensors:

    min_{θ∈Θ} F(θ) = (1/N) Σ_i ℓ(f_θ(x_i), y_i)   s.t.   G(θ) = Δ̂(θ) − ε ≤ 0 ∈ R^m,

with G the concatenation of every constraint family's rows.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from .data.batching import BatchSampler
from .constraints import ConstraintFamily, FairnessData
from .device import resolve_device
from .models.factory import ModelFactory, linear, scores_in_blocks
from .objectives import Objective, get_objective


@dataclass
class Evaluation:
    """Scores, F(θ) and G(θ) at the current θ (carrying the autograd graph)."""

    scores: Tensor
    objective: Tensor     # scalar
    constraints: Tensor   # (m,)


@dataclass
class Problem:
    """Tensors + model factory + objective + constraint families.

    ``X``: (n, d) float32 features; ``y``: (n,) labels in {0,1}; ``group``: (n,) long
    group index into ``group_names``, or ``membership`` (a :class:`~solvers.data.membership.Membership`: groups
    that overlap, a sample in several; ``group`` is then ignored and may be None). ``model_type`` ("linear", "mlp" or anything
    else for a custom factory) selects paper defaults (e.g. PLADA's Table 2 row).
    """

    X: Tensor
    y: Tensor
    group: Tensor
    group_names: list[str]
    model_factory: ModelFactory = linear
    model_type: str = "linear"
    objective: Objective | str = "logistic"
    constraints: list[ConstraintFamily] = field(default_factory=list)
    device: str | torch.device = "auto"
    domain: Callable[[list[Tensor]], None] | None = None  # Π_Θ in place (e.g. an ℓ1/ℓ2 ball); None = R^d
    membership: Any = None  # solvers.data.membership.Membership: overlapping groups (the sampler sees one stratum)

    def __post_init__(self) -> None:
        self.device = resolve_device(self.device)
        self.X = torch.as_tensor(self.X, dtype=torch.float32).to(self.device)
        self.y = torch.as_tensor(self.y, dtype=torch.float32).to(self.device)
        if self.membership is not None:
            if self.membership.n_rows != self.y.shape[0] or list(self.membership.names) != list(self.group_names):
                raise ValueError("membership must have one row per sample and the problem's group names")
            self.group = torch.zeros(self.y.shape[0], dtype=torch.long)
        self.group = torch.as_tensor(self.group, dtype=torch.long).to(self.device)
        self.objective = get_objective(self.objective)
        if self.X.ndim != 2 or self.y.shape != (self.X.shape[0],) or self.group.shape != self.y.shape:
            raise ValueError("X must be (n, d), y and group (n,)")
        if self.membership is None:
            self.data = FairnessData.build(self.y, self.group, len(self.group_names))
        else:
            rows, groups = (torch.as_tensor(a, dtype=torch.long).to(self.device) for a in self.membership.pairs)
            self.data = FairnessData.overlapping(self.y, rows, groups, len(self.group_names))
        for family in self.constraints:  # per-group families fix their rows from the training groups
            family.bind(self.group_names, self.data.by_group.counts, self.y.shape[0])
        for family in self.constraints:  # families that need the training data itself (interval "auto")
            attach = getattr(family, "attach", None)
            if attach is not None:
                attach(self)

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def constraint_names(self) -> list[str]:
        """One unique name per row of G: a name already taken gets the first free suffix ``#2``, ``#3``, ...

        Linear time: names taken are a set, and each base name resumes its suffix search where it last
        stopped (names are only ever added, so every suffix below that is still taken)."""
        names: list[str] = []
        taken: set[str] = set()
        next_k: dict[str, int] = {}
        for family in self.constraints:
            for name in family.names:
                unique, k = name, next_k.get(name, 1)
                if k > 1 or unique in taken:
                    k = max(k, 2)
                    while (unique := f"{name}#{k}") in taken:
                        k += 1
                next_k[name] = k
                taken.add(unique)
                names.append(unique)
        return names

    @property
    def tolerances(self) -> list[float]:
        return [c.tolerance for c in self.constraints for _ in c.names]

    def to(self, device: str | torch.device) -> "Problem":
        return Problem(self.X, self.y, self.group, self.group_names, self.model_factory, self.model_type,
                       self.objective, self.constraints, device, self.domain, self.membership)

    @torch.no_grad()
    def project_(self, params: list[Tensor]) -> None:
        """θ ← Π_Θ(θ), in place; every algorithm calls it after each primal step."""
        if self.domain is not None:
            self.domain(params)

    def auxiliary_parameters(self) -> list[Tensor]:
        """The constraint families' auxiliary variables, freshly initialised (optimised with θ)."""
        return [p for family in self.constraints for p in family.init_parameters(self.device)]

    def make_model(self) -> nn.Module:
        return self.model_factory(self.n_features).to(self.device)

    def constraint_values(self, scores: Tensor) -> Tensor:
        """G(θ) ∈ R^m from the scores f_θ(x_i) of every training sample."""
        return self.constraint_values_on(scores, self.data)

    def constraint_values_on(self, scores: Tensor, data: FairnessData) -> Tensor:
        if not self.constraints:
            return scores.new_zeros(0)
        return torch.cat([c.surrogate(scores, data) for c in self.constraints])

    def evaluate(self, model: nn.Module, idx: Tensor | None = None) -> Evaluation:
        """F and G at θ on the whole training set, or on the samples ``idx`` (an unbiased
        mini-batch estimate of F; a plug-in estimate of G)."""
        if idx is None:  # outside autograd (an output rule's or a trace's evaluation) by row blocks
            scores = model(self.X) if torch.is_grad_enabled() else scores_in_blocks(model, self.X)
            return Evaluation(scores, self.objective(scores, self.y), self.constraint_values_on(scores, self.data))
        scores = model(self.X[idx])
        return Evaluation(scores, self.objective(scores, self.y[idx]),
                          self.constraint_values_on(scores, self.data.subset(idx)))

    def sampler(self, seed: int) -> BatchSampler:
        return BatchSampler(self.group, 1 if self.membership is not None else len(self.group_names), seed)

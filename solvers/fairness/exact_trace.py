r"""Exact-metric trace of a running solve: every few iterations, the exact (indicator-based) value of
each constraint family on the training and the validation split, next to the surrogate the solver sees.

A solve can meet its smoothed surrogate Δ̂(θ) ≤ ε while the exact metric Δ(θ) (e.g. the demographic
parity gap of ŷ = 1{f_θ(x) > 0}) stays above ε, so the trajectory carries both. The value per family is
:func:`solvers.fairness.exact.exact_gaps` (the maximum exact gap over the family's rows, on the scale of
its tolerance), so the trace, the job's ``fairness`` report and ``metrics`` share one definition.

Traced iterations: the first, every ``every``-th, and the last (``max_iterations``). An intermediate one is
skipped while the trace has already taken more than ``max_share`` of the solve's wall time: a traced
iteration costs one forward pass over the train and validation rows, which a mini-batch solve on a large
table must not pay every few steps. Undefined values (a TPR gap without positives) are None.
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from .exact import exact_gaps
from ..data.membership import Membership
from ..models.factory import scores_in_blocks

MAX_SHARE = 0.1


class ExactTracer:
    """``tracer.due(k, elapsed)`` says whether iteration k is traced; ``tracer(model)`` measures it as
    ``{"train": [Δ_1, ..., Δ_F], "validation": [...]}`` (one value per constraint family)."""

    def __init__(self, families: Sequence, group_names: Sequence[str], splits: dict[str, tuple[Tensor, Tensor, Tensor]],
                 every: int, max_iterations: int, max_share: float = MAX_SHARE) -> None:
        if every < 1:
            raise ValueError("every must be >= 1")
        self.families, self.group_names = list(families), list(group_names)
        self.every, self.max_iterations, self.max_share = int(every), int(max_iterations), float(max_share)
        self.splits = {name: (X, y.detach().cpu().numpy(), group if isinstance(group, Membership)
                              else group.detach().cpu().numpy()) for name, (X, y, group) in splits.items()}
        self.spent_s = 0.0
        self.traced = 0

    @classmethod
    def for_problem(cls, problem, validation, every: int, max_iterations: int) -> "ExactTracer | None":
        """A tracer over ``problem``'s train rows and ``validation``'s rows (when given); None when ``every`` ≤ 0
        or the problem has no constraint. Groups: each problem's membership when it has one (overlapping)."""
        if every <= 0 or not problem.constraints:
            return None
        splits = {"train": (problem.X, problem.y, _groups(problem))}
        if validation is not None:
            splits["validation"] = (validation.X.to(problem.device), validation.y, _groups(validation))
        return cls(problem.constraints, problem.group_names, splits, every, max_iterations)

    def due(self, iteration: int, elapsed_s: float) -> bool:
        if iteration == 1 or iteration == self.max_iterations:
            return True
        return iteration % self.every == 0 and self.spent_s <= self.max_share * elapsed_s

    @torch.no_grad()
    def __call__(self, model: nn.Module) -> dict[str, list[float | None]]:
        started = time.perf_counter()
        out = {}
        for name, (X, y, group) in self.splits.items():
            logits = scores_in_blocks(model, X).double().cpu().numpy()
            if isinstance(group, Membership):
                values = exact_gaps(self.families, y, logits, None, self.group_names, membership=group)
            else:
                values = exact_gaps(self.families, y, logits, group, self.group_names)
            out[name] = [float(v) if np.isfinite(v) else None for v in values]
        self.spent_s += time.perf_counter() - started
        self.traced += 1
        return out


def _groups(problem):
    """The problem's overlapping membership, else its (n,) group index."""
    return problem.group if problem.membership is None else problem.membership

r"""Correlation-penalty baseline (Beutel et al. 2019a), as in Yao, Lin & Yang (2023, App. E.2):

    min_w  F_AUC(w) + λ |corr(h_w(ξ), γ)|,

F_AUC the square AUC surrogate c₁[(m₊ − m₋ − c₂)² + Var₊ + Var₋] (``auc_square``), corr the Pearson
correlation between the score and γ ∈ {+1, −1} on the mini-batch; plain SGD (step ``lr``), batch 100.
It targets Ex. 1 (group AUC fairness) only — Ex. 2/3 have no equivalent correlation form. λ comes from a
candidate set in the paper (values not given): sweep ``lam``; ``select_tolerances`` applies the selection
rule for a whole κ grid within one run per λ. Output: the validation-selected iterate
(same rule as ``level_set``).
"""
from __future__ import annotations

import torch

from ..constraints.auc_parity import AUCParity
from ..objectives import auc_square_per_sample
from .base import ALGORITHMS, Algorithm, gradient
from .level_set import IterateSelector


def correlation(h: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """Pearson correlation of h and γ (0 when either is constant)."""
    hc, gc = h - h.mean(), gamma - gamma.mean()
    denom = (hc.pow(2).sum() * gc.pow(2).sum() + 1e-12).sqrt()   # smooth at a constant score (w = 0)
    return (hc * gc).sum() / denom


@ALGORITHMS.implements("correlation_penalty")
class CorrelationPenalty(Algorithm):
    def start(self, current) -> None:
        fams = [f for f in self.problem.constraints if isinstance(f, AUCParity)]
        self.family = fams[0] if fams else None
        self.c1 = self.family.config.c1 if self.family else 0.5
        self.c2 = self.family.config.c2 if self.family else 1.0
        k = self.family.protected_index() if self.family else 0
        self.gamma = torch.where(self.problem.group == k, 1.0, -1.0)
        self.selector = IterateSelector(self.family, self.family.tolerance if self.family else 0.0,
                                        self.config.select_tolerances)
        self.steps = 0

    def step(self, k, current):
        p, c = self.problem, self.config
        idx = self.batch()
        X, y, gamma = (p.X, p.y, self.gamma) if idx is None else (p.X[idx], p.y[idx], self.gamma[idx])
        h = self.model(X)
        obj = auc_square_per_sample(h, y, self.c1, self.c2).mean()
        corr = correlation(h, gamma)
        grads = gradient(obj + c.lam * corr.abs(), self.params)
        with torch.no_grad():
            torch._foreach_add_(self.params, grads, alpha=-c.lr)
            p.project_(self.params)
        self.steps += 1
        if self.steps % c.select_every == 0:
            self.selector.consider(self.model, self.validation or p, self.steps)
        ev = p.evaluate(self.model, idx)
        return ev, {"corr": corr.detach().reshape(1)}

    def finish(self):
        self.selector.consider(self.model, self.validation or self.problem, self.steps)
        self.selector.restore(self.model)
        self.model.selected_by_tolerance = {
            k: {"state_dict": slot["state"], **(slot["info"] or {})}
            for k, slot in self.selector.by_kappa.items() if slot["state"] is not None}
        with torch.no_grad():
            return self.problem.evaluate(self.model)

"""Minority positive-rate constraint (IPC paper Sec. 5, after Cotter, Jiang & Sridharan 2018)."""
from __future__ import annotations

import torch
from torch import Tensor

import numpy as np

from ..metrics.classification import minority_rate
from .base import CONSTRAINTS, ConstraintFamily, FairnessData, indicator_surrogate


@CONSTRAINTS.implements("minority_rate")
class MinorityRate(ConstraintFamily):
    r"""IPC paper, Sec. 5 (the constraint of Cotter et al. 2018), in the paper's notation

        c Σ_{a∈S} σ(aᵀx) − Σ_{a∈S_min} σ(aᵀx) ≤ 0,      c ∈ (0, 1),

    written with SUMS. We divide by |S| (the training set; the paper allows a separate,
    possibly unlabelled S), which leaves the feasible set unchanged for ε = 0 and makes
    the row a rate difference of order 1 (so tolerances and multipliers are comparable
    across data sizes):

        G(θ) = c · (1/|S|) Σ_{i∈S} σ(f_θ(x_i)) − (1/|S|) Σ_{i∈S_min} σ(f_θ(x_i)) − ε.

    G ≤ 0 ⇔ the minority's share of the (surrogate) positive predictions is ≥ c (up to ε·|S|
    in sum units). σ is the family's ``surrogate`` (sigmoid as in the paper). Computed from
    per-group means ŝ_g with training shares w_g = N_g/N: (c Σ_g w_g ŝ_g − w_min ŝ_min)/Σ_g w_g
    over the groups present in ``data`` (exactly the formula above on the full training set).
    One row, named ``minority_rate[<minority>]``. Needs :meth:`bind`.
    """

    def _on_bind(self) -> None:
        counts = self.group_counts
        if self.config.minority is None:
            present = counts > 0
            self._minority = int(torch.where(present, counts, torch.full_like(counts, float("inf"))).argmin())
        else:
            if self.config.minority not in self.group_names:
                raise ValueError(f"minority_rate: unknown minority group {self.config.minority!r}; "
                                 f"groups: {', '.join(self.group_names)}")
            self._minority = self.group_names.index(self.config.minority)
        self._weights = counts / counts.sum().clamp_min(1.0)

    @property
    def minority(self) -> str:
        self._require_bound()
        return self.group_names[self._minority]

    @property
    def names(self) -> list[str]:
        return [f"{self.name}[{self.minority}]"]

    def exact_value(self, y, logits, group, group_names) -> float:
        """(c − share) · positive rate with the indicator: the row G + ε with σ replaced by 1{f > 0}, where share
        is the minority's share of the positive predictions (0 without positive predictions)."""
        pred = (np.asarray(logits) > 0).astype(int)
        minority = self.minority if self.bound else self.config.minority
        share = minority_rate(pred, group, list(group_names), minority)["minority_rate"]
        positive_rate = float(pred.mean()) if pred.size else 0.0
        return 0.0 if share is None else float((self.config.c - share) * positive_rate)

    def gap(self, scores: Tensor, data: FairnessData) -> Tensor:
        self._require_bound()
        cells = data.by_group
        if cells.n_cells != len(self.group_names):
            raise ValueError(f"{self.name}: bound to {len(self.group_names)} groups, data has {cells.n_cells}")
        rates = cells.means(indicator_surrogate(scores, self.config.surrogate, self.config.temperature))
        w = self._cached("weights", self._weights, scores) * cells.valid
        total = w.sum().clamp_min(torch.finfo(scores.dtype).tiny)
        return ((self.config.c * (w * rates).sum() - w[self._minority] * rates[self._minority]) / total).reshape(1)

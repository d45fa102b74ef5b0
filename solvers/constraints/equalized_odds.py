"""Equalized odds (paper eq. 17), generalised to K groups."""
from __future__ import annotations

import numpy as np
from torch import Tensor

from ..metrics.classification import group_fairness
from .base import (CONSTRAINTS, ConstraintFamily, FairnessData, indicator_surrogate, rates_vjp, sigmoid_rates,
                   undefined_as_nan)
from .cells import spread, spread_adjoint


@CONSTRAINTS.implements("equalized_odds")
class EqualizedOdds(ConstraintFamily):
    r"""Δ̂_E(θ) = max(Δ̂_1, Δ̂_0),  Δ̂_y = max_g ŝ_{g,y} − min_g ŝ_{g,y},

    ŝ_{g,y} = (1/N_{g,y}) Σ_{i: s_i=g, y_i=y} σ(f_θ(x_i)); Δ̂_1 is the surrogate TPR
    gap and Δ̂_0 the surrogate FPR gap. With two groups this is eq. (17) (reading its
    subscripts pq/uq as y=+1 and pu/uu as y=−1). ``aggregate="separate"`` returns
    (Δ̂_1, Δ̂_0) as two constraints. Groups with no sample of label y are skipped for Δ̂_y.
    """

    @property
    def names(self) -> list[str]:
        if self.config.aggregate == "separate":
            return [f"{self.name}[tpr]", f"{self.name}[fpr]"]
        return [self.name]

    def exact_value(self, y, logits, group, group_names) -> float:
        """max(TPR gap, FPR gap) of the exact group rates (both aggregates bound the same set)."""
        pred = (np.asarray(logits) > 0).astype(int)
        return undefined_as_nan(group_fairness(y, pred, group, list(group_names))[self.name])

    def gap(self, scores: Tensor, data: FairnessData) -> Tensor:
        cells = data.by_group_label
        rates = cells.means(indicator_surrogate(scores, self.config.surrogate, self.config.temperature))
        # cell 2g + y  ->  row y, column g
        gaps = spread(rates.view(-1, 2).T, cells.valid.view(-1, 2).T)  # (Δ̂_0, Δ̂_1)
        tpr_fpr = gaps.flip(0)
        if self.config.aggregate == "separate":
            return tpr_fpr
        return tpr_fpr.amax().reshape(1)

    def vjp(self, scores: Tensor, data: FairnessData, w: Tensor) -> Tensor:
        """Closed form for the sigmoid surrogate: with r the cell means laid out as (y, g), the gap row y gets
        weight ω_y (``separate``: ω = (w_fpr, w_tpr); the max: w split evenly among the tied largest gaps, as
        ``amax``), so ∂(wᵀG)/∂r_{g,y} = ω_y ∂spread_y/∂r_{g,y} (:func:`~solvers.constraints.cells.spread_adjoint`), chained by
        :func:`~.base.rates_vjp`; autograd otherwise."""
        if self.config.surrogate != "sigmoid":
            return super().vjp(scores, data, w)
        cells, temperature = data.by_group_label, self.config.temperature
        probs, rates = sigmoid_rates(scores, cells, temperature)
        by_label, valid = rates.view(-1, 2).T, cells.valid.view(-1, 2).T
        w = w.to(rates.dtype)
        if self.config.aggregate == "separate":
            row_weight = w.flip(0)  # (w_tpr, w_fpr) -> rows (y = 0, y = 1)
        else:
            gaps = spread(by_label, valid)  # (Δ̂_0, Δ̂_1)
            at_max = (gaps == gaps.amax()).to(rates.dtype)
            row_weight = w * at_max / at_max.sum()
        per_cell = (spread_adjoint(by_label, valid) * row_weight.unsqueeze(1)).T.reshape(-1)
        return rates_vjp(probs, cells, per_cell, temperature)

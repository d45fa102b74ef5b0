"""Equal opportunity (PLADA Sec. 2.1, Hardt et al. 2016), generalised to K groups."""
from __future__ import annotations

from torch import Tensor

import torch

from ..groups import spread, spread_adjoint
from .base import CONSTRAINTS, ConstraintFamily, FairnessData, indicator_surrogate, rates_vjp, sigmoid_rates


@CONSTRAINTS.implements("equal_opportunity")
class EqualOpportunity(ConstraintFamily):
    r"""Δ̂_O(θ) = max_g ŝ_{g,1} − min_g ŝ_{g,1},   ŝ_{g,1} = (1/N_{g,1}) Σ_{i: s_i=g, y_i=1} σ(f_θ(x_i)).

    The TPR half of equalized odds (paper eq. 17 with only the y = +1 term): for two
    groups p, u it is |(1/N_pq) Σ_{I_pq} σ(f) − (1/N_uq) Σ_{I_uq} σ(f)|. Groups with no
    positive sample are skipped. One constraint, named ``equal_opportunity``.
    """

    def gap(self, scores: Tensor, data: FairnessData) -> Tensor:
        cells = data.by_group_label  # cell 2g + y
        rates = cells.means(indicator_surrogate(scores, self.config.surrogate, self.config.temperature))
        return spread(rates.view(-1, 2)[:, 1], cells.valid.view(-1, 2)[:, 1]).reshape(1)

    def vjp(self, scores: Tensor, data: FairnessData, w: Tensor) -> Tensor:
        """Closed form for the sigmoid surrogate: ∂(wᵀG)/∂r_{g,1} = w · ∂spread/∂r_{g,1}
        (:func:`~solvers.groups.spread_adjoint`), 0 on the y = 0 cells, chained by :func:`~.base.rates_vjp`;
        autograd otherwise."""
        if self.config.surrogate != "sigmoid":
            return super().vjp(scores, data, w)
        cells, temperature = data.by_group_label, self.config.temperature
        probs, rates = sigmoid_rates(scores, cells, temperature)
        positives = spread_adjoint(rates.view(-1, 2)[:, 1], cells.valid.view(-1, 2)[:, 1]) * w.to(rates.dtype)
        per_cell = torch.stack([torch.zeros_like(positives), positives], 1).reshape(-1)
        return rates_vjp(probs, cells, per_cell, temperature)

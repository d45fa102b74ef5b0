"""Equal opportunity (PLADA Sec. 2.1, Hardt et al. 2016), generalised to K groups (possibly overlapping)."""
from __future__ import annotations

import torch
from torch import Tensor

from .cells import spread_adjoint
from .base import CONSTRAINTS, FairnessData, indicator_surrogate, rates_vjp, sigmoid_rates
from .group_rates import GroupRateFamily


@CONSTRAINTS.implements("equal_opportunity")
class EqualOpportunity(GroupRateFamily):
    r"""Δ̂_O(θ) = max_g ŝ_{g,1} − min_g ŝ_{g,1},   ŝ_{g,1} = (1/N_{g,1}) Σ_{i: s_i=g, y_i=1} σ(f_θ(x_i)),
    or Δ̂_g = |ŝ_{g,1} − ŝ_1| per group with ``reference="overall"``, ŝ_1 the mean of σ(f) over every positive
    sample (:class:`~.group_rates.GroupRateFamily`).

    The TPR half of equalized odds (paper eq. 17 with only the y = +1 term): for two
    groups p, u it is |(1/N_pq) Σ_{I_pq} σ(f) − (1/N_uq) Σ_{I_uq} σ(f)|. Groups with no
    positive sample are skipped. One constraint, named ``equal_opportunity`` (per group: ``equal_opportunity[g]``).
    """

    def gap(self, scores: Tensor, data: FairnessData) -> Tensor:
        cells = data.by_group_label  # cell 2g + y
        soft = indicator_surrogate(scores, self.config.surrogate, self.config.temperature)
        rates = cells.means(soft).view(-1, 2)[:, 1]
        overall = (soft * data.y).sum() / data.y.sum().clamp_min(1.0)
        return self.rows(rates, cells.valid.view(-1, 2)[:, 1], overall)

    def vjp(self, scores: Tensor, data: FairnessData, w: Tensor) -> Tensor:
        """Closed form for the sigmoid surrogate: ∂(wᵀG)/∂r_{g,1} = w · ∂spread/∂r_{g,1}
        (:func:`~solvers.constraints.cells.spread_adjoint`), 0 on the y = 0 cells, chained by :func:`~.base.rates_vjp`;
        autograd otherwise (another surrogate, or ``reference="overall"``)."""
        if self.config.surrogate != "sigmoid" or self.per_group:
            return super().vjp(scores, data, w)
        cells, temperature = data.by_group_label, self.config.temperature
        probs, rates = sigmoid_rates(scores, cells, temperature)
        positives = spread_adjoint(rates.view(-1, 2)[:, 1], cells.valid.view(-1, 2)[:, 1]) * w.to(rates.dtype)
        per_cell = torch.stack([torch.zeros_like(positives), positives], 1).reshape(-1)
        return rates_vjp(probs, cells, per_cell, temperature)

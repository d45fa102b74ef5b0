"""Demographic parity (paper eq. 15), generalised to K groups (possibly overlapping)."""
from __future__ import annotations

from torch import Tensor

from .cells import spread_adjoint
from .base import CONSTRAINTS, FairnessData, indicator_surrogate, rates_vjp, sigmoid_rates
from .group_rates import GroupRateFamily


@CONSTRAINTS.implements("demographic_parity")
class DemographicParity(GroupRateFamily):
    r"""ŝ_g = (1/N_g) Σ_{i∈I_g} σ(f_θ(x_i)), ŝ = (1/N) Σ_i σ(f_θ(x_i)); Δ̂_D(θ) = max_g ŝ_g − min_g ŝ_g, or
    Δ̂_g = |ŝ_g − ŝ| per group with ``reference="overall"`` (:class:`~.group_rates.GroupRateFamily`).

    For two groups (protected p, unprotected u) the spread is exactly eq. (15):
    |(1/N_p) Σ_{I_p} σ(θᵀx_i) − (1/N_u) Σ_{I_u} σ(θᵀx_i)|.
    """

    def gap(self, scores: Tensor, data: FairnessData) -> Tensor:
        cells = data.by_group
        soft = indicator_surrogate(scores, self.config.surrogate, self.config.temperature)
        return self.rows(cells.means(soft), cells.valid, soft.mean())

    def vjp(self, scores: Tensor, data: FairnessData, w: Tensor) -> Tensor:
        """Closed form for the sigmoid surrogate: ∂(wᵀG)/∂r = w · ∂spread/∂r
        (:func:`~solvers.constraints.cells.spread_adjoint`), chained by :func:`~.base.rates_vjp`; autograd otherwise (another
        surrogate, or ``reference="overall"``)."""
        if self.config.surrogate != "sigmoid" or self.per_group:
            return super().vjp(scores, data, w)
        cells, temperature = data.by_group, self.config.temperature
        probs, rates = sigmoid_rates(scores, cells, temperature)
        return rates_vjp(probs, cells, spread_adjoint(rates, cells.valid) * w.to(rates.dtype), temperature)

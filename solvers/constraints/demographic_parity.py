"""Demographic parity (paper eq. 15), generalised to K groups."""
from __future__ import annotations

from torch import Tensor

from ..groups import spread, spread_adjoint
from .base import CONSTRAINTS, ConstraintFamily, FairnessData, indicator_surrogate, rates_vjp, sigmoid_rates


@CONSTRAINTS.implements("demographic_parity")
class DemographicParity(ConstraintFamily):
    r"""Δ̂_D(θ) = max_g ŝ_g − min_g ŝ_g,  ŝ_g = (1/N_g) Σ_{i∈I_g} σ(f_θ(x_i)).

    For two groups (protected p, unprotected u) this is exactly eq. (15):
    |(1/N_p) Σ_{I_p} σ(θᵀx_i) − (1/N_u) Σ_{I_u} σ(θᵀx_i)|.
    """

    def gap(self, scores: Tensor, data: FairnessData) -> Tensor:
        cells = data.by_group
        rates = cells.means(indicator_surrogate(scores, self.config.surrogate, self.config.temperature))
        return spread(rates, cells.valid).reshape(1)

    def vjp(self, scores: Tensor, data: FairnessData, w: Tensor) -> Tensor:
        """Closed form for the sigmoid surrogate: ∂(wᵀG)/∂r = w · ∂spread/∂r
        (:func:`~solvers.groups.spread_adjoint`), chained by :func:`~.base.rates_vjp`; autograd otherwise."""
        if self.config.surrogate != "sigmoid":
            return super().vjp(scores, data, w)
        cells, temperature = data.by_group, self.config.temperature
        probs, rates = sigmoid_rates(scores, cells, temperature)
        return rates_vjp(probs, cells, spread_adjoint(rates, cells.valid) * w.to(rates.dtype), temperature)

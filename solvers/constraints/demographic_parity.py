"""Demographic parity (paper eq. 15), generalised to K groups."""
from __future__ import annotations

from torch import Tensor

from ..groups import spread
from .base import CONSTRAINTS, ConstraintFamily, FairnessData, indicator_surrogate


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

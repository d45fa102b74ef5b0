"""Demographic parity (paper eq. 15), generalised to K groups (possibly overlapping)."""
from __future__ import annotations

from torch import Tensor

from .base import CONSTRAINTS, FairnessData, indicator_surrogate
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

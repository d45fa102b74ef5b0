"""Equalized odds (paper eq. 17), generalised to K groups."""
from __future__ import annotations

from torch import Tensor

from ..groups import spread
from .base import CONSTRAINTS, ConstraintFamily, FairnessData, indicator_surrogate


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

    def gap(self, scores: Tensor, data: FairnessData) -> Tensor:
        cells = data.by_group_label
        rates = cells.means(indicator_surrogate(scores, self.config.surrogate, self.config.temperature))
        # cell 2g + y  ->  row y, column g
        gaps = spread(rates.view(-1, 2).T, cells.valid.view(-1, 2).T)  # (Δ̂_0, Δ̂_1)
        tpr_fpr = gaps.flip(0)
        if self.config.aggregate == "separate":
            return tpr_fpr
        return tpr_fpr.amax().reshape(1)

"""The rate families' two forms (DP, equal opportunity): the spread of the group rates, or each group against the
overall rate (``reference``)."""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from ..metrics.classification import group_fairness, rate_deviation
from .base import ConstraintFamily, undefined_as_nan
from .cells import deviation, spread


class GroupRateFamily(ConstraintFamily):
    r"""With group rates ŝ_g (surrogate σ(f) averaged over the group's rows, or its positives) and the overall ŝ:

    * ``reference="groups"`` (default): one row, Δ̂ = max_g ŝ_g − min_g ŝ_g (paper eq. 15 for K groups);
    * ``reference="overall"``: one row per group g with training rows, Δ̂_g = |ŝ_g − ŝ| (named ``type[g]``),
      the form of PLADA's Communities & Crime constraints (eq. 18: each group against the whole population) with
      the absolute value of eq. 15 (a rate below the population's is as unfair as one above it). On a mini-batch
      ŝ is the batch's rate and a row whose group is absent from the batch is 0 (before − ε).

    Overlapping groups (a membership) need nothing more: the group means are Mᵀσ / N_g (:mod:`solvers.constraints.cells`),
    and ŝ is the mean over the rows, not over the pairs. Needs :meth:`bind` for the per-group rows."""

    def _on_bind(self) -> None:
        self._kept = torch.nonzero(self.group_counts > 0).flatten()

    @property
    def per_group(self) -> bool:
        return self.config.reference == "overall"

    @property
    def names(self) -> list[str]:
        if not self.per_group:
            return [self.name]
        self._require_bound()
        return [f"{self.name}[{self.group_names[g]}]" for g in self._kept.tolist()]

    def exact_value(self, y, logits, group, group_names) -> float:
        """max_g r_g − min_g r_g of the exact group rates (``groups``), or max_g |r_g − r| (``overall``)."""
        pred = (np.asarray(logits) > 0).astype(int)
        if self.per_group:
            return undefined_as_nan(rate_deviation(y, pred, group, list(group_names), self.name)[self.name])
        return undefined_as_nan(group_fairness(y, pred, group, list(group_names))[self.name])

    def rows(self, rates: Tensor, valid: Tensor, overall: Tensor) -> Tensor:
        """The family's rows from the group rates (``valid``: groups present) and the overall rate."""
        if not self.per_group:
            return spread(rates, valid).reshape(1)
        self._require_bound()
        return deviation(rates, valid, overall, self._cached("kept", self._kept, valid))

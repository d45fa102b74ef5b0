r"""The ``auc_parity`` constraint family: |AUC(G1,G1') − AUC(G2,G2')| ≤ κ (paper problem (2)).

Surrogate rows (paper (10), square loss, exact O(n) closed form of :mod:`solvers.constraints.auc_surrogate`):

    G_C1(θ) = f₁(θ) − 1 − κ,   G_C2(θ) = f₂(θ) − 1 − κ,

so ``gap`` = (f₁ − 1, f₂ − 1). γ = +1 is the ``protected`` group (default: the first group);
all other groups are γ = −1. Exact metrics (ties ½, bootstrap CIs) come from
:mod:`solvers.metrics.auc` through :meth:`exact_metrics`.
"""
from __future__ import annotations

from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

from ..metrics.auc import auc_fairness, fairness_gap, protected_index
from .base import CONSTRAINTS, ConstraintFamily, FairnessData, undefined_as_nan
from .auc_surrogate import level_values, term_sets

Variant = Literal["group", "inter", "intra", "aeg_positive", "aeg_negative", "bpsn_bnsp"]


@CONSTRAINTS.implements("auc_parity")
class AUCParity(ConstraintFamily):
    @property
    def names(self) -> list[str]:
        v = self.config.variant
        return [f"{self.name}[{v}:C1]", f"{self.name}[{v}:C2]"]

    def protected_index(self) -> int:
        self._require_bound()
        return protected_index(self.group_names, self.config.protected)

    def _on_bind(self) -> None:
        protected_index(self.group_names, self.config.protected)  # validate the name early

    def sets(self, y: Tensor, group: Tensor) -> tuple[Tensor, Tensor]:
        """Membership (n, 5) of P_k, Q_k (:func:`solvers.constraints.auc_surrogate.term_sets`)."""
        return term_sets(y, group == self.protected_index(), self.config.variant)

    def gap(self, scores: Tensor, data: FairnessData) -> Tensor:
        in_p, in_q = self.sets(data.y, data.group)
        f = level_values(scores, in_p, in_q, self.config.c1, self.config.c2)
        return f[1:] - 1.0

    def exact_value(self, y, logits, group, group_names) -> float:
        """|AUC(G1, G1') − AUC(G2, G2')| of the variant, exact (ties ½), without the bootstrap."""
        protected = np.asarray(group) == protected_index(list(group_names), self.config.protected)
        return undefined_as_nan(fairness_gap(np.asarray(y, dtype=float), np.asarray(logits, dtype=float), protected,
                                             self.config.variant))

    def exact_metrics(self, y: np.ndarray, logits: np.ndarray, group: np.ndarray,
                      group_names: list[str]) -> dict[str, Any]:
        detail = auc_fairness(y, logits, group, group_names, self.config.variant, self.config.protected,
                              n_boot=self.config.n_boot)
        return {
            self.name: detail["value"],
            f"{self.name}_by_group": detail["by_group"],
            f"{self.name}_detail": detail,
        }


@torch.no_grad()
def exact_gap(family: AUCParity, y: Tensor, scores: Tensor, group: Tensor) -> tuple[float | None, float | None]:
    """(exact AUĈ(D+,D−), exact fairness gap) on tensors — used by model selection."""
    from ..metrics.auc import auc, fairness_gap

    yn, sn, gn = y.cpu().numpy(), scores.double().cpu().numpy(), group.cpu().numpy()
    return auc(yn, sn), fairness_gap(yn, sn, gn == family.protected_index(), family.config.variant)

"""Loss-gap constraints: a group's mean loss may not exceed the overall (or another
group's) mean loss by more than δ (stochastic benchmark eq. 4; PLADA eq. 18)."""
from __future__ import annotations

from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from ..objectives import per_sample_loss
from .base import CONSTRAINTS, ConstraintFamily, FairnessData

LossName = Literal["bce", "logistic", "hinge", "truncated_logistic"]


class LossGapConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["one_sided", "two_sided"] = Field(
        "one_sided",
        description="'one_sided': one constraint per group g, L_g − L ≤ δ (L = overall mean loss; PLADA eq. 18 "
        "form). 'two_sided': for every pair of groups (a, b) both L_a − L_b ≤ δ and L_b − L_a ≤ δ "
        "(the stochastic benchmark's |L_a − L_b| ≤ δ split in two); K groups give K(K−1) constraints.",
    )
    loss: LossName = Field(
        "bce",
        description="Per-sample loss ℓ(f, y) (same definitions as the objectives): 'bce' / 'logistic' "
        "(identical; the benchmark's BCE), 'hinge' ([1 − ỹf]^+, PLADA eq. 18), 'truncated_logistic'.",
    )
    min_group_fraction: float = Field(
        0.0, ge=0.0, lt=1.0,
        description="Only groups holding MORE than this fraction of the training samples get constraints "
        "(0: every group present in the training data).",
    )


@CONSTRAINTS.register(
    "loss_gap",
    aliases=("group_loss_gap",),
    description="Loss gap: each group's mean loss exceeds the overall mean loss (one_sided) or any other "
    "group's mean loss (two_sided) by at most `tolerance` (stochastic benchmark eq. 4, PLADA eq. 18).",
)
class LossGap(ConstraintFamily):
    r"""Group mean losses L_g(θ) = (1/N_g) Σ_{i∈I_g} ℓ(f_θ(x_i), y_i), overall L(θ) = (1/N) Σ_i ℓ(f_θ(x_i), y_i).

    * ``one_sided`` (default): G_g(θ) = L_g(θ) − L(θ) − δ ≤ 0 for every kept group g
      (PLADA eq. 18 with one constraint per group, no absolute value); rows named
      ``loss_gap[g]``.
    * ``two_sided``: for every pair a < b (in group order), G_{a-b} = L_a − L_b − δ and
      G_{b-a} = L_b − L_a − δ (stochastic benchmark eq. 4:
      −δ ≤ L_s − L_s̄ ≤ δ as c1, c2); rows named ``loss_gap[a-b]``, ``loss_gap[b-a]``.

    ℓ is the ``loss`` field's per-sample objective (:mod:`solvers.objectives`), with ỹ = 2y − 1.
    Kept groups: N_g > ``min_group_fraction`` · N on the training data given to :meth:`bind`
    (fixed once, so every mini-batch yields the same rows). L is computed as
    Σ_g w_g L_g / Σ_g w_g over the groups present in ``data`` with w_g = N_g/N the training
    shares — on the full training set this is exactly the overall mean, and on a
    group-balanced mini-batch it stays an estimate of the population mean. A row whose
    group(s) are absent from ``data`` is 0 (before − δ). Vectorised: one ``index_add`` for all
    L_g, then gathers — no loop over groups or samples. Needs :meth:`bind`.
    """

    Config = LossGapConfig  # type: ignore[assignment]

    def _on_bind(self) -> None:
        counts = self.group_counts
        total = counts.sum().clamp_min(1.0)
        kept = torch.nonzero(counts > self.config.min_group_fraction * total).flatten()
        self._weights = counts / total
        names = self.group_names
        if self.config.mode == "one_sided":
            self._rows = (kept,)
            self._names = [f"{self.name}[{names[g]}]" for g in kept.tolist()]
        else:
            i, j = torch.triu_indices(kept.numel(), kept.numel(), 1)
            a = torch.stack([kept[i], kept[j]], 1).reshape(-1)   # (a,b), (b,a), ...
            b = torch.stack([kept[j], kept[i]], 1).reshape(-1)
            self._rows = (a, b)
            self._names = [f"{self.name}[{names[p]}-{names[q]}]" for p, q in zip(a.tolist(), b.tolist())]

    @property
    def names(self) -> list[str]:
        self._require_bound()
        return list(self._names)

    def group_losses(self, scores: Tensor, data: FairnessData) -> tuple[Tensor, Tensor, Tensor]:
        """(L_g for every group, valid mask, weighted overall L)."""
        self._require_bound()
        cells = data.by_group
        if cells.n_cells != len(self.group_names):
            raise ValueError(f"{self.name}: bound to {len(self.group_names)} groups, data has {cells.n_cells}")
        losses = per_sample_loss(self.config.loss)(scores, data.y)
        group_loss = cells.means(losses)
        w = self._cached("weights", self._weights, scores) * cells.valid
        overall = (w * group_loss).sum() / w.sum().clamp_min(torch.finfo(scores.dtype).tiny)
        return group_loss, cells.valid, overall

    def gap(self, scores: Tensor, data: FairnessData) -> Tensor:
        group_loss, valid, overall = self.group_losses(scores, data)
        if self.config.mode == "one_sided":
            rows = self._cached("rows", self._rows[0], group_loss)
            diff, ok = group_loss[rows] - overall, valid[rows]
        else:
            a = self._cached("a", self._rows[0], group_loss)
            b = self._cached("b", self._rows[1], group_loss)
            diff, ok = group_loss[a] - group_loss[b], valid[a] & valid[b]
        return torch.where(ok, diff, torch.zeros_like(diff))

"""Intersectional fairness (PLADA eq. 18): one hinge-loss-gap constraint per sizeable group."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import CONSTRAINTS
from .loss_gap import LossGap, LossGapConfig, LossName


class IntersectionalConfig(LossGapConfig):
    mode: Literal["one_sided"] = Field("one_sided", description="Always one-sided (eq. 18 has no absolute value).")
    loss: LossName = Field("hinge", description="Per-sample loss; eq. 18 uses the hinge [1 − ỹf]^+.")
    min_group_fraction: float = Field(
        0.01, ge=0.0, lt=1.0,
        description="Only groups holding MORE than this fraction of the training data get a constraint "
        "(PLADA's Communities & Crime setup: > 1%).",
    )


@CONSTRAINTS.register(
    "intersectional",
    aliases=("intersectional_loss_gap",),
    description="Intersectional fairness (PLADA eq. 18): for every group (intersection of the sensitive "
    "columns' groups) holding more than `min_group_fraction` of the training data, its mean hinge loss "
    "exceeds the overall mean hinge loss by at most `tolerance`.",
)
class Intersectional(LossGap):
    r"""PLADA eq. (18), one constraint per group G with N_G > ``min_group_fraction`` · N:

        G_G(θ) = (1/N_G) Σ_{i∈I_G} [1 − y_i f_θ(x_i)]^+ − (1/N) Σ_{i=1}^N [1 − y_i f_θ(x_i)]^+ − ε ≤ 0,

    y_i ∈ {±1}. The paper writes E_G[·] over a uniformly sampled group; we use one row per
    group with its own multiplier (its 535 constraints). Groups are the intersections the
    sensitive columns and ``group_rules`` produce (e.g. 10 thresholds on each of 3 columns).
    The same computation as ``loss_gap`` (one_sided) with a size filter and the hinge default;
    rows named ``intersectional[g]``.
    """

    Config = IntersectionalConfig  # type: ignore[assignment]

"""Intersectional fairness (PLADA eq. 18): one hinge-loss-gap constraint per sizeable group."""
from __future__ import annotations


from .base import CONSTRAINTS
from .loss_gap import LossGap


@CONSTRAINTS.implements("intersectional")
class Intersectional(LossGap):
    r"""PLADA eq. (18), one constraint per group G with N_G > ``min_group_fraction`` · N:

        G_G(θ) = (1/N_G) Σ_{i∈I_G} [1 − y_i f_θ(x_i)]^+ − (1/N) Σ_{i=1}^N [1 − y_i f_θ(x_i)]^+ − ε ≤ 0,

    y_i ∈ {±1}. The paper writes E_G[·] over a uniformly sampled group; we use one row per
    group with its own multiplier (its 535 constraints). Groups are the intersections the
    sensitive columns and ``group_rules`` produce (e.g. 10 thresholds on each of 3 columns).
    The same computation as ``loss_gap`` (one_sided) with a size filter and the hinge default;
    rows named ``intersectional[g]``.
    """


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
    sensitive columns and ``group_rules`` produce, or groups that overlap (a Problem's ``membership``, e.g.
    PLADA's C&C groups: every combination of one threshold on each of 3 columns, a row in each it passes).
    The same computation as ``loss_gap`` (one_sided) with a size filter and the hinge default;
    rows named ``intersectional[g]``.

    ``expectation_over_rows``: eq. (18) is an expectation over a uniformly drawn group, so a Lagrangian weighs
    each of the m rows 1/m (PLADA's θ-step: E_G[λ_G ∂G_G] = (1/m) Σ_g λ_g ∂G_g); feasibility is per row.
    """

    expectation_over_rows = True


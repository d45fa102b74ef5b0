r"""Exact AUC and AUC-based fairness metrics (Yao, Lin & Yang, AISTATS 2023, Def. 1–2, App. A).

Notation of the paper: a sample is z = (ξ, ζ, γ), label ζ ∈ {+1, −1}, sensitive attribute
γ ∈ {+1 (protected), −1}; the score is h(ξ). For two subsets G, G' (Def. 1)

    AUC(G, G') = Pr( h(ξ) > h(ξ') | z ∈ G, z' ∈ G' ),

and an AUC-based fairness metric (Def. 2) is |AUC(G1, G1') − AUC(G2, G2')| ∈ [0, 1].

Empirical estimator (the U-statistic over ordered pairs of *distinct* samples)::

    AUĈ(G, G') = Σ_{i∈S_G} Σ_{j∈S_G', j≠i} ( 1[h_i > h_j] + ½·1[h_i = h_j] ) / (|S_G||S_G'| − |S_G ∩ S_G'|)

* ties count ½ (the usual Mann–Whitney convention; Def. 1's strict ">" would count 0);
* self-pairs i = j are excluded — they only exist when G and G' overlap (Ex. 4, Ex. 5) and
  would otherwise add a spurious ½ each;
* G2 = G2' = "everything" gives exactly ½ (as in the paper), so Ex. 1 and Ex. 4 are |AUĈ − ½|.

Cost O(n log n): one sort of the S_G' scores and two ``searchsorted`` passes
(#{j: h_j < h_i} and #{j: h_j ≤ h_i}) — no pairwise matrix, no Python loop over samples.

Variants (Appendix A), with P = {ζ=+1}, N = {ζ=−1}, A = {γ=+1}, B = {γ=−1}:

=================  ====================================  ===============================
variant            AUC(G1, G1')                          AUC(G2, G2')
=================  ====================================  ===============================
``group`` (Ex. 1)  AUC(A, B)                             ½
``inter`` (Ex. 2)  AUC(P∩A, N∩B)   (xAUC)                AUC(P∩B, N∩A)
``intra`` (Ex. 3)  AUC(P∩A, N∩A)                         AUC(P∩B, N∩B)
``aeg_positive``   AUC(P∩A, P)         (Ex. 4)           ½
``aeg_negative``   AUC(N∩A, N)         (Ex. 4)           ½
``bpsn_bnsp``      AUC(P, N∩A) = BPSN  (Ex. 5)           AUC(P∩A, N) = BNSP
=================  ====================================  ===============================

More than two groups: ``by_group[g]`` takes γ = +1 for group g and −1 for every other group
(one vs rest); ``max_pair`` is the maximum over ordered pairs (a, b), a ≠ b, of the metric
computed on the rows of a ∪ b with γ = +1 on a. Bootstrap 95% confidence intervals resample
the rows of the split (percentile method, seeded).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .bootstrap import bootstrap_ci

VARIANTS = ("group", "inter", "intra", "aeg_positive", "aeg_negative", "bpsn_bnsp")

#: (G1, G1', G2, G2') as (label, protected) predicates; label/protected None = any. ``None`` pair = the constant ½.
#: label: +1 / −1; protected: True (γ=+1) / False (γ=−1).
GROUP_SETS: dict[str, tuple[tuple[int | None, bool | None], ...] | Any] = {
    "group": ((None, True), (None, False), None, None),
    "inter": ((1, True), (-1, False), (1, False), (-1, True)),
    "intra": ((1, True), (-1, True), (1, False), (-1, False)),
    "aeg_positive": ((1, True), (1, None), None, None),
    "aeg_negative": ((-1, True), (-1, None), None, None),
    "bpsn_bnsp": ((1, None), (-1, True), (1, True), (-1, None)),
}


def set_mask(y: np.ndarray, protected: np.ndarray, spec: tuple[int | None, bool | None] | None) -> np.ndarray:
    """Row mask of the set {ζ = label, γ = ±1}; ``y`` in {0, 1}, ``protected`` boolean."""
    label, prot = spec
    mask = np.ones(len(y), dtype=bool)
    if label is not None:
        mask &= (np.asarray(y) > 0.5) == (label > 0)
    if prot is not None:
        mask &= protected == prot
    return mask


def auc_between(scores: np.ndarray, in_g: np.ndarray, in_gp: np.ndarray) -> float | None:
    """AUĈ(G, G') with ties ½ and self-pairs excluded; None when no pair exists. O(n log n)."""
    scores = np.asarray(scores, dtype=np.float64)
    a, b = scores[in_g], np.sort(scores[in_gp])
    both = int(np.count_nonzero(in_g & in_gp))
    pairs = a.size * b.size - both
    if pairs <= 0:
        return None
    less = np.searchsorted(b, a, side="left")
    less_eq = np.searchsorted(b, a, side="right")
    wins = less.sum() + 0.5 * (less_eq - less).sum() - 0.5 * both  # a self-pair is a tie: remove its ½
    return float(wins / pairs)


def auc(y: np.ndarray, scores: np.ndarray) -> float | None:
    """AUĈ(D+, D−), the standard ROC AUC (ties ½)."""
    pos = np.asarray(y) > 0.5
    return auc_between(scores, pos, ~pos)


def components(y: np.ndarray, scores: np.ndarray, protected: np.ndarray, variant: str
               ) -> tuple[float | None, float | None, float | None]:
    """(AUĈ(G1,G1'), AUĈ(G2,G2'), |difference|) for one variant; None where a set is empty."""
    if variant not in GROUP_SETS:
        raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    g1, g1p, g2, g2p = GROUP_SETS[variant]
    protected = np.asarray(protected, dtype=bool)
    first = auc_between(scores, set_mask(y, protected, g1), set_mask(y, protected, g1p))
    second = 0.5 if g2 is None else auc_between(scores, set_mask(y, protected, g2), set_mask(y, protected, g2p))
    gap = None if first is None or second is None else abs(first - second)
    return first, second, gap


def fairness_gap(y: np.ndarray, scores: np.ndarray, protected: np.ndarray, variant: str) -> float | None:
    """|AUĈ(G1,G1') − AUĈ(G2,G2')| (Def. 2) for γ = +1 on ``protected``."""
    return components(y, scores, protected, variant)[2]


def _per_group_and_pairs(y, scores, group, n_groups, variant) -> tuple[list[float | None], float | None]:
    per_group = [fairness_gap(y, scores, group == g, variant) if np.any(group == g) else None
                 for g in range(n_groups)]
    present = [g for g in range(n_groups) if np.any(group == g)]
    pair_values = []
    for a in present:  # loop over group pairs (K² ≤ a few dozen), each pass vectorised over rows
        for b in present:
            if a != b:
                rows = (group == a) | (group == b)
                value = fairness_gap(y[rows], scores[rows], group[rows] == a, variant)
                if value is not None:
                    pair_values.append(value)
    return per_group, (max(pair_values) if pair_values else None)


def auc_fairness(y: np.ndarray, scores: np.ndarray, group: np.ndarray, group_names: list[str], variant: str,
                 protected: str | int | None = None, n_boot: int = 200, seed: int = 0) -> dict[str, Any]:
    """Exact AUC fairness of one variant on one split.

    ``protected``: the group taking γ = +1 (name or index; default the first group); every other
    group is γ = −1. Returns ``value`` (protected vs rest), ``auc_g1``/``auc_g2`` (the two AUCs of
    Def. 2), ``by_group`` (one vs rest, per group), ``max_pair`` (max over ordered group pairs),
    ``value_ci`` / ``auc_ci`` (bootstrap 95%), and ``auc`` (AUĈ(D+, D−)).
    """
    y = np.asarray(y).astype(np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    group = np.asarray(group).astype(np.int64)
    k = protected_index(group_names, protected)
    prot = group == k
    first, second, value = components(y, scores, prot, variant)
    per_group, max_pair = _per_group_and_pairs(y, scores, group, len(group_names), variant)
    return {
        "variant": variant,
        "protected": str(group_names[k]),
        "value": value,
        "auc_g1": first,
        "auc_g2": second,
        "value_ci": bootstrap_ci(lambda r: fairness_gap(y[r], scores[r], prot[r], variant), len(y), n_boot, seed),
        "by_group": {str(group_names[g]): v for g, v in enumerate(per_group)},
        "max_pair": max_pair,
        "auc": auc(y, scores),
        "auc_ci": bootstrap_ci(lambda r: auc(y[r], scores[r]), len(y), n_boot, seed),
    }


def protected_index(group_names: list[str], protected: str | int | None) -> int:
    """Index of the γ = +1 group: by name, by index, or 0 (the first group) when None."""
    if protected is None:
        return 0
    if isinstance(protected, int):
        return protected
    names = [str(n) for n in group_names]
    if str(protected) not in names:
        raise ValueError(f"protected group {protected!r} not among {names}")
    return names.index(str(protected))


def all_variants(y, scores, group, group_names, protected=None, n_boot: int = 0, seed: int = 0) -> dict[str, Any]:
    """:func:`auc_fairness` for every variant (bootstrap off by default)."""
    return {v: auc_fairness(y, scores, group, group_names, v, protected, n_boot, seed) for v in VARIANTS}

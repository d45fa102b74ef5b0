r"""Exact (indicator-based) partial-fairness metrics of He, Huang, Yao & Lin (§4, App. A).

Notation: scores h_i = h_w(ξ_i), groups γ_i ∈ {0..G−1}, interval I_k per group (see
:mod:`solvers.metrics.percentile_intervals`; one interval [α, β) in the paper).

**Empirical estimator** (the paper leaves it open; we use its App. A convention everywhere).
In each group k sort the scores decreasingly (ties in a fixed, stable order), and *keep* the
sample at 1-based position r iff ⌈α n_k⌉ < r ≤ ⌈β n_k⌉ (for some piece [α, β) of I_k). With
K_k the kept scores of group k and F̄^K_k(θ) = |{h ∈ K_k : h > θ}| / |K_k| their CCDF:

* pSP (Def. 4.2):  SP^I_{k,k'} = max_θ |F̄^K_k(θ) − F̄^K_{k'}(θ)| — the two-sample KS statistic
  of K_k and K_{k'}; the sup is attained at an observed score, so θ ranges over ∪_k K_k.
* pDP (Def. 4.3):  DP^I_{k,k'} = |F̄^K_k(θ̂) − F̄^K_{k'}(θ̂)|.
* full SP / DP: the same with I = [0, 1] (KS distance of the score distributions; DP).
* partial group AUC (Def. A.1 and its empirical form in App. A):
  GAUC^I_{k,k'} = |(1/(|K_k||K_{k'}|)) Σ_{i∈K_k} Σ_{j∈K_{k'}} 1[h_i ≥ h_j] − 0.5|.
* partial equal opportunity EOP^I (Def. A.2) and equalized odds EOD^I (Def. A.3): pDP computed
  in the cells D_{k,+} (and D_{k,−}), percentiles taken *within each cell*, as in the paper's
  empirical problem (50) where the averages run over D_{k,+}; EOD^I = max over both labels.

Every "max over pairs" is taken over the groups with a non-empty kept set. All functions are
vectorised over samples and groups (one sort, cumulative counts, ``searchsorted``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .percentile_intervals import Intervals


def within_group_positions(scores: np.ndarray, cells: np.ndarray, n_cells: int) -> tuple[np.ndarray, np.ndarray]:
    """1-based descending position of every sample inside its cell, and the cell sizes n_c."""
    order = np.lexsort((-scores, cells))            # by cell, then score decreasing (stable)
    counts = np.bincount(cells, minlength=n_cells)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pos = np.empty(len(scores), dtype=np.int64)
    pos[order] = np.arange(len(scores)) - starts[cells[order]] + 1
    return pos, counts


def kept_mask(scores: np.ndarray, group: np.ndarray, intervals: Intervals,
              cells: np.ndarray | None = None, n_cells: int | None = None) -> np.ndarray:
    """Samples whose within-group (or within-cell) rank lies in their group's interval."""
    scores = np.asarray(scores, dtype=np.float64)
    group = np.asarray(group, dtype=np.int64)
    if cells is None:
        cells, n_cells = group, intervals.n_groups
    pos, counts = within_group_positions(scores, cells, n_cells)
    return intervals.keep(pos, counts[cells].astype(np.float64), group)


def _ccdf_at_sorted(scores: np.ndarray, group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Thresholds t (the sorted scores) and C[k, t] = |{i: γ_i=k, h_i > t}| / n_k, shape (G, T)."""
    order = np.argsort(scores, kind="stable")
    s, g = scores[order], group[order]
    onehot = np.zeros((len(s), n_groups))
    onehot[np.arange(len(s)), g] = 1.0
    le = np.cumsum(onehot, 0)                              # counts of scores <= s[j] (up to ties)
    last = np.searchsorted(s, s, side="right") - 1         # last index with score <= t
    n = onehot.sum(0)
    C = (n[None, :] - le[last]) / np.maximum(n, 1)[None, :]
    return s, C.T


def _pair_max(M: np.ndarray, valid: np.ndarray) -> float:
    """max over valid k ≠ k' of M[k, k']."""
    mask = valid[:, None] & valid[None, :]
    np.fill_diagonal(mask, False)
    return float(M[mask].max()) if mask.any() else 0.0


def _as_intervals(interval: Any, n_groups: int, group_names: Sequence[str] | None) -> Intervals:
    if isinstance(interval, Intervals):
        return interval
    names = list(group_names) if group_names is not None else [str(k) for k in range(n_groups)]
    return Intervals.build(list(interval) if isinstance(interval, tuple) else interval, names)


def _inputs(scores, group, interval: Any, n_groups: int | None,
            group_names: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray, int, Intervals]:
    """Scores and groups as arrays, the number of groups G and the parsed interval(s)."""
    scores, group = np.asarray(scores, np.float64), np.asarray(group, np.int64)
    G = int(n_groups or (len(group_names) if group_names is not None else group.max() + 1))
    return scores, group, G, _as_intervals(interval, G, group_names)


def partial_sp(scores, group, interval: Any = (0.0, 1.0), n_groups: int | None = None,
               group_names: Sequence[str] | None = None) -> dict[str, Any]:
    """max_{k,k'} SP^I_{k,k'} (``value``) and the pair matrix (``pairs``)."""
    scores, group, G, iv = _inputs(scores, group, interval, n_groups, group_names)
    keep = kept_mask(scores, group, iv)
    s, g = scores[keep], group[keep]
    valid = np.bincount(g, minlength=G) > 0
    if len(s) == 0:
        return {"value": 0.0, "pairs": np.zeros((G, G))}
    _, C = _ccdf_at_sorted(s, g, G)
    D = (C[:, None, :] - C[None, :, :]).max(-1) if G <= 16 else _pairs_loop(C)
    D = np.maximum(D, 0.0)
    D = np.maximum(D, D.T)
    return {"value": _pair_max(D, valid), "pairs": D}


def _pairs_loop(C: np.ndarray) -> np.ndarray:
    G = C.shape[0]
    D = np.zeros((G, G))
    for k in range(G):  # many groups: avoid the (G, G, T) tensor
        D[k] = (C[k][None, :] - C).max(-1)
    return D


def _rates_above(scores, group, keep, threshold, n_cells) -> tuple[np.ndarray, np.ndarray]:
    n = np.bincount(group[keep], minlength=n_cells).astype(np.float64)
    above = np.bincount(group[keep], weights=(scores[keep] > threshold).astype(np.float64), minlength=n_cells)
    return above / np.maximum(n, 1.0), n > 0


def partial_dp(scores, group, interval: Any = (0.0, 1.0), threshold: float = 0.0, n_groups: int | None = None,
               group_names: Sequence[str] | None = None) -> dict[str, Any]:
    """max_{k,k'} DP^I_{k,k'} at θ̂ = ``threshold`` (``value``), per-group rates (``rates``)."""
    scores, group, G, iv = _inputs(scores, group, interval, n_groups, group_names)
    keep = kept_mask(scores, group, iv)
    rates, valid = _rates_above(scores, group, keep, threshold, G)
    value = float(rates[valid].max() - rates[valid].min()) if valid.sum() >= 2 else 0.0
    return {"value": value, "rates": rates}


def ks_distance(scores, group, n_groups: int | None = None) -> float:
    """Full SP (eq. 2): max_{k,k'} max_θ |Pr(h>θ|k) − Pr(h>θ|k')| (I = [0, 1])."""
    return partial_sp(scores, group, [0.0, 1.0], n_groups)["value"]


def partial_group_auc(scores, group, interval: Any = (0.0, 1.0), n_groups: int | None = None,
                      group_names: Sequence[str] | None = None) -> dict[str, Any]:
    """max over ordered pairs of GAUC^I_{k,k'} = |Pr(h_i ≥ h_j | i ∈ K_k, j ∈ K_{k'}) − 0.5|."""
    scores, group, G, iv = _inputs(scores, group, interval, n_groups, group_names)
    keep = kept_mask(scores, group, iv)
    s, g = scores[keep], group[keep]
    n = np.bincount(g, minlength=G).astype(np.float64)
    if len(s) == 0:
        return {"value": 0.0, "pairs": np.zeros((G, G))}
    order = np.argsort(s, kind="stable")
    ss, gs = s[order], g[order]
    onehot = np.zeros((len(ss), G))
    onehot[np.arange(len(ss)), gs] = 1.0
    le = np.cumsum(onehot, 0)
    idx = np.searchsorted(ss, s, side="right") - 1        # last index with score <= h_i
    below = le[idx]                                        # (n_kept, G): #{j ∈ K_k' : h_j <= h_i}
    sums = np.zeros((G, G))
    np.add.at(sums, g, below)
    P = sums / np.maximum(np.outer(n, n), 1.0)
    A = np.abs(P - 0.5)
    return {"value": _pair_max(A, n > 0), "pairs": A}


def _cell_dp(scores, group, y, label, iv: Intervals, threshold, G) -> tuple[float, np.ndarray]:
    cells = 2 * group + y
    keep = kept_mask(scores, group, iv, cells=cells, n_cells=2 * G)
    rates, valid = _rates_above(scores, cells, keep, threshold, 2 * G)
    r, v = rates[label::2], valid[label::2]
    return (float(r[v].max() - r[v].min()) if v.sum() >= 2 else 0.0), r


def partial_equal_opportunity(scores, group, y, interval: Any = (0.0, 1.0), threshold: float = 0.0,
                              n_groups: int | None = None, group_names: Sequence[str] | None = None) -> float:
    """max_{k,k'} EOP^I_{k,k'} (Def. A.2): pDP among the positives (y = 1), ranks within (k, y=1)."""
    scores, group, G, iv = _inputs(scores, group, interval, n_groups, group_names)
    y = np.asarray(y, np.int64)
    return _cell_dp(scores, group, y, 1, iv, threshold, G)[0]


def partial_equalized_odds(scores, group, y, interval: Any = (0.0, 1.0), threshold: float = 0.0,
                           n_groups: int | None = None, group_names: Sequence[str] | None = None) -> float:
    """max_{k,k'} EOD^I_{k,k'} (Def. A.3): max over y ∈ {0, 1} of the per-label pDP."""
    scores, group, G, iv = _inputs(scores, group, interval, n_groups, group_names)
    y = np.asarray(y, np.int64)
    return max(_cell_dp(scores, group, y, c, iv, threshold, G)[0] for c in (0, 1))


def partial_report(y, scores, group, group_names: Sequence[str], interval: Any,
                   threshold: float = 0.0) -> dict[str, Any]:
    """Every partial metric of one split (values, plus fairness = 1 − metric as the paper plots)."""
    G = len(group_names)
    iv = _as_intervals(interval, G, group_names)
    sp = partial_sp(scores, group, iv, G)
    dp = partial_dp(scores, group, iv, threshold, G)
    return {
        "psp": sp["value"], "pdp": dp["value"],
        "psp_fairness": 1.0 - sp["value"], "pdp_fairness": 1.0 - dp["value"],
        "pdp_rate_by_group": {str(n): float(r) for n, r in zip(group_names, dp["rates"])},
        "ks": ks_distance(scores, group, G),
        "full_dp": partial_dp(scores, group, [0.0, 1.0], threshold, G)["value"],
        "partial_group_auc": partial_group_auc(scores, group, iv, G)["value"],
        "partial_equal_opportunity": partial_equal_opportunity(scores, group, y, iv, threshold, G),
        "partial_equalized_odds": partial_equalized_odds(scores, group, y, iv, threshold, G),
        "interval": iv.describe(group_names),
        "threshold": float(threshold),
    }

r"""Per-group score offsets that put every group's exact TRUE- and FALSE-positive rates in one band each — the
threshold step of exact enforcement (:mod:`.enforce`, step 2) for equalized odds, where one offset per group
has to move two rates at once.

**Positions.** Sort group g's rows by score, decreasing: v_{g,1} ≥ … ≥ v_{g,n_g}. The rule ŷ = 1{f + b_g > 0}
with −b_g between v_{g,k+1} and v_{g,k} predicts the top k rows positive (position k ∈ {0, …, n_g}); only
positions between two different scores (and 0, n_g) are reachable by a threshold — a block of tied scores is
all in or all out. With TP_g(k) / FP_g(k) the positives / negatives among the top k, TPR_g(k) = TP_g(k)/P_g and
FPR_g(k) = FP_g(k)/N_g are non-decreasing in k.

**Bands.** For band lower ends (c, d) on a grid of ``grid`` values each in [0, 1], group g may take the positions
k with TP_g(k) ∈ [⌈c P_g⌉, ⌊(c + w) P_g⌋] and FP_g(k) ∈ [⌈d N_g⌉, ⌊(d + w) N_g⌋]: two intervals of k (the counts
are monotone), found by one ``searchsorted`` each on keys g·B + count (B larger than any count, so that one
sorted array serves every group); their intersection is group g's allowed interval (a rate with P_g = 0 or
N_g = 0 is undefined on the split and constrains nothing, as in :mod:`.exact`). Within it the reachable position
nearest to the group's current one is taken (the fewest changed predictions); a band pair is feasible when every
group has one. Among feasible pairs the one with the most correct predictions on all rows,
Σ_g TP_g(k_g) + N_g − FP_g(k_g), wins. Every (c, d, g) is evaluated at once: (grid², K) arrays, the grid lowered
for many groups so that they stay below ``MAX_CELLS`` entries. Both rate gaps are then ≤ w on these rows, so
the exact equalized-odds value max(TPR gap, FPR gap) is ≤ w. The grid may miss a feasible pair when w is below
about two grid steps or 1/P_g: then no offsets are returned.
"""
from __future__ import annotations

import numpy as np

GRID = 201          # band lower ends per rate
MAX_CELLS = 8_000_000  # grid² × groups entries at most


def _allowed(key: np.ndarray, count_den: np.ndarray, width: float, c: np.ndarray, base: np.ndarray,
             big: int, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, last) position k per (band, group) with count in [⌈c D⌉, ⌊(c + w) D⌋]; all k where D = 0."""
    k_groups = len(n)
    den = count_den[None, :].astype(float)
    lo = np.ceil(c * den - 1e-9)
    hi = np.minimum(np.floor((c + width) * den + 1e-9), den)
    hi = np.where((hi - lo) / np.maximum(den, 1) > width, hi - 1, hi)  # float edge: stay inside the band
    offset = (np.arange(k_groups) * big)[None, :]
    first = np.searchsorted(key, offset + lo, side="left") - base[None, :]
    last = np.searchsorted(key, offset + hi, side="right") - 1 - base[None, :]
    undefined = count_den[None, :] == 0
    return np.where(undefined, 0, first), np.where(undefined, n[None, :], last)


def positions(s: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The positions of scores ``s`` sorted by group, then decreasing (group g's n_g scores from Σ_{h<g} n_h):
    (base, owner, k, prev_ok, next_ok) — group g's positions k = 0..n_g at extended indices base_g + k
    (``owner`` / ``k`` of every extended index), and for each extended index the nearest reachable one at or
    before it / at or after it (module docstring: between two different scores, or 0, n_g)."""
    k_groups = len(n)
    start = np.concatenate([[0], np.cumsum(n)[:-1]]).astype(np.int64)
    base = start + np.arange(k_groups)                 # where group g's positions k = 0..n_g begin
    owner = np.repeat(np.arange(k_groups), n + 1)      # group of each extended position
    k = np.arange(len(owner)) - base[owner]
    at = start[owner] + k                              # the row just below the threshold at position k
    inner = (k > 0) & (k < n[owner])
    last = max(len(s) - 1, 0)
    reachable = ~inner | (s[np.clip(at - 1, 0, last)] != s[np.clip(at, 0, last)])
    idx = np.arange(len(owner))
    prev_ok = np.maximum.accumulate(np.where(reachable, idx, -1))            # nearest reachable at or before
    next_ok = np.minimum.accumulate(np.where(reachable, idx, len(idx))[::-1])[::-1]  # at or after
    return base, owner, k, prev_ok, next_ok


def nearest_reachable(prev_ok: np.ndarray, next_ok: np.ndarray, base: np.ndarray, n: np.ndarray, lo: np.ndarray,
                      hi: np.ndarray, k_now: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per (band, group): the extended index of the reachable position in [lo, hi] nearest to the group's current
    one k_now (the fewest changed predictions; the one below first), and whether there is one."""
    want = np.clip(base + np.clip(k_now, lo, hi), base, base + n)
    down, up = prev_ok[want], next_ok[np.minimum(want, len(next_ok) - 1)]
    chosen = np.where(down >= base + lo, down, up)
    ok = (chosen >= base + lo) & (chosen <= base + hi) & (lo <= hi)
    return np.clip(chosen, 0, len(next_ok) - 1), ok


def threshold_at(s: np.ndarray, start: np.ndarray, n: np.ndarray, kk: np.ndarray) -> np.ndarray:
    """The threshold t_g that predicts the top kk_g scores of group g positive (1{f > t_g}; ``s`` as in
    :func:`positions`, kk of any shape ending with the groups' axis): halfway between the kk-th and (kk+1)-th
    largest, above the largest for kk = 0, below the smallest for kk = n_g."""
    last = max(len(s) - 1, 0)
    top, below = s[np.clip(start + kk - 1, 0, last)], s[np.clip(start + kk, 0, last)]
    lowest = s[np.clip(start + n - 1, 0, last)]
    return np.where(kk <= 0, s[np.clip(start, 0, last)], np.where(kk >= n, lowest - 1.0, 0.5 * (top + below)))


def equalized_odds_offsets(logits: np.ndarray, y: np.ndarray, group: np.ndarray, n_groups: int,
                           width: float, grid: int = GRID) -> np.ndarray | None:
    """(K,) offsets b with the exact TPR and FPR gaps of 1{f + b_g > 0} each ≤ ``width`` on these rows and the
    most correct predictions among the band pairs of the grid (module docstring); None if no pair works."""
    logits, y, group = np.asarray(logits, dtype=np.float64), np.asarray(y).astype(np.int64), np.asarray(group)
    k_groups = n_groups
    grid = int(max(21, min(grid, np.sqrt(MAX_CELLS / max(k_groups, 1)))))
    order = np.lexsort((-logits, group))
    s, yy = logits[order], y[order]
    n = np.bincount(group, minlength=k_groups)
    positives = np.bincount(group, weights=y, minlength=k_groups).astype(np.int64)
    negatives = n - positives
    start = np.concatenate([[0], np.cumsum(n)[:-1]])
    base, owner, k, prev_ok, next_ok = positions(s, n)
    cum = np.concatenate([[0], np.cumsum(yy)])
    tp = cum[start[owner] + k] - cum[start[owner]]
    fp = k - tp
    big = int(n.max()) + 2

    c = np.linspace(0.0, 1.0, grid)[:, None]
    t_first, t_last = _allowed(owner * big + tp, positives, width, c, base, big, n)
    f_first, f_last = _allowed(owner * big + fp, negatives, width, c, base, big, n)
    lo = np.maximum(t_first[:, None, :], f_first[None, :, :])   # (grid, grid, K)
    hi = np.minimum(t_last[:, None, :], f_last[None, :, :])
    k_now = np.bincount(group, weights=(logits > 0).astype(float), minlength=k_groups).astype(np.int64)
    chosen, ok = nearest_reachable(prev_ok, next_ok, base, n, lo, hi, k_now)
    present = n > 0
    feasible = (ok | ~present).all(-1)
    if not feasible.any():
        return None
    correct = np.where(present, tp[chosen] + negatives - fp[chosen], 0).sum(-1)
    best = np.unravel_index(int(np.argmax(np.where(feasible, correct, -1))), feasible.shape)
    return np.where(present, -threshold_at(s, start, n, k[chosen[best]]), 0.0)

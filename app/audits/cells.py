r"""Rate metrics from the cell counts group × label × decision, and their bootstrap as one multinomial draw.

The rate gaps (DP, equal opportunity, equalized odds) are not drawn: their intervals are the job fairness
report's exact Clopper–Pearson ones, computed from the same counts (:func:`rate_cells` gives their cells to
:mod:`solvers.fairness.confidence`; :class:`app.audits.metrics.RateGap`). The bootstrap below serves the other
rate metrics (accuracy, balanced accuracy, the minority's share) and the AUC.

**Cells.** With K groups, a run's rows fall into the 4K cells (g, y, ŷ); ``counts`` is the (K, 2, 2) array
c[g, y, ŷ] of how many rows fall in each (one ``bincount`` of 4g + 2y + ŷ, or the sum of a stream's batches'
counts). Every rate metric is a function of c alone:

* selection rate SR_g = Σ_y c[g, y, 1] / Σ_{y,ŷ} c[g, y, ŷ]; TPR_g = c[g, 1, 1] / Σ_ŷ c[g, 1, ŷ];
  FPR_g = c[g, 0, 1] / Σ_ŷ c[g, 0, ŷ]; accuracy_g = (c[g, 0, 0] + c[g, 1, 1]) / n_g, and overall the same
  over Σ_g; balanced accuracy = (TPR + TNR) / 2 (overall, or within g);
* a gap is max − min over the groups where the rate is defined (:mod:`solvers.metrics.classification`' rule); equalized
  odds max(TPR gap, FPR gap); the minority's share of positive predictions P_m / Σ_g P_g, P_g = Σ_y c[g, y, 1].

A 0/0 rate is NaN (reported as None). Every function here takes counts with any leading axes (..., K, 2, 2)
and returns values with those axes, so the B replicates of a bootstrap are one array operation.

**The bootstrap is a multinomial draw.** A row bootstrap draws n rows i.i.d. uniformly from the n rows; each
draw lands in cell j with probability p_j = c_j / n, independently, so the resample's cell counts are
Multinomial(n, p) — exactly, not approximately. A rate metric reads a resample only through its cell counts,
so its value on a row resample and on a Multinomial(n, c / n) draw have the same distribution, and so do the
percentile intervals' endpoints (up to the Monte Carlo error of B replicates, as between two seeds of the row
bootstrap). :func:`resample` draws B such count arrays: O(B · 4K) work and memory instead of O(B · n)
(``numpy.random.Generator.multinomial``, seeded, so a report is reproducible).
"""
from __future__ import annotations

import numpy as np


def cell_counts(y: np.ndarray, pred: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """The (K, 2, 2) int64 counts c[g, y, ŷ] of rows with labels ``y``, decisions ``pred`` (0/1), groups ``group``."""
    index = 4 * np.asarray(group, np.int64) + 2 * (np.asarray(y) == 1) + (np.asarray(pred) > 0)
    return np.bincount(index, minlength=4 * n_groups).reshape(n_groups, 2, 2).astype(np.int64)


def resample(counts: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, K, 2, 2) bootstrap cell counts: n_boot draws of Multinomial(n, counts / n) (module docstring)."""
    flat = np.asarray(counts, np.int64).reshape(-1)
    n = int(flat.sum())
    if n == 0:
        return np.zeros((0, *np.shape(counts)), np.int64)
    draws = np.random.default_rng(seed).multinomial(n, flat / n, size=n_boot)
    return draws.reshape(n_boot, *np.shape(counts))


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), np.nan)


def sizes(c: np.ndarray) -> np.ndarray:
    """n_g: (..., K)."""
    return c.sum(axis=(-1, -2))


def selection_rate(c: np.ndarray) -> np.ndarray:
    """SR_g: (..., K)."""
    return _ratio(c[..., 1].sum(axis=-1), sizes(c))


def tpr(c: np.ndarray) -> np.ndarray:
    """TPR_g: (..., K)."""
    return _ratio(c[..., 1, 1], c[..., 1, :].sum(axis=-1))


def fpr(c: np.ndarray) -> np.ndarray:
    """FPR_g: (..., K)."""
    return _ratio(c[..., 0, 1], c[..., 0, :].sum(axis=-1))


def group_accuracy(c: np.ndarray) -> np.ndarray:
    """accuracy_g: (..., K)."""
    return _ratio(c[..., 0, 0] + c[..., 1, 1], sizes(c))


def accuracy(c: np.ndarray) -> np.ndarray:
    """Overall accuracy: (...)."""
    return group_accuracy(c.sum(axis=-3, keepdims=True))[..., 0]


def group_balanced_accuracy(c: np.ndarray) -> np.ndarray:
    """(TPR_g + TNR_g) / 2, NaN where group g lacks either label (scikit-learn's score is then undefined): (..., K)."""
    return (tpr(c) + 1.0 - fpr(c)) / 2


def balanced_accuracy(c: np.ndarray) -> np.ndarray:
    """Overall balanced accuracy: (...)."""
    return group_balanced_accuracy(c.sum(axis=-3, keepdims=True))[..., 0]


def gap(rates: np.ndarray) -> np.ndarray:
    """max − min over the groups (last axis) where the rate is defined; NaN where none is: (...)."""
    defined = ~np.isnan(rates)
    hi = np.where(defined, rates, -np.inf).max(axis=-1)
    lo = np.where(defined, rates, np.inf).min(axis=-1)
    return np.where(defined.any(axis=-1), hi - lo, np.nan)


RATES = {"selection_rate": selection_rate, "tpr": tpr, "fpr": fpr}


def rate_cells(c: np.ndarray, rates: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(hits, counts), each (len(rates), K), of the named rates (keys of :data:`RATES`) from one run's (K, 2, 2)
    counts: hits = the cell's predicted positives, counts = its rows. Rows ("selection_rate",), ("tpr",) and
    ("tpr", "fpr") are the cells of :mod:`solvers.fairness.confidence`' rate-gap bounds for demographic parity,
    equal opportunity and equalized odds (its ``_rate_cells``, there from the rows)."""
    parts = {"selection_rate": (c[..., 1].sum(axis=-1), sizes(c)), "tpr": (c[..., 1, 1], c[..., 1, :].sum(axis=-1)),
             "fpr": (c[..., 0, 1], c[..., 0, :].sum(axis=-1))}
    return (np.stack([parts[r][0] for r in rates]).astype(float), np.stack([parts[r][1] for r in rates]))


def equalized_odds(c: np.ndarray) -> np.ndarray:
    """max(TPR gap, FPR gap), the defined one where only one is: (...)."""
    return np.fmax(gap(tpr(c)), gap(fpr(c)))


def positive_shares(c: np.ndarray) -> np.ndarray:
    """P_g / Σ_g P_g, NaN when nothing is predicted positive (a group without rows has share 0): (..., K)."""
    positives = c[..., 1].sum(axis=-1)
    return _ratio(positives, positives.sum(axis=-1, keepdims=True))


def minority_share(c: np.ndarray, minority: int | None) -> np.ndarray:
    """The share of group ``minority`` (None: of each replicate's smallest group with rows; ties: the first): (...)."""
    shares = positive_shares(c)
    if minority is None:
        n = sizes(c)
        minority_of = np.argmin(np.where(n > 0, n, np.iinfo(np.int64).max), axis=-1)
        return np.take_along_axis(shares, minority_of[..., None], axis=-1)[..., 0]
    return shares[..., minority]


# -- AUC from score bins ---------------------------------------------------------------------------------------
#
# The ROC AUC reads the scores' order, not only the decisions: its cells are group × label × score bin, with
# M = SCORE_BINS bins cut at the pooled scores' quantiles (the distinct scores themselves when there are at most
# M: then nothing is lost). On bin counts p_b (positives), q_b (negatives), bins in score order,
#     AUC_bins = Σ_b p_b (Σ_{b' < b} q_b' + ½ q_b) / (P N),
# the exact AUC with the pairs inside one bin counted as ties (½): it differs from the exact value by at most
# ½ Σ_b p_b q_b / (P N) (about 1/(2M) for continuous scores; the interval is shifted by this error measured on
# the run itself, see :class:`app.audits.metrics.BinnedMetric`). A row resample's bin counts are again
# Multinomial(n, c / n), so the AUC's intervals are :func:`resample` draws of these cells too.

SCORE_BINS = 256
DRAWN_CELLS = 1 << 20  # at most this many cells drawn per run (B · K · 2 · M): 8 MB of counts


def n_score_bins(n_groups: int, n_boot: int) -> int:
    """M for K groups and B draws: SCORE_BINS, fewer when B · K · 2 · M would pass DRAWN_CELLS (at least 16)."""
    return int(np.clip(DRAWN_CELLS // max(2 * n_groups * n_boot, 1), 16, SCORE_BINS))


def score_bins(scores: np.ndarray, bins: int = SCORE_BINS) -> np.ndarray:
    """Each score's bin (0 .. ≤ bins − 1), in score order: the rank among the distinct scores when there are at
    most ``bins`` of them, else the bin between the pooled scores' quantiles (equal scores share a bin)."""
    f = np.asarray(scores, np.float64)
    distinct = np.unique(f) if f.size <= 64 * bins else None  # small inputs: sorting them costs little
    if distinct is None or distinct.size > bins:
        edges = np.unique(np.quantile(f, np.arange(1, bins) / bins))
        return np.searchsorted(edges, f, side="left")
    return np.searchsorted(distinct, f)


def binned_counts(y: np.ndarray, bins: np.ndarray, group: np.ndarray, n_groups: int, n_bins: int = SCORE_BINS
                  ) -> np.ndarray:
    """The (K, 2, n_bins) counts c[g, y, b]."""
    index = (np.asarray(group, np.int64) * 2 + (np.asarray(y) == 1)) * n_bins + bins
    return np.bincount(index, minlength=2 * n_bins * n_groups).reshape(n_groups, 2, n_bins)


def auc_of_bins(c: np.ndarray) -> np.ndarray:
    """AUC_bins of counts (..., 2, M) (NaN without a positive or a negative): (...); on (..., K, 2, M), each
    group's."""
    negatives, positives = c[..., 0, :].astype(float), c[..., 1, :].astype(float)
    below = np.cumsum(negatives, axis=-1) - negatives
    wins = (positives * (below + 0.5 * negatives)).sum(axis=-1)
    return _ratio(wins, positives.sum(axis=-1) * negatives.sum(axis=-1))


def pooled_auc_of_bins(c: np.ndarray) -> np.ndarray:
    """The AUC_bins of all groups together, counts (..., K, 2, M): (...)."""
    return auc_of_bins(c.sum(axis=-3))

r"""Rate metrics from the cell counts group × label × decision, and their bootstrap as one multinomial draw.

**Cells.** With K groups, a run's rows fall into the 4K cells (g, y, ŷ); ``counts`` is the (K, 2, 2) array
c[g, y, ŷ] of how many rows fall in each (one ``bincount`` of 4g + 2y + ŷ, or the sum of a stream's batches'
counts). Every rate metric is a function of c alone:

* selection rate SR_g = Σ_y c[g, y, 1] / Σ_{y,ŷ} c[g, y, ŷ]; TPR_g = c[g, 1, 1] / Σ_ŷ c[g, 1, ŷ];
  FPR_g = c[g, 0, 1] / Σ_ŷ c[g, 0, ŷ]; accuracy_g = (c[g, 0, 0] + c[g, 1, 1]) / n_g, and overall the same
  over Σ_g; balanced accuracy = (TPR + TNR) / 2 (overall, or within g);
* a gap is max − min over the groups where the rate is defined (:mod:`solvers.metrics`' rule); equalized
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

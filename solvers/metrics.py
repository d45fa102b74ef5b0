"""Exact (indicator-based) evaluation metrics, overall and by group.

Prediction ŷ_i = 1{score_i > 0.5} = 1{f_θ(x_i) > 0}. With groups g:

* selection rate  SR_g  = Pr(ŷ=1 | s=g);        demographic_parity = max_g SR_g − min_g SR_g
* true-pos. rate  TPR_g = Pr(ŷ=1 | s=g, y=1);    equal_opportunity  = max_g TPR_g − min_g TPR_g
* false-pos. rate FPR_g = Pr(ŷ=1 | s=g, y=0);    equalized_odds     = max(TPR gap, FPR gap)

A group with no positives (no negatives) has an undefined TPR (FPR), reported as
None and skipped in the TPR (FPR) gap; a gap over fewer than one defined group is None,
over exactly one is 0. Per-group counts are one ``np.bincount`` per quantity.
All values are plain Python floats / ints, or None where undefined (never NaN).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from sklearn import metrics as skm


def _rates(hits: np.ndarray, index: np.ndarray, n_cells: int) -> tuple[np.ndarray, np.ndarray]:
    counts = np.bincount(index, minlength=n_cells).astype(float)
    sums = np.bincount(index, weights=hits.astype(float), minlength=n_cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan), counts


def _gap(rates: np.ndarray) -> float | None:
    defined = rates[~np.isnan(rates)]
    return float(defined.max() - defined.min()) if defined.size else None


def _opt(value: float) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def group_fairness(y: np.ndarray, pred: np.ndarray, group: np.ndarray, group_names: list[str]) -> dict[str, Any]:
    """Exact DP / EOpp / EOdds gaps and per-group rates (see module docstring)."""
    y, pred, group = np.asarray(y).astype(int), np.asarray(pred).astype(int), np.asarray(group).astype(int)
    k = len(group_names)
    sr, sizes = _rates(pred, group, k)
    cell_rates, _ = _rates(pred, 2 * group + y, 2 * k)  # cell 2g + y
    fpr, tpr = cell_rates[0::2], cell_rates[1::2]
    tpr_gap, fpr_gap = _gap(tpr), _gap(fpr)
    eodds = None if tpr_gap is None and fpr_gap is None else max(v for v in (tpr_gap, fpr_gap) if v is not None)
    present = sizes > 0
    names = [n for n, p in zip(group_names, present) if p]
    return {
        "demographic_parity": _gap(sr),
        "demographic_parity_by_group": {n: _opt(v) for n, v in zip(names, sr[present])},
        "equal_opportunity": tpr_gap,
        "equal_opportunity_by_group": {n: _opt(v) for n, v in zip(names, tpr[present])},
        "equalized_odds": eodds,
        "equalized_odds_by_group": {n: {"tpr": _opt(t), "fpr": _opt(f)} for n, t, f in zip(names, tpr[present], fpr[present])},
        "group_sizes": {n: int(c) for n, c in zip(names, sizes[present])},
    }


def classification_metrics(y: np.ndarray, score: np.ndarray, group: np.ndarray, group_names: list[str]) -> dict[str, Any]:
    """accuracy, balanced_accuracy, roc_auc (None with one class), log_loss, n, and :func:`group_fairness`."""
    y = np.asarray(y).astype(int)
    score = np.clip(np.asarray(score, dtype=float), 0.0, 1.0)
    pred = (score > 0.5).astype(int)
    n = int(y.size)
    both = n > 0 and 0 < y.sum() < n
    out: dict[str, Any] = {
        "n": n,
        "accuracy": _opt(skm.accuracy_score(y, pred)) if n else None,
        "balanced_accuracy": _opt(skm.balanced_accuracy_score(y, pred)) if both else None,
        "roc_auc": _opt(skm.roc_auc_score(y, score)) if both else None,
        "log_loss": _opt(skm.log_loss(y, np.clip(score, 1e-15, 1 - 1e-15), labels=[0, 1])) if n else None,
    }
    out.update(group_fairness(y, pred, group, group_names))
    return out

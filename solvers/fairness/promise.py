r"""What a job promises about the POPULATION its rows come from, in one sentence, and whether a guarantee can be
certified at the job's size before anything is trained.

**Certifiability before training.** The Seldonian test of :mod:`.guarantee` accepts a model when the one-sided upper
bound of every gap on the validation split is ≤ ε. Even a model whose gap is 0 has a bound of the bound's width,
so the test can pass only where that width leaves room for the model's own gap. Before training, the width is
predicted for a model with no gap whose rates are those of the labels: for a rate family with denominators
v_g (the validation split's rows, positives or negatives per group, estimated from the training split's shares
scaled to the validation size) and rates p_g, the bound takes two one-sided events at the extreme groups
(:mod:`.confidence`, each at level α' = (1 − confidence) / (2 R m), R = ``max_tests``, m the constraints), so

    w₀ = z_{1−α'} · max_{a ≠ b} (√(p_a (1 − p_a) / v_a) + √(p_b (1 − p_b) / v_b)),

with p_g the group's label rate for demographic parity (a useful model selects about as often as the labels say),
½ for a TPR (the largest variance: TPRs are not known before training) and the group's label rate for an FPR.
A tolerance is called **certifiable** when w₀ ≤ :data:`CERTIFIABLE_SHARE` · ε (the other half is left to the
model's own gap and to the aim of :mod:`.guarantee`); otherwise the job says, before its result, about how many rows
would make it so: w₀ shrinks as 1/√n at fixed shares, so n_needed = n · (w₀ / (CERTIFIABLE_SHARE · ε))².
Loss and AUC gaps have no closed-form width: they are called certifiable and the test decides.

**The sentence** (:func:`promise_sentence`): with a guarantee that was met, "with probability ≥ 95 % the
demographic_parity gap on data like these is ≤ 0.05"; not met, "not certified: …" with the rows it would need or
the reason; without a guarantee, the margin of ``group_thresholds`` when it was met (an estimate: a normal bound on
the fitting rates' sampling error, :mod:`.threshold_margin`), else that the job promises nothing beyond its rows.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from scipy.special import ndtri

#: a tolerance is certifiable when a zero-gap model's predicted bound width is at most this share of it
CERTIFIABLE_SHARE = 0.5
_DENOMINATORS = {"demographic_parity": ("sr",), "equal_opportunity": ("tpr",), "equalized_odds": ("tpr", "fpr")}


def zero_gap_width(kind: str, y: np.ndarray, group: np.ndarray, n_groups: int, validation_rows: int,
                   level: float) -> float | None:
    """w₀ of the module docstring for one rate family (None for a family without a closed-form width), from the
    training rows' labels ``y`` and groups, at a validation split of ``validation_rows`` rows and one-sided level
    ``level`` per event."""
    if kind not in _DENOMINATORS:
        return None
    y = np.asarray(y).reshape(-1) == 1
    g = np.asarray(group, dtype=np.int64).reshape(-1)
    scale = validation_rows / max(len(y), 1)
    rows = np.bincount(g, minlength=n_groups).astype(np.float64)
    positives = np.bincount(g, weights=y.astype(np.float64), minlength=n_groups)
    base = np.where(rows > 0, positives / np.maximum(rows, 1), np.nan)
    z = float(ndtri(level))
    widest = 0.0
    for rate in _DENOMINATORS[kind]:
        n, p = {"sr": (rows, base), "tpr": (positives, np.full(n_groups, 0.5)),
                "fpr": (rows - positives, base)}[rate]
        v = n * scale
        ok = (v > 0) & np.isfinite(p)
        if ok.sum() < 2:
            continue
        sd = np.sqrt(np.clip(p[ok] * (1 - p[ok]), 1e-6, None) / v[ok])
        top = np.sort(sd)[-2:]                      # the two widest groups give the widest pair
        widest = max(widest, float(z * top.sum()))
    return widest


def certification(families: Sequence, tolerances: Sequence[float], y: np.ndarray, group: np.ndarray, n_groups: int,
                  validation_rows: int, total_rows: int, confidence: float, max_tests: int) -> dict[str, Any]:
    """{certifiable, zero_gap_width (per constraint), rows_needed}: the module docstring's check before training;
    ``total_rows`` the job's rows (the answer is in rows of the same table, split alike)."""
    level = 1.0 - (1.0 - confidence) / (2.0 * max_tests * max(len(families), 1))
    widths, needed = [], total_rows
    for family, eps in zip(families, tolerances):
        w = zero_gap_width(family.name, y, group, n_groups, validation_rows, level)
        widths.append(None if w is None else round(w, 6))
        if w is not None and w > CERTIFIABLE_SHARE * eps:
            needed = max(needed, int(math.ceil(total_rows * (w / (CERTIFIABLE_SHARE * eps)) ** 2)))
    certifiable = needed <= total_rows
    return {"certifiable": certifiable, "zero_gap_width": widths, "rows_needed": None if certifiable else needed,
            "share": CERTIFIABLE_SHARE}


def not_certifiable_warning(check: dict[str, Any], tolerances: Sequence[float], total_rows: int) -> str:
    return (f"the guarantee is unlikely to be certified at {total_rows:,} rows: a model with no gap would have a "
            f"{'/'.join('—' if w is None else f'{w:.3f}' for w in check['zero_gap_width'])} bound width on the "
            f"validation split, more than {CERTIFIABLE_SHARE:g} of the tolerance "
            f"({'/'.join(f'{t:g}' for t in tolerances)}); about {check['rows_needed']:,} rows would be needed")


def promise_sentence(constraints: Sequence[tuple[str, float]], guarantee: dict[str, Any] | None,
                     enforcement: dict[str, Any] | None) -> dict[str, Any]:
    """{kind, sentence}: the population-level promise of the job in words (module docstring)."""
    what = " and ".join(f"the {name} gap" for name, _ in constraints) or "the gap"
    bound = ", ".join(f"{eps:g}" for _, eps in constraints)
    if guarantee is not None:
        pct = f"{100 * guarantee['confidence']:g} %"
        if guarantee.get("met"):
            return {"kind": "guarantee", "sentence": f"With probability ≥ {pct}, {what} on data like these is ≤ "
                                                     f"{bound} (a one-sided test on held-out rows)."}
        if guarantee.get("rows_needed"):
            return {"kind": "not certified", "sentence": f"Not certified at {pct}: this tolerance needs about "
                                                         f"{guarantee['rows_needed']:,} rows."}
        return {"kind": "not certified", "sentence": f"Not certified at {pct}: no candidate passed the test "
                                                     "(see the guarantee's message)."}
    margin = (enforcement or {}).get("margin")
    if margin and margin.get("met") and margin.get("about") == "population":
        return {"kind": "estimate", "sentence": f"Estimated: with probability ≥ {100 * (1 - margin['delta']):g} %, "
                                                f"{what} on the population is ≤ {bound} (the thresholds keep a "
                                                "margin for the sampling error of the rows they were fitted on)."}
    return {"kind": "none", "sentence": f"No promise beyond the fitting rows: {what} was checked against {bound} "
                                        "there; on new data it moves by the sampling error (see the test interval)."}

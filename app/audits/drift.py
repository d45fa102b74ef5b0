r"""Score drift between audit runs, per group: the Kolmogorov-Smirnov statistic and the population stability
index (PSI) of a group's score distribution against a reference run (the previous succeeded run, and the
audit's pinned baseline run).

**Quantile summary.** A run keeps, per group g, Q = :data:`Q` quantiles of its scores f (the raw scores the
metrics read; a decision-only log's decisions) at the levels (k + ½)/Q, k = 0..Q−1: the sorted scores at rows
⌊(k + ½) n_g / Q⌋, i.e. Q equally weighted points whose step CDF is within 1/Q of the group's empirical CDF.
A later run is compared with the reference run's summary, so a run stores Q floats per group instead of its
scores (computed for all groups at once: one sort by (group, score) and a (K, Q) index matrix).

**KS**: D_g = sup_x |F_run,g(x) − F_ref,g(x)| between the two summaries' step CDFs, evaluated at every point
of both (the sup of the difference of two step functions is reached at a jump); the exact two-sample
statistic of the full data lies within 2/Q of it (0.01 for Q = 200).

**PSI**: B = :data:`BINS` = 10 fixed bins cut at the reference summary's deciles e_1 < ... < e_9 of the group
((−∞, e_1], (e_1, e_2], ..., (e_9, ∞)); with q_b, p_b the reference's and the run's shares of the bins,
PSI_g = Σ_b (p_b − q_b) ln(p_b / q_b). An empty bin's share is raised to ε = :data:`EPSILON` = 1e-4 (not
renormalised), so a bin that empties or fills adds a finite term (about (p − ε) ln(p / ε) ≤ 9.2 p) instead
of infinity. Shares come from the summaries too (each point weighs 1/Q). Rules of thumb: PSI < 0.1 no
shift, 0.1 - 0.25 moderate, > 0.25 a shift worth acting on.

**Stored finite.** JSON has no infinity: a score of ±∞ (a label output, a probability of exactly 0 or 1) is
stored as ±:data:`FINITE` (1e300), which keeps every order, so KS and PSI are unchanged.

Everything is vectorised over groups: (K, Q, ·) broadcasts, no loop per group or per row.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .metrics import Scored

Q = 200
BINS = 10
EPSILON = 1e-4
FINITE = 1e300


def summarise(scored: Scored) -> dict[str, Any]:
    """``{"q": Q, "groups": {group: [Q quantiles]}, "sizes": {group: n}}`` (groups without rows left out)."""
    f = np.asarray(scored.logits, np.float64)
    order = np.lexsort((f, scored.group))
    counts = np.bincount(scored.group, minlength=scored.n_groups)
    starts = np.cumsum(counts) - counts
    levels = (np.arange(Q) + 0.5) / Q
    rows = starts[:, None] + np.floor(levels[None, :] * counts[:, None]).astype(np.int64)
    present = counts > 0
    quantiles = np.clip(f[order][np.minimum(rows[present], len(f) - 1)], -FINITE, FINITE)
    names = [n for n, p in zip(scored.group_names, present) if p]
    return {"q": Q, "groups": {n: row.tolist() for n, row in zip(names, quantiles)},
            "sizes": {n: int(c) for n, c in zip(names, counts[present])}}


def _cdf(points: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Step CDFs of each row of ``points`` (K, Q) at each row of ``at`` (K, M): (K, M)."""
    return (points[:, :, None] <= at[:, None, :]).mean(axis=1)


def ks(run: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """D_g for each row (group) of the two (K, Q) summaries."""
    at = np.concatenate([run, ref], axis=1)
    return np.abs(_cdf(run, at) - _cdf(ref, at)).max(axis=1)


def psi(run: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """PSI_g for each row (group), bins cut at ``ref``'s deciles."""
    edges = np.quantile(ref, np.arange(1, BINS) / BINS, axis=1).T  # (K, B − 1)

    def shares(points: np.ndarray) -> np.ndarray:
        bins = (points[:, :, None] > edges[:, None, :]).sum(axis=2)  # (K, Q): 0 .. B − 1
        return np.maximum((bins[:, :, None] == np.arange(BINS)).mean(axis=1), EPSILON)

    p, q = shares(run), shares(ref)
    return ((p - q) * np.log(p / q)).sum(axis=1)


def compare(run: dict[str, Any], ref: dict[str, Any] | None, ref_run_id: str | None) -> dict[str, Any] | None:
    """``{"run_id", "ks": {group: D}, "psi": {group: PSI}}`` over the groups both summaries hold (a group
    missing from either is None); None without a reference."""
    if not ref or not ref.get("groups"):
        return None
    names = list(run["groups"])
    common = [g for g in names if g in ref["groups"] and len(ref["groups"][g]) == len(run["groups"][g])]
    out: dict[str, Any] = {"run_id": ref_run_id, "ks": dict.fromkeys(names), "psi": dict.fromkeys(names)}
    if common:
        a = np.array([run["groups"][g] for g in common], np.float64)
        b = np.array([ref["groups"][g] for g in common], np.float64)
        for stat, values in (("ks", ks(a, b)), ("psi", psi(a, b))):
            out[stat].update({g: float(v) for g, v in zip(common, values)})
    return out

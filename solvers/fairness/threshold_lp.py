r"""Group-specific (randomised) thresholds of maximal accuracy under rate-parity constraints, solved exactly as
a linear programme over the groups' ROC points (Hardt, Price & Srebro 2016, §4, for K groups and the spec's
constraint families; the "relaxed group thresholds" of Cruz & Hardt, "Unprocessing Seven Years of Algorithmic
Fairness", ICLR 2024).

**ROC points.** Rows (score s_i, label y_i, group g_i); in group g let v_1 > v_2 > … > v_m be its distinct
scores, P_g / N_g its positives / negatives and n_g = P_g + N_g. The deterministic rule "ŷ = 1{s > t}" with
t ∈ [v_{j+1}, v_j) gives the point j of the group's ROC curve: TP_{g,j} = #{y = 1, s ≥ v_j}, FP_{g,j} likewise
(j = 0: t = v_1, nobody positive, (0, 0); j = m: everybody positive). Stored threshold t_{g,j} = (v_j + v_{j+1})/2
(v_m − 1 for j = m). All groups at once: one ``np.lexsort`` on (−s, g), one cumulative sum of y and 1 − y, the
ends of the runs of equal (g, s). For randomised rules only the vertices of each group's convex hull are kept
(:func:`hull_vertices`): every other point is a mixture of them, so the LP's feasible rates and optimum are the
same, on a few hundred columns instead of one per distinct score.

**Randomised rules = the convex hull.** A mixture of thresholds, w_{g,j} ≥ 0 with Σ_j w_{g,j} = 1, predicts 1
with probability p_g(s) = Σ_j w_{g,j} 1{s > t_{g,j}} (any non-decreasing p_g is such a mixture); its expected
rates are TPR_g = Σ_j w_{g,j} TP_{g,j}/P_g, FPR_g = Σ_j w_{g,j} FP_{g,j}/N_g and SR_g = Σ_j w_{g,j}
(TP_{g,j} + FP_{g,j})/n_g: every point of the convex hull of the group's ROC points, and only those.

**The LP.** Variables w (every kept point of every group) and one free band variable c_{f,r} per constraint
family f and rate r ∈ R_f (demographic parity: SR; equal opportunity: TPR; equalized odds: TPR and FPR):

    max_w  Σ_{g,j} w_{g,j} a_{g,j}          (accuracy: a = (TP − FP)/n, + Σ_g N_g/n constant;
                                            balanced accuracy: a = ½(TP/P − FP/N), + ½ constant)
    s.t.   Σ_j w_{g,j} = 1                      for every group g with rows,
           c_{f,r} ≤ R_g(w) ≤ c_{f,r} + ε_f     for every f, r ∈ R_f and group g whose rate r is defined,
           w ≥ 0.

The band is the project's definition of the gap (:mod:`solvers.fairness.exact`, :func:`solvers.metrics.classification.
group_fairness`): max_g R_g − min_g R_g ≤ ε over the groups where R is defined (TPR: P_g > 0; FPR: N_g > 0)
⇔ some c has every R_g in [c, c + ε]; K rows per side instead of K² pairwise ones. It is always feasible
(everybody negative meets every band) and is solved by HiGHS (``scipy.optimize.linprog``) to its optimality
tolerance: the optimum over every rule that thresholds the score, randomised per group.

**Deterministic thresholds** (``randomized=False``): the same programme with w binary, one ROC point per
group — every point, collinear ones included, since a deterministic rule must be one of them. Under one rate
band (demographic parity or equal opportunity) it is solved exactly by a sweep over the band's lower end
(:func:`band_sweep`, O(N log N)), with two groups under any bands by a sweep over one group's points
(:func:`pair_sweep`, O(N log N)), under two bands (equalized odds) by a sweep over both bands' lower ends
(:func:`window_sweep`); otherwise (three bands or more over three groups or more) as a mixed-integer
programme (``scipy.optimize.milp``, HiGHS branch and bound, within ``time_limit_s``; the best feasible point
found and its gap are returned when the time runs out; when it found none, or ``time_limit_s`` ≤ 0, the better
of the two constant rules, everybody negative or everybody positive in every group, which meet every band:
:func:`constant_rule`. HiGHS reads its clock between phases: a solve may end seconds past a small limit).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy import sparse

from .highs_lp import HighsLP

#: the rates each supported constraint family bounds (the names of :func:`solvers.metrics.classification.group_fairness`)
FAMILY_RATES = {"demographic_parity": ("sr",), "equal_opportunity": ("tpr",), "equalized_odds": ("tpr", "fpr"),
                "partial_demographic_parity": ("kept",)}
#: families whose rate is only linear in the rule for deterministic thresholds (the kept set moves otherwise)
DETERMINISTIC_ONLY = ("partial_demographic_parity",)
OBJECTIVES = ("accuracy", "balanced_accuracy")
_WEIGHT_EPS = 1e-9   # mixture weights below this (HiGHS round-off) are dropped, the rest renormalised
_BAND_MARGIN = 1e-9  # ε is solved as ε − this, so that HiGHS' round-off never leaves a gap a hair above ε


def randomized_by_default(names: Sequence[str]) -> bool:
    """Whether the rule of these constraint families is randomised unless asked otherwise: more than one rate band
    (equalized odds, several families), none of them :data:`DETERMINISTIC_ONLY`."""
    bands = sum(len(FAMILY_RATES.get(name, ())) for name in names)
    return bands > 1 and not any(name in DETERMINISTIC_ONLY for name in names)


def band_tolerances(families: Sequence[tuple[str, float | Sequence[float]]]) -> list[tuple[str, float]]:
    """(rate, ε) of every band of ``families``: a family's ε is one number for all of its rates
    (:data:`FAMILY_RATES`), or one per rate in that order (equalized odds' TPR and FPR bands at their own
    tolerances: the safety margin of :mod:`.threshold_margin` is a number of each band's own standard errors)."""
    out = []
    for name, eps in families:
        rates = FAMILY_RATES[name]
        per = (eps,) * len(rates) if np.ndim(eps) == 0 else tuple(eps)
        if len(per) != len(rates):
            raise ValueError(f"{name}: one tolerance, or one per rate {rates}")
        out += [(r, float(e)) for r, e in zip(rates, per)]
    return out


@dataclass
class ROCPoints:
    """The ROC points of every group, concatenated group by group in increasing (FP, TP) order."""

    group: np.ndarray       # (N,) group of each point
    tp: np.ndarray          # (N,) int64 true positives of the rule 1{s > threshold}
    fp: np.ndarray          # (N,) int64 false positives
    threshold: np.ndarray   # (N,) float64
    positives: np.ndarray   # (K,) P_g
    negatives: np.ndarray   # (K,) N_g
    kept_above: np.ndarray | None = None   # (N,) partial DP: kept rows of the group with s > threshold + θ̂
    kept_size: np.ndarray | None = None    # (K,) |K_g|, the kept rows of each group

    def subset(self, keep: np.ndarray) -> "ROCPoints":
        return ROCPoints(self.group[keep], self.tp[keep], self.fp[keep], self.threshold[keep], self.positives,
                         self.negatives, None if self.kept_above is None else self.kept_above[keep], self.kept_size)

    def rates(self) -> dict[str, np.ndarray]:
        """(N,) SR, TPR, FPR of each point (0 where the group has no positives / negatives)."""
        P, N = self.positives[self.group], self.negatives[self.group]
        out = {"sr": (self.tp + self.fp) / np.maximum(P + N, 1), "tpr": self.tp / np.maximum(P, 1),
               "fpr": self.fp / np.maximum(N, 1)}
        if self.kept_above is not None:
            out["kept"] = self.kept_above / np.maximum(self.kept_size[self.group], 1)
        return out

    def with_kept(self, scores: np.ndarray, group: np.ndarray, kept: np.ndarray, theta: float) -> "ROCPoints":
        """These points with the partial-DP rate: among the ``kept`` rows of the point's group, the share with
        s > threshold + θ̂ (the rows the shifted score f − t ranks in the interval are the base score's: a shift
        per group keeps the ranks). One ``searchsorted`` on keys span·g + s over the kept rows. With θ̂ = 0 it is
        the share the RULE predicts positive; with θ̂ ≠ 0 it would depend on where t lies between two scores
        (refused by :func:`solve_thresholds`)."""
        n_groups = len(self.positives)
        s, g = np.asarray(scores, np.float64)[kept], np.asarray(group).astype(np.int64)[kept]
        span = 2.0 * (np.abs(s).max(initial=0.0) + np.abs(self.threshold).max(initial=0.0) + abs(theta) + 2.0)
        key = np.sort(g * span + s)
        size = np.bincount(g, minlength=n_groups)
        end = np.cumsum(size)
        above = end[self.group] - np.searchsorted(key, self.group * span + (self.threshold + theta), side="right")
        return ROCPoints(self.group, self.tp, self.fp, self.threshold, self.positives, self.negatives, above, size)


def roc_points(scores: np.ndarray, y: np.ndarray, group: np.ndarray, n_groups: int, hull: bool = True) -> ROCPoints:
    """Every group's ROC points (module docstring); ``hull``: only the vertices of each group's convex hull."""
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    y = np.asarray(y).astype(np.int64).reshape(-1)
    g = np.asarray(group).astype(np.int64).reshape(-1)
    order = np.lexsort((-s, g))                    # by group, score decreasing
    s, y, g = s[order], y[order], g[order]
    n = len(s)
    positives = np.bincount(g, weights=y, minlength=n_groups).astype(np.int64)
    sizes = np.bincount(g, minlength=n_groups)
    negatives = sizes - positives
    before = np.concatenate([[0], np.cumsum(sizes)[:-1]])           # first row of each group
    cum_p, cum_n = np.cumsum(y), np.cumsum(1 - y)
    start_p = np.concatenate([[0], cum_p])[before]                  # cumulative counts before each group
    start_n = np.concatenate([[0], cum_n])[before]
    last = np.ones(n, dtype=bool)
    last[:-1] = (g[1:] != g[:-1]) | (s[1:] != s[:-1])               # end of a run of equal (group, score)
    ends = np.flatnonzero(last)
    end_group = g[ends]
    group_last = np.ones(len(ends), dtype=bool)
    group_last[:-1] = end_group[1:] != end_group[:-1]
    nxt = s[np.minimum(ends + 1, n - 1)]
    thr = np.where(group_last, s[ends] - 1.0, 0.5 * (s[ends] + nxt))
    present = np.flatnonzero(sizes > 0)
    # the (0, 0) point of each present group, threshold its top score; then the run ends
    pg = np.concatenate([present, end_group])
    ptp = np.concatenate([np.zeros(len(present), np.int64), cum_p[ends] - start_p[end_group]])
    pfp = np.concatenate([np.zeros(len(present), np.int64), cum_n[ends] - start_n[end_group]])
    pthr = np.concatenate([s[before[present]], thr])
    rank = np.concatenate([np.zeros(len(present)), np.arange(1, len(ends) + 1)])
    o = np.lexsort((rank, pg))
    points = ROCPoints(pg[o], ptp[o], pfp[o], pthr[o], positives, negatives)
    return points.subset(hull_vertices(points)) if hull else points


#: at most this many pruning passes per chain (:func:`hull_vertices`); what survives them is a superset of the hull
MAX_HULL_PASSES = 64


def hull_vertices(p: ROCPoints) -> np.ndarray:
    """Keep-mask of the vertices of each group's convex hull (exact integer arithmetic), every group at once.

    A group's points run from (0, 0) to (N_g, P_g) with FP and TP non-decreasing, so its hull is an upper and a
    lower chain between those two ends (Andrew's monotone chain). A point b between its chain neighbours a and c
    with cross((b − a), (c − b)) ≥ 0 is not a vertex of the upper chain (it lies on or under the chord ac; ≤ 0:
    not of the lower one). Each pass drops every such point of every group at once — each is a non-vertex of the
    whole set, so dropping them together keeps every vertex — until a pass drops none (or after
    :data:`MAX_HULL_PASSES`: the points kept then are a superset of the vertices, which leaves the LP exact). A
    point is kept when it survives in either chain."""
    keep = np.zeros(len(p.group), dtype=bool)
    for sign in (-1, 1):                       # upper chain (drops cross ≥ 0), then lower chain (cross ≤ 0)
        alive = np.arange(len(p.group))
        for _ in range(MAX_HULL_PASSES):
            if len(alive) < 3:
                break
            g, fp, tp = p.group[alive], p.fp[alive], p.tp[alive]
            same = (g[1:-1] == g[:-2]) & (g[1:-1] == g[2:])
            cross = (fp[1:-1] - fp[:-2]) * (tp[2:] - tp[1:-1]) - (tp[1:-1] - tp[:-2]) * (fp[2:] - fp[1:-1])
            drop = same & (sign * cross <= 0)
            if not drop.any():
                break
            mask = np.ones(len(alive), dtype=bool)
            mask[1:-1] = ~drop
            alive = alive[mask]
        keep[alive] = True
    return keep


@dataclass
class ThresholdSolution:
    """The optimal rule: per group g the thresholds ``thresholds[g, :]`` with weights ``weights[g, :]`` (rows
    sum to 1; padding has weight 0; a group without fitting rows keeps threshold 0, the base model's rule), and
    what it achieves on the rows it was fitted on."""

    thresholds: np.ndarray            # (K, M) float64
    weights: np.ndarray               # (K, M) float64
    objective: float                  # expected accuracy (or balanced accuracy) on the fitting rows
    rates: dict[str, np.ndarray]      # expected "sr", "tpr", "fpr" per group (NaN where undefined / no rows)
    gaps: dict[str, float]            # per family type: its exact expected gap (project definition)
    randomized: bool
    status: str                       # "optimal" or, for the deterministic MIP, "time_limit" with a gap
    n_points: int                     # LP / MIP columns (ROC points)
    seconds: float
    mip_gap: float | None = None
    info: dict = field(default_factory=dict)

    def summary(self) -> dict:
        """JSON-ready description (thresholds and weights of each group's used components)."""
        used = self.weights > 0
        return {"objective": self.objective, "randomized": self.randomized, "status": self.status,
                "n_points": self.n_points, "seconds": self.seconds, "mip_gap": self.mip_gap,
                "gaps": self.gaps,
                "thresholds": [t[u].tolist() for t, u in zip(self.thresholds, used)],
                "weights": [w[u].tolist() for w, u in zip(self.weights, used)]}


def _defined(points: ROCPoints) -> dict[str, np.ndarray]:
    """(K,) whether each group's SR / TPR / FPR is defined (it has rows / positives / negatives)."""
    out = {"sr": points.positives + points.negatives > 0, "tpr": points.positives > 0, "fpr": points.negatives > 0}
    if points.kept_size is not None:
        out["kept"] = points.kept_size > 0
    return out


def _band_matrix(points: ROCPoints, rates: dict[str, np.ndarray], band_rates: Sequence[str], n_groups: int
                 ) -> sparse.csr_matrix:
    """A_ub (sparse, over [w, c]) of bands on ``band_rates``: for band b of rate r, the rows R_g − c_b ≤ ε_b and
    c_b − R_g ≤ 0 of every group whose r is defined (the tolerances are the right-hand side: :func:`_band_rhs`)."""
    defined = _defined(points)
    n_pts, n_band = len(points.group), len(band_rates)
    blocks = []
    for b, r in enumerate(band_rates):   # the spec's few families; each block is built for all groups at once
        ok = defined[r][points.group]
        R = sparse.csr_matrix((rates[r][ok], (points.group[ok], np.flatnonzero(ok))), shape=(n_groups, n_pts))
        C = sparse.csr_matrix((np.ones(int(defined[r].sum())), (np.flatnonzero(defined[r]),
                               np.full(int(defined[r].sum()), b))), shape=(n_groups, n_band))
        blocks += [sparse.hstack([R, -C]), sparse.hstack([-R, C])]    # R_g − c ≤ ε,  c − R_g ≤ 0
    return sparse.vstack(blocks).tocsr()


def _band_rhs(points: ROCPoints, bands: Sequence[tuple[str, float]], n_groups: int) -> np.ndarray:
    """b_ub of :func:`_band_matrix`'s rows at the bands' tolerances (ε less :data:`_BAND_MARGIN`; 0 where the
    group's rate is undefined, whose rows are empty)."""
    defined = _defined(points)
    return np.concatenate([part for r, eps in bands
                           for part in (np.where(defined[r], max(eps - _BAND_MARGIN, 0.0), 0.0), np.zeros(n_groups))])


@dataclass
class Prepared:
    """The rows' ROC points and what every solve on them shares (:func:`prepare`): the rates and gain of each
    point and the sweep's range-argmax table. Solving again at other tolerances (the safety margin's bisection,
    :mod:`.threshold_margin`) reuses them: only the bands move."""

    points: ROCPoints
    rates: dict[str, np.ndarray]
    gain: np.ndarray
    P: int
    N: int
    n_groups: int
    objective: str
    randomized: bool
    _argmax: np.ndarray | None = field(default=None, init=False, repr=False)
    _lp: dict = field(default_factory=dict, init=False, repr=False)   # band rates -> :meth:`lp`
    _highs: dict = field(default_factory=dict, init=False, repr=False)   # band rates -> :meth:`highs`

    def argmax_table(self) -> np.ndarray:
        if self._argmax is None:
            self._argmax = argmax_table(self.gain)
        return self._argmax

    def lp(self, band_rates: tuple[str, ...]) -> tuple[sparse.csr_matrix | None, sparse.csr_matrix, np.ndarray,
                                                        np.ndarray, int]:
        """(A_ub, A_eq, c, bounds, number of band variables) of the programme over [w, c] with bands on
        ``band_rates``, built once per band structure: every tolerance of the margin's search is a new b_ub only
        (COMPAS, equalized odds: 57 solves a job, their sparse assembly 30 % of the search)."""
        if band_rates not in self._lp:
            points, n_band = self.points, len(band_rates)
            n_pts = len(points.group)
            A_ub = _band_matrix(points, self.rates, band_rates, self.n_groups) if band_rates else None
            present = np.flatnonzero(points.positives + points.negatives > 0)
            remap = np.full(self.n_groups, -1)
            remap[present] = np.arange(len(present))
            A_eq = sparse.hstack([sparse.csr_matrix((np.ones(n_pts), (remap[points.group], np.arange(n_pts))),
                                                    shape=(len(present), n_pts)),
                                  sparse.csr_matrix((len(present), n_band))]).tocsr()
            c = np.concatenate([-self.gain, np.zeros(n_band)])
            bounds = np.column_stack([np.concatenate([np.zeros(n_pts), np.full(n_band, -np.inf)]),
                                      np.concatenate([np.ones(n_pts), np.full(n_band, np.inf)])])
            self._lp[band_rates] = (A_ub, A_eq, c, bounds, n_band)
        return self._lp[band_rates]

    def highs(self, band_rates: tuple[str, ...]) -> HighsLP:
        """The randomised rule's programme of :meth:`lp`, assembled for HiGHS once (:mod:`.highs_lp`)."""
        if band_rates not in self._highs:
            A_ub, A_eq, c, bounds, _ = self.lp(band_rates)
            self._highs[band_rates] = HighsLP(c, A_ub, A_eq, np.ones(A_eq.shape[0]), bounds)
        return self._highs[band_rates]


def prepare(scores: np.ndarray, y: np.ndarray, group: np.ndarray, n_groups: int, objective: str = "accuracy",
            randomized: bool = True, kept: np.ndarray | None = None, theta: float = 0.0) -> Prepared:
    """What :func:`solve_thresholds` computes from the rows before the families' bands (its arguments)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}")
    points = roc_points(scores, y, group, n_groups, hull=randomized)
    if kept is not None:
        points = points.with_kept(scores, group, np.asarray(kept, bool), float(theta))
    P, N = int(points.positives.sum()), int(points.negatives.sum())
    if objective == "accuracy":
        gain = (points.tp - points.fp) / max(P + N, 1)
    else:
        gain = 0.5 * (points.tp / max(P, 1) - points.fp / max(N, 1))
    return Prepared(points, points.rates(), gain, P, N, n_groups, objective, randomized)


def solve_thresholds(scores: np.ndarray, y: np.ndarray, group: np.ndarray, n_groups: int,
                     families: Sequence[tuple[str, float]], objective: str = "accuracy", randomized: bool = True,
                     time_limit_s: float = 60.0, kept: np.ndarray | None = None, theta: float = 0.0,
                     prepared: Prepared | None = None) -> ThresholdSolution:
    """The optimal per-group (randomised) thresholds of the module docstring on the rows given.

    ``families``: (type, ε) pairs, type in :data:`FAMILY_RATES`, ε one number or one per rate
    (:func:`band_tolerances`); ``objective``: ``accuracy`` or
    ``balanced_accuracy``; ``randomized=False``: one deterministic threshold per group. ``kept`` (rows mask) and
    ``theta``: the kept rows and decision threshold θ̂ of a ``partial_demographic_parity`` family (deterministic
    thresholds only: the share of the kept rows with f − t_g > θ̂ is then a rate of the rule). ``prepared``:
    :func:`prepare` of these same arguments, computed once for several solves."""
    import time

    from scipy.optimize import Bounds, LinearConstraint, milp

    unknown = [name for name, _ in families if name not in FAMILY_RATES]
    if unknown:
        raise ValueError(f"group thresholds bound {sorted(FAMILY_RATES)}, not {unknown}")
    partial = [name for name, _ in families if name in DETERMINISTIC_ONLY]
    if partial and (randomized or kept is None or len(partial) > 1):
        raise ValueError("partial_demographic_parity: one such constraint, its kept rows, and deterministic "
                         "thresholds (randomized: false)")
    if partial and theta != 0.0:   # f − t > θ̂ ≠ 0 depends on where t lies between two scores, not on the rule only
        raise ValueError("partial_demographic_parity: group thresholds handle θ̂ = 0 (its 'threshold') only")
    started = time.perf_counter()
    if prepared is None:   # checks the objective
        prepared = prepare(scores, y, group, n_groups, objective, randomized, kept, theta)
    elif (prepared.objective, prepared.randomized, prepared.n_groups) != (objective, randomized, n_groups):
        raise ValueError("solve_thresholds: the prepared points were computed for another objective or rule")
    points, rates, gain, P, N = prepared.points, prepared.rates, prepared.gain, prepared.P, prepared.N
    bands = band_tolerances(families)
    pair = not randomized and len(bands) > 1 and _two_groups(points)
    if not randomized and (len(bands) <= 1 or pair or len(bands) <= WINDOW_BANDS):   # the exact sweeps
        table = prepared.argmax_table()
        if len(bands) <= 1:
            w = band_sweep(points, rates, gain, bands[0] if bands else None, n_groups, table)
        elif pair:
            w = pair_sweep(points, rates, gain, bands, table)
        else:
            w = window_sweep(points, rates, gain, bands, n_groups, table)
        return _solution(points, rates, w, gain, objective, P, N, families, n_groups, randomized, "optimal",
                         0.0, time.perf_counter() - started)
    n_pts = len(points.group)
    A_ub, A_eq, c, bounds, n_band = prepared.lp(tuple(r for r, _ in bands))
    b_ub = _band_rhs(points, bands, n_groups) if bands else None
    lower, upper = bounds[:, 0], bounds[:, 1]
    mip_gap = None
    if randomized:   # linprog(method="highs")'s solve, assembled once per band structure (.highs_lp)
        x = prepared.highs(tuple(r for r, _ in bands)).solve(b_ub)
        status = "optimal"
    else:
        constraints = [LinearConstraint(A_eq, 1.0, 1.0)]
        if A_ub is not None:
            constraints.append(LinearConstraint(A_ub, -np.inf, b_ub))
        integrality = np.concatenate([np.ones(n_pts), np.zeros(n_band)])
        res = milp(c, constraints=constraints, integrality=integrality, bounds=Bounds(lower, upper),
                   options={"time_limit": float(time_limit_s)}) if time_limit_s > 0 else None
        status = "optimal" if res is not None and res.status == 0 else "time_limit"
        if res is not None and res.x is None and res.status != 1:   # 1: out of time (the programme is feasible)
            raise RuntimeError(f"threshold MIP: {res.message}")
        if res is None or res.x is None:   # no time, or no feasible point found in it: the better constant rule
            x, mip_gap = np.concatenate([constant_rule(points, gain), np.zeros(n_band)]), None
        else:
            x, mip_gap = res.x, float(getattr(res, "mip_gap", 0.0) or 0.0)
    w = np.clip(x[:n_pts], 0.0, None)
    w = np.where(w > _WEIGHT_EPS, w, 0.0)
    total = np.bincount(points.group, weights=w, minlength=n_groups)
    w = w / np.where(total > 0, total, 1.0)[points.group]
    return _solution(points, rates, w, gain, objective, P, N, families, n_groups, randomized, status, mip_gap,
                     time.perf_counter() - started)


def constant_rule(points: ROCPoints, gain: np.ndarray) -> np.ndarray:
    """(N,) weights of the better (by ``gain``) of the two constant rules: every group's first point (0, 0), everybody
    negative, or its last (N_g, P_g), everybody positive. Each gives every group the same rates (all 0 or all 1), so
    it meets every band: the deterministic MIP's answer when its time ran out before it found a feasible point."""
    first = np.ones(len(points.group), dtype=bool)
    first[1:] = points.group[1:] != points.group[:-1]
    last = np.ones(len(points.group), dtype=bool)
    last[:-1] = first[1:]
    best = max((first, last), key=lambda ends: float(gain[ends].sum()))
    return best.astype(np.float64)


def argmax_table(gain: np.ndarray) -> np.ndarray:
    """(L, N) sparse table of range argmaxes: row k, column i holds argmax of ``gain`` over [i, i + 2^k)."""
    n_pts = len(gain)
    table = [np.arange(n_pts)]
    while 2 ** len(table) <= n_pts:
        prev, half = table[-1], 2 ** (len(table) - 1)
        a, b = prev[: n_pts - 2 * half + 1], prev[half: n_pts - half + 1]
        table.append(np.where(gain[b] > gain[a], b, a))
    width = max(len(t) for t in table)
    return np.stack([np.pad(t, (0, width - len(t))) for t in table])


def range_argmax(table: np.ndarray, gain: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Argmax of ``gain`` over each [lo, hi] (lo ≤ hi, arrays of any shape) from :func:`argmax_table`'s ``table``:
    two overlapping power-of-two blocks, O(1) a query; ties go to the lower index."""
    k = np.floor(np.log2(np.maximum(hi - lo + 1, 1))).astype(int)
    a, b = table[k, lo], table[k, np.maximum(hi - 2 ** k + 1, lo)]
    return np.where(gain[b] > gain[a], b, a)


def band_sweep(points: ROCPoints, rates: dict[str, np.ndarray], gain: np.ndarray, band: tuple[str, float] | None,
               n_groups: int, table: np.ndarray | None = None) -> np.ndarray:
    """The deterministic optimum (one ROC point per group, weights 0/1) under ONE rate band, exactly, without a MIP.

    Along a group's ROC points (threshold decreasing) every rate is non-decreasing, so the points whose rate lies
    in a band [c, c + ε] are a contiguous run, found by one ``searchsorted`` on keys 4g + rate. The optimum has
    c = min_g rate_g, a rate of some point: for every candidate c (the distinct rates) and every group the best
    gain in its run comes from a sparse table of range argmaxes (O(N log N) once, O(1) per query; all C × K
    queries at once); c of best total gain over the candidates where every constrained group has a point. Groups
    whose rate is undefined (no positives for TPR, ...) take their best point."""
    g, n_pts = points.group, len(points.group)
    if band is None:
        r, eps = np.zeros(n_pts), 1.0
        constrained = np.zeros(n_groups, dtype=bool)
    else:
        r, eps = rates[band[0]], band[1]
        constrained = _defined(points)[band[0]]
    table = argmax_table(gain) if table is None else table   # table[k][i]: argmax of gain over [i, i + 2^k)

    first = np.searchsorted(g, np.arange(n_groups), side="left")
    last = np.searchsorted(g, np.arange(n_groups), side="right") - 1
    present = last >= first
    start = np.minimum(first, n_pts - 1)
    own = range_argmax(table, gain, start, np.maximum(last, start))               # (K,) unconstrained
    choice = np.where(present, own, -1)
    groups = np.flatnonzero(constrained & present)
    if groups.size:
        key = 4.0 * g + r
        c = np.unique(r[constrained[g]])                                             # (C,) candidate lower ends
        lo = np.searchsorted(key, 4.0 * groups[None, :] + c[:, None], side="left")   # (C, Kc)
        hi = np.searchsorted(key, 4.0 * groups[None, :] + c[:, None] + eps - _BAND_MARGIN, side="right") - 1
        ok = (hi >= lo).all(1)
        lo = np.minimum(lo, n_pts - 1)
        picked = range_argmax(table, gain, lo, np.maximum(hi, lo))
        total = np.where(ok, gain[picked].sum(1), -np.inf)
        choice[groups] = picked[int(np.argmax(total))]
    w = np.zeros(n_pts)
    w[choice[choice >= 0]] = 1.0
    return w


def _two_groups(points: ROCPoints) -> bool:
    """Whether exactly two groups have ROC points (rows)."""
    return len(np.unique(points.group)) == 2


def pair_sweep(points: ROCPoints, rates: dict[str, np.ndarray], gain: np.ndarray,
               bands: Sequence[tuple[str, float]], table: np.ndarray) -> np.ndarray:
    """The deterministic optimum of TWO groups a, b (one ROC point each, weights 0/1) under ANY rate bands,
    exactly, without a MIP.

    Two groups meet band r exactly when |R_a − R_b| ≤ ε_r (the band [c, c + ε_r] holds both), so for a point i of
    group a the points of b that meet every band are those whose rate r lies in [R_a,i − ε_r, R_a,i + ε_r] for
    each r where both groups' r is defined; every rate is non-decreasing along b's points (threshold decreasing),
    so that is one contiguous run per band — one ``searchsorted`` per band for all i at once — and their
    intersection is a run [lo_i, hi_i]. b's best gain there comes from the sparse table of range argmaxes (O(1) a
    query), so the optimum max_i gain_a,i + max_{j ∈ [lo_i, hi_i]} gain_b,j costs O(N log N) where the MIP
    (equalized odds: TPR and FPR bands; several families) took seconds a solve on a few thousand rows. ε is
    solved as ε − :data:`_BAND_MARGIN`, as the LP does. Ties: the first i, and the first j of its run."""
    g, n_pts = points.group, len(points.group)
    a, b = np.unique(g)[:2]
    first_b, last_b = np.searchsorted(g, b, side="left"), np.searchsorted(g, b, side="right") - 1
    lo = np.full(int(np.count_nonzero(g == a)), first_b)
    hi = np.full(len(lo), last_b)
    defined = _defined(points)
    rows_a = np.flatnonzero(g == a)
    for r, eps in bands:
        if not (defined[r][a] and defined[r][b]):   # a band over fewer than two defined rates holds
            continue
        along_b, at_a, tol = rates[r][first_b:last_b + 1], rates[r][rows_a], max(eps - _BAND_MARGIN, 0.0)
        lo = np.maximum(lo, first_b + np.searchsorted(along_b, at_a - tol, side="left"))
        hi = np.minimum(hi, first_b + np.searchsorted(along_b, at_a + tol, side="right") - 1)
    ok = hi >= lo
    safe_lo = np.where(ok, lo, first_b)
    safe_hi = np.where(ok, hi, first_b)
    best_b = range_argmax(table, gain, safe_lo, safe_hi)
    total = np.where(ok, gain[rows_a] + gain[best_b], -np.inf)
    i = int(np.argmax(total))   # always feasible: both groups' first point (nobody positive) meets every band
    w = np.zeros(n_pts)
    w[[rows_a[i], best_b[i]]] = 1.0
    return w


#: the most rate bands :func:`window_sweep` takes (more, over three groups or more: the MIP)
WINDOW_BANDS = 2
#: rows of one block of :func:`window_sweep`'s (band-1 end, band-2 end) candidates (times the groups: its memory)
WINDOW_BLOCK = 1 << 18


def window_sweep(points: ROCPoints, rates: dict[str, np.ndarray], gain: np.ndarray,
                 bands: Sequence[tuple[str, float]], n_groups: int, table: np.ndarray) -> np.ndarray:
    """The deterministic optimum of any number of groups under TWO rate bands (equalized odds' TPR and FPR; or two
    families of one rate each), exactly, without a MIP.

    The bands hold exactly when some lower ends c₁, c₂ have every group's point in the box r₁ ∈ [c₁, c₁ + ε₁],
    r₂ ∈ [c₂, c₂ + ε₂]; both rates are non-decreasing along a group's points, so for given (c₁, c₂) each group's
    points in the box are one run [max(lo₁, lo₂), min(hi₁, hi₂)] and its best gain there one range-argmax query
    (as in :func:`band_sweep`). At the optimum c₁ is the smallest r₁ of the chosen points — a value of r₁ — and
    c₂ the smallest r₂, the r₂ of a point inside its group's band-1 run at that c₁; and c₂ can only lie in
    [max_g r₂(lo₁,g) − ε₂, min_g r₂(hi₁,g)], or some group has no point in the box. So the candidates are, for
    every distinct r₁ value c₁, the points of the band-1 runs whose r₂ lies in that interval — pairs enumerated
    by ``searchsorted`` and ``repeat`` (each group's band-2 run of every distinct c₂ found once), then every
    group's query for all pairs at once, in blocks of consecutive c₁ of about :data:`WINDOW_BLOCK` pairs (the
    memory is bounded whatever the tolerances); band 1 is the rate of fewer distinct values (TPR's for equalized
    odds). A band whose rate fewer than two groups define holds (:func:`band_sweep` decides the other). Ties: the
    first candidate in (c₁, c₂) order."""
    defined = _defined(points)
    g, n_pts = points.group, len(points.group)
    groups = np.arange(n_groups)
    first = np.searchsorted(g, groups, side="left")
    last = np.searchsorted(g, groups, side="right") - 1
    present = last >= first
    binding = [(r, eps) for r, eps in bands if int((defined[r] & present).sum()) >= 2]
    if len(binding) < 2:
        return band_sweep(points, rates, gain, binding[0] if binding else None, n_groups, table)
    (r1, e1), (r2, e2) = sorted(binding, key=lambda band: len(np.unique(rates[band[0]])))   # fewer c₁ first
    tol1, tol2 = max(e1 - _BAND_MARGIN, 0.0), max(e2 - _BAND_MARGIN, 0.0)
    live = np.flatnonzero(present)                                   # the groups that choose a point
    on1, on2 = defined[r1][live], defined[r2][live]                  # (L,) whose band constrains them
    key1, key2 = 4.0 * g + rates[r1], 4.0 * g + rates[r2]

    def runs(key, at, tol, on):                                      # (M, L) each group's run of rate ∈ [c, c + tol]
        lo = np.searchsorted(key, 4.0 * live[None, :] + at[:, None], side="left")
        hi = np.searchsorted(key, 4.0 * live[None, :] + at[:, None] + tol, side="right") - 1
        return np.where(on, lo, first[live]), np.where(on, hi, last[live])

    c1 = np.unique(rates[r1][on1[np.searchsorted(live, g)] & present[g]])   # (C,) band-1 lower ends
    lo1, hi1 = runs(key1, c1, tol1, on1)
    fits1 = (hi1 >= lo1).all(1)
    c1, lo1, hi1 = c1[fits1], lo1[fits1], hi1[fits1]
    r2v = rates[r2]
    floor = np.where(on2, r2v[lo1], -np.inf).max(1) - tol2           # c₂'s interval at each c₁
    ceil = np.where(on2, r2v[np.maximum(hi1, 0)], np.inf).min(1)
    # the band-1 runs' points with r₂ in [floor, ceil], groups constrained by band 2 only: (c₁, point) pairs
    start = np.searchsorted(key2, 4.0 * live[None, :] + floor[:, None], side="left")
    stop = np.searchsorted(key2, 4.0 * live[None, :] + ceil[:, None], side="right")
    start, stop = np.maximum(start, lo1), np.minimum(stop, hi1 + 1)
    count = np.where(on2[None, :] & (stop > start), stop - start, 0)  # (C, L) pairs of each c₁ and group
    values2 = np.unique(r2v)                                          # band-2 runs per distinct c₂, once: (U, L)
    lo2_of, hi2_of = runs(key2, values2, tol2, on2)
    rank2 = np.searchsorted(values2, r2v)                             # (N,) each point's r₂ among them
    per_c1 = count.sum(1)
    ends = np.searchsorted(np.cumsum(per_c1), np.arange(1, per_c1.sum() // WINDOW_BLOCK + 1) * WINDOW_BLOCK)
    best_total, best_choice = -np.inf, None
    for a, b in zip(np.concatenate([[0], ends + 1]), np.concatenate([ends + 1, [len(c1)]])):   # blocks of c₁
        if b <= a:
            continue
        flat = count[a:b].ravel()
        owner = np.repeat(np.arange(flat.size), flat)                 # which (c₁, group) run each pair is of
        p = np.repeat(start[a:b].ravel() - np.concatenate([[0], np.cumsum(flat)[:-1]]), flat) + np.arange(flat.sum())
        i = a + owner // len(live)
        lo2, hi2 = lo2_of[rank2[p]], hi2_of[rank2[p]]
        lo, hi = np.maximum(lo1[i], lo2), np.minimum(hi1[i], hi2)
        ok = (hi >= lo).all(1)
        lo, hi = np.where(hi >= lo, lo, first[live]), np.where(hi >= lo, hi, first[live])
        picked = range_argmax(table, gain, lo, hi)                  # (pairs, L)
        total = np.where(ok, gain[picked].sum(1), -np.inf)
        j = int(np.argmax(total)) if len(total) else 0
        if len(total) and total[j] > best_total:
            best_total, best_choice = total[j], picked[j]
    w = np.zeros(n_pts)
    if best_choice is not None:
        w[best_choice] = 1.0
    else:   # no candidate: cannot happen (every group's first point, nobody positive, meets both bands)
        w[first[live]] = 1.0
    return w


def _solution(points: ROCPoints, rates, w, gain, objective, P, N, families, n_groups, randomized, status,
              mip_gap, seconds) -> ThresholdSolution:
    used = w > 0
    g = points.group[used]
    count = np.bincount(g, minlength=n_groups)
    width = max(int(count.max()) if count.size else 1, 1)
    slot = np.arange(len(g)) - np.concatenate([[0], np.cumsum(count)[:-1]])[g]
    thresholds = np.zeros((n_groups, width))          # a group without rows keeps the base rule f > 0
    weights = np.zeros((n_groups, width))
    weights[:, 0] = (count == 0)
    thresholds[g, slot] = points.threshold[used]
    weights[g, slot] = w[used]
    last = np.maximum(count - 1, 0)                       # padding repeats the group's last threshold, weight 0
    pad = np.arange(width)[None, :] > last[:, None]
    thresholds = np.where(pad, thresholds[np.arange(n_groups), last][:, None], thresholds)
    n = P + N
    constant = points.negatives.sum() / max(n, 1) if objective == "accuracy" else 0.5
    expected = {r: np.bincount(points.group, weights=w * v, minlength=n_groups) for r, v in rates.items()}
    defined = _defined(points)
    expected = {r: np.where(defined[r], v, np.nan) for r, v in expected.items()}
    gaps = {name: max(_spread(expected[r]) for r in FAMILY_RATES[name]) for name, _ in families}
    return ThresholdSolution(thresholds, weights, float(constant + gain @ w), expected, gaps, randomized, status,
                             len(points.group), float(seconds), mip_gap)


def _spread(values: np.ndarray) -> float:
    v = values[np.isfinite(values)]
    return float(v.max() - v.min()) if v.size else 0.0


def expected_predictions(scores: np.ndarray, group: np.ndarray, solution: ThresholdSolution) -> np.ndarray:
    """P(ŷ_i = 1) = Σ_j w_{g_i,j} 1{s_i > t_{g_i,j}} under the rule (vectorised over rows and components)."""
    s = np.asarray(scores, dtype=np.float64).reshape(-1, 1)
    g = np.asarray(group).astype(np.int64)
    return (solution.weights[g] * (s > solution.thresholds[g])).sum(1)

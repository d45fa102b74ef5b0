r"""A stated safety margin for group thresholds: choose them at ε' = ε − m on the fitting rows so that the exact
gap of the same rule on UNSEEN rows exceeds ε with probability at most δ.

**The bound.** A rule is fitted on n_g rows of group g (for demographic parity; the group's positives P_g for a
TPR band, its negatives N_g for an FPR band) and reaches there the rates R̂_g; its true rates are R_g. On an unseen
sample of u_g rows of group g drawn like them it reaches R̃_g. Treating the rule as fixed (it is K thresholds chosen
from thousands of rows; the simulation test measures what that neglects), R̂_g − R_g and R̃_g − R_g are independent
binomial proportions' errors, so d_g = R̃_g − R̂_g is approximately normal with mean 0 and variance

    s_g² = R_g (1 − R_g) (1/n_g + 1/u_g)       (R_g estimated by (n_g R̂_g + 1)/(n_g + 2), never 0 or 1).

The unseen gap max_g R̃_g − min_g R̃_g of one band (one rate of a family: DP's selection rate, equal opportunity's
TPR, equalized odds' TPR and FPR) exceeds ε with probability P_band = P(range of K independent normals
N(R̂_g, s_g²) > ε), computed exactly (:func:`range_exceeds`: closed form for two groups, a one-dimensional
integral over the group holding the minimum for more); by the union bound over the bands and families only,

    P(unseen gap > ε for some family) ≤ B = Σ_bands P_band.

With two groups whose fitting gap is ε' the band's probability is Φ̄(m/√(s_a² + s_b²)) + Φ̄((ε + ε')/…), the
second term ≈ 0: m ≈ z_{1−δ} √(s_a² + s_b²), the one-sided normal bound on a difference of rates. With more groups
the former union bound over the K(K − 1) ordered pairs counted one small group's excursion once per other group,
so with small groups it could exceed 1 at σ_max and the margin was never met.

**What B leaves out.** The scores the rule is fitted to and those it is applied to are taken as one model's: under
cross-fitting the thresholds are fitted to out-of-fold scores and stored on a model boosted on every fitting row,
whose scores on new rows can sit elsewhere, most in small groups. On Adult by race (5 groups, two of about 150
fitting rows; 20,000-row bootstrap samples, DP ≤ 0.05) the rule at 0.1 ε had B = 0.43–0.47, while its gap on the rows
of the table no draw took exceeded 0.05 in all 6 samples (0.053–0.160; the "Other" group's selection rate 0.33 there
against about 0.20 for every group on the fitting rows, seed 5), and on the whole table in 4 (``python -m bench.quality.population_parts --table
adult_race5 --kind demographic_parity --seeds 0 1 2 3 4 5``). The job then says the tolerance is not promised, with B
as the sampling error's share alone (:func:`~solvers.fairness.promise.promise_sentence`). A replica outside the job
(``python -m bench.quality.fold_switch``) kept ε with the refitted model, one fold model per row and the fold models'
average in 19, 22 and 19 of 24 COMPAS samples, 9, 10 and 10 of 12 on Adult (sex), 11, 10 and 12 on bank, 11, 12 and
12 on bank-additional, 2, 4 and 3 of 6 on Adult by race; one fold model per row costs 0.08–0.26 points of
accuracy, the average none (within 0.04 points), but the average carried into the job kept ε in 9 of 12 COMPAS samples as the
refitted model did (the in-process job of ``python -m bench.quality.population_parts``), so neither is stored. Through
the service the refitted model kept ε on COMPAS in 18 of 24 samples (DP; equalized odds, the train split's model:
16 of 24), against the 90 % the margin aims at: there the population gap exceeded the fitted one by 0.007 on
average (se 0.003) with sd 0.019 where the margin counts 0.014 (36 samples, ``python -m
bench.quality.population_parts --table compas_race --kind demographic_parity --seeds 0 … 35``; Adult +0.001 and
bank −0.002 over 12), a shift and a spread the fitted rates' sampling error does not include. Aligning each fold's
scores to the stored model's level before the rule is fitted (its mean score over the fitting rows) did not move
them (28 of 36 kept either way): the fold models' levels differ by about 0.01 in raw score. A randomised rule is
the fitted mixture only over feature rows whose draws spread: rows with the same features share the stored model's
draw, so on a table of few distinct rows its realised rates were off the fitted ones well beyond B's account (COMPAS,
linear, equalized odds: fitted at 0.019, realised 0.040 on the fitting rows, 0.055 on the table); the draw's key is
now chosen on the fitting rows (:mod:`.mixture_draw`).

**The margin.** B depends on the rule, which depends on ε'. :func:`with_margin` solves each band b (a rate of a
family f) at ε'_b = ε_f (1 − σ_b), σ_b ∈ [0, σ_max]: σ = 0 when that rule already has B ≤ δ; else, along each
direction d of :func:`band_directions` (σ_b = t d_b), the smallest t with B ≤ δ found by bisection
(:data:`BISECTIONS` solves; B falls as t grows), and of those rules the most accurate on the fitting rows. One
band (DP, equal opportunity) has the one direction, the common share. Equalized odds has two bands whose
errors differ: TPR's denominators are each group's positives, FPR's its negatives (Adult's women: about 650
positives and 5,400 negatives in 18,000 rows, rate errors ±0.020 and ±0.003), so the common share kept back the
same 0.027 of both where the FPR band needed 0.005; the directions give each band in turn :data:`BAND_RATIOS` of
the other's share, and the rule spends the precise band's tolerance (Adult, linear, EO ≤ 0.05: fitted FPR gap
0.023 → 0.041, population accuracy 0.8446 → 0.8497; docs/architecture.md, "Measured choices"). So the margin is
the sampling error of the rates the rule is fitted on, never a fixed share of ε: m ≈ z_{1−δ} √(s_a² + s_b²) for
two groups, e.g. on a validation split of 6,000 Adult rows (2,000 women, 4,000 men, selection rates near 0.2)
m ≈ 1.28 · 0.011 ≈ 0.014, whatever ε is. σ_max (``margin_max_share``, default :data:`SHARE_LIMIT` = 0.9) only
stops the margin before the constant rule (near σ = 1 the deterministic rule that keeps ε' ≈ 0 is the constant
one; on Adult its accuracy is 0.76): when even σ_max leaves B > δ along the common direction and every other
(small groups: a group of 100 rows has rate errors of ±0.03 at SR 0.1, more than any useful ε) the rule at σ_max
(common share) is returned and the record says the bound is not met (``met``: False, with B) — unless, for
demographic parity, deciding the smallest groups by coins meets it (:mod:`.group_coins`; the record's ``coins``).

**The promise: the population.** A tolerance is a statement about the population the rows come from, so the
default is u_g = ∞ (``unseen_rows`` = ``math.inf``): s_g² = R_g (1 − R_g) / n_g, the error of the fitting rates
alone, and B bounds P(the rule's POPULATION gap > ε). **Target keep-rate**: with the default δ = 0.1 a job's
population gap is ≤ ε with probability ≥ 0.9 (the union over the bands of equalized odds makes it conservative there); ``tests/solvers/fairness/test_threshold_margin.py`` checks it by simulation against exact population rates.
A finite ``unseen_rows`` makes the promise about a fresh sample of that many rows instead (a held-out split of that
size: the sample's own noise adds 1/u_g), with u_g = ``unseen_rows`` · c_g / Σ c (c the rate's denominators on
the fitting rows). The population default is at least as accurate as the former one (an unseen split of the
validation's size, σ ≤ 3/4), every sample ≤ ε under both (``python -m bench.quality.population``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from scipy.special import ndtr

from ..catalog.postprocess import SHARE_LIMIT  # σ_max's default and largest value (module docstring)
from .threshold_lp import FAMILY_RATES, ThresholdSolution, band_tolerances

#: the families whose rates the bound covers (partial DP's kept-row share keeps its tolerance)
BOUNDED = ("demographic_parity", "equal_opportunity", "equalized_odds")
#: bisection steps on the share σ (the share is then known to its cap / 2^BISECTIONS)
BISECTIONS = 7
#: with several bands, :func:`band_directions` gives each band in turn this ratio of the others' share
BAND_RATIOS = (0.6, 0.3, 0.1)


@dataclass
class MarginRecord:
    """What :func:`with_margin` chose: the largest band share σ, the tolerances solved at (per family its loosest
    band's: the family's gap on the fitting rows is at most it; ``bands``: each band's, for families of several),
    the bound B on P(unseen gap > ε)."""

    delta: float
    unseen_rows: float
    share: float
    tolerances: dict[str, float]
    bound: float
    met: bool
    solves: int
    bands: dict[str, dict[str, float]] = field(default_factory=dict)
    coins: dict[str, float] = field(default_factory=dict)   # group -> its coin's rate (:mod:`.group_coins`)

    def summary(self) -> dict:
        population = math.isinf(self.unseen_rows)   # JSON has no infinity: the population is said in words
        return {"delta": self.delta, "about": "population" if population else "unseen sample",
                "unseen_rows": None if population else self.unseen_rows, "share": self.share,
                "tolerances": self.tolerances, "bands": self.bands, "bound": self.bound, "met": self.met,
                "solves": self.solves, **({"coins": self.coins} if self.coins else {})}


def denominators(y: np.ndarray, group: np.ndarray, n_groups: int) -> dict[str, np.ndarray]:
    """(K,) rows, positives and negatives of each group: the denominators of SR, TPR and FPR."""
    y = np.asarray(y).reshape(-1) > 0.5
    g = np.asarray(group).astype(np.int64).reshape(-1)
    rows = np.bincount(g, minlength=n_groups).astype(np.float64)
    positives = np.bincount(g, weights=y, minlength=n_groups)
    return {"sr": rows, "tpr": positives, "fpr": rows - positives}


def violation_bound(rates: dict[str, np.ndarray], counts: dict[str, np.ndarray],
                    families: Sequence[tuple[str, float]], unseen_rows: float) -> float:
    """B of the module docstring: the union bound on P(the unseen gap of some family > its ε) for a rule with
    fitting rates ``rates`` (per rate, (K,), NaN where undefined) on ``counts`` (its denominators) rows;
    ``unseen_rows`` = ``math.inf``: the population gap. An infinite count marks a rate with no sampling error (a
    coin's, :mod:`.group_coins`: population gaps only)."""
    total = 0.0
    for name, eps in families:
        for r in FAMILY_RATES[name]:
            n = counts[r]
            ok = np.isfinite(rates[r]) & (n > 0)
            if ok.sum() < 2:
                continue
            R, n = rates[r][ok], n[ok]
            exact = np.isinf(n)
            if exact.any() and not math.isinf(unseen_rows):
                raise ValueError("exact rates (infinite counts) bound population gaps only")
            n = np.where(exact, 1.0, n)
            unseen = 0.0 if math.isinf(unseen_rows) else 1.0 / (float(unseen_rows) * n / n.sum())   # 1 / u_g
            p = (n * R + 1.0) / (n + 2.0)
            var = np.where(exact, 0.0, p * (1.0 - p) * (1.0 / n + unseen))
            total += range_exceeds(R, np.sqrt(var), eps)
    return total


#: the smallest sd :func:`range_exceeds` integrates with (a rate without sampling error: a point mass)
SD_FLOOR = 1e-12
#: quadrature nodes per group of :func:`range_exceeds` (z ∈ [−Z_SPAN, Z_SPAN] in steps of 2 Z_SPAN / (nodes − 1))
RANGE_NODES, Z_SPAN = 801, 8.0


def range_exceeds(center: np.ndarray, sd: np.ndarray, eps: float) -> float:
    r"""P(max_g X_g − min_g X_g > ε) for independent X_g ~ N(``center``_g, ``sd``_g²) (module docstring).

    Two groups: Φ̄((ε − Δ)/σ) + Φ̄((ε + Δ)/σ), Δ the centres' difference, σ² the variances' sum (the exact tail of
    |X_a − X_b|, in closed form). More: the range is ≤ ε exactly when, for the group a holding the minimum x, every
    other group lies in [x, x + ε], so

        P(range ≤ ε) = Σ_a ∫ φ(z) Π_{b≠a} [Φ((x_a(z) + ε − c_b)/s_b) − Φ((x_a(z) − c_b)/s_b)] dz,  x_a(z) = c_a + s_a z,

    integrated by the trapezoidal rule on :data:`RANGE_NODES` nodes of z ∈ [−8, 8] per group, vectorised over
    groups. It replaces the union bound over the K(K − 1) ordered pairs, which counts the same excursion of one
    small group once per other group."""
    c = np.asarray(center, dtype=np.float64)
    s = np.maximum(np.asarray(sd, dtype=np.float64), SD_FLOOR)   # an exact rate: a point mass, as a tiny sd
    if len(c) < 2:
        return 0.0
    if len(c) == 2:
        sigma = math.sqrt(float(s[0] ** 2 + s[1] ** 2))
        gap = abs(float(c[0] - c[1]))
        return float(ndtr(-(eps - gap) / sigma) + ndtr(-(eps + gap) / sigma))
    z = np.linspace(-Z_SPAN, Z_SPAN, RANGE_NODES)
    x = c[:, None] + s[:, None] * z[None, :]                                     # (a, z)
    inside = ndtr((x[:, :, None] + eps - c[None, None, :]) / s[None, None, :]) \
        - ndtr((x[:, :, None] - c[None, None, :]) / s[None, None, :])           # (a, z, b)
    own = np.arange(len(c))
    inside[own, :, own] = 1.0
    density = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    kept = np.trapezoid(density[None, :] * inside.prod(axis=2), z, axis=1).sum()
    return float(min(max(1.0 - kept, 0.0), 1.0))


def split_bound(families: Sequence[tuple[str, float]], y: np.ndarray, predicted: np.ndarray, group: np.ndarray,
                n_groups: int, unseen_rows: float | None = None) -> float:
    """B for the rule that predicted ``predicted`` (bool, (n,)) on a split's rows (y, group): its rates there
    (SR, TPR, FPR per group), as fitting rates on those rows; ``unseen_rows`` None: as many as the split's. Only the
    families of :data:`BOUNDED` count (others add 0)."""
    counts = denominators(y, group, n_groups)
    y = np.asarray(y).reshape(-1) > 0.5
    g = np.asarray(group).astype(np.int64).reshape(-1)
    pred = np.asarray(predicted, dtype=np.float64).reshape(-1)
    hits = {"sr": np.bincount(g, weights=pred, minlength=n_groups),
            "tpr": np.bincount(g, weights=pred * y, minlength=n_groups),
            "fpr": np.bincount(g, weights=pred * ~y, minlength=n_groups)}
    rates = {r: np.where(counts[r] > 0, hits[r] / np.maximum(counts[r], 1), np.nan) for r in hits}
    bounded = [(name, float(eps)) for name, eps in families if name in BOUNDED]
    return violation_bound(rates, counts, bounded, len(y) if unseen_rows is None else unseen_rows)


def band_directions(n_bands: int) -> list[np.ndarray]:
    """The directions d of band shares σ_b = t d_b that :func:`with_margin` searches (module docstring): the
    common share (all ones) first, and with several bands each band at each ratio of :data:`BAND_RATIOS` of the
    others' share."""
    ones = np.ones(n_bands)
    out = [ones]
    for b in range(n_bands if n_bands > 1 else 0):
        for ratio in BAND_RATIOS:
            d = ones.copy()
            d[b] = ratio
            out.append(d)
    return out


def with_margin(solve: Callable[[list[tuple[str, float | tuple[float, ...]]]], ThresholdSolution],
                families: Sequence[tuple[str, float]], counts: dict[str, np.ndarray], delta: float,
                unseen_rows: float = math.inf, max_share: float = SHARE_LIMIT,
                workers: int = 1) -> tuple[ThresholdSolution, MarginRecord]:
    """The most accurate rule of ``solve`` (its objective on the fitting rows) at band tolerances ε_f (1 − t d_b)
    whose bound B ≤ ``delta``: for each direction d of :func:`band_directions` the smallest t ≤ ``max_share`` by
    bisection (module docstring); ``solve`` maps (family, tolerance or per-rate tolerances) pairs to a
    :class:`ThresholdSolution`. ``workers`` > 1: the directions' bisections run on that many threads (HiGHS and
    the sweeps compute outside Python's lock; ``solve`` must be safe to call from several threads once it has
    solved once), their results taken in the directions' order: the same rule and record as one after the
    other."""
    families = [(name, float(eps)) for name, eps in families]
    bounded = [(name, eps) for name, eps in families if name in BOUNDED]
    n_bands = sum(len(FAMILY_RATES[name]) for name, _ in bounded)

    def shrunk(shares: np.ndarray) -> list[tuple[str, float | tuple[float, ...]]]:
        out, at = [], 0
        for name, eps in families:
            if name not in BOUNDED:
                out.append((name, eps))
                continue
            k = len(FAMILY_RATES[name])
            per = tuple(eps * (1.0 - float(s)) for s in shares[at:at + k])
            out.append((name, per[0] if k == 1 or len(set(per)) == 1 else per))
            at += k
        return out

    def attempt(shares: np.ndarray):
        solution = solve(shrunk(shares))
        return solution, violation_bound(solution.rates, counts, bounded, unseen_rows)

    def along(d: np.ndarray) -> tuple[bool, tuple, int]:
        """(met, (shares, solution, B), solves) of direction ``d``: its smallest share meeting the bound, or its
        share at ``max_share`` when even that does not."""
        solution, b = attempt(max_share * d)
        if b > delta:
            return False, (max_share * d, solution, b), 1
        lo, hi, at = 0.0, max_share, (max_share * d, solution, b)
        for _ in range(BISECTIONS):       # invariant: hi meets the bound, lo does not
            mid = 0.5 * (lo + hi)
            solution, b = attempt(mid * d)
            if b <= delta:
                hi, at = mid, (mid * d, solution, b)
            else:
                lo = mid
        return True, at, 1 + BISECTIONS

    solves = 1
    best_shares = np.zeros(n_bands)
    best, bound = attempt(best_shares)
    if bound > delta:
        directions = band_directions(n_bands)
        if workers > 1 and len(directions) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=min(workers, len(directions))) as pool:
                searched = list(pool.map(along, directions))
        else:
            searched = [along(d) for d in directions]
        solves += sum(n for _, _, n in searched)
        found = [at for met, at, _ in searched if met]
        unmet = next((at for met, at, _ in searched if not met), None)   # the first (common share's) unmet
        # the first of the most accurate (the common share first): max keeps the first of equal keys
        best_shares, best, bound = max(found, key=lambda f: f[1].objective) if found else unmet
    tolerances = shrunk(best_shares)
    record = MarginRecord(float(delta), float(unseen_rows), float(best_shares.max(initial=0.0)),
                          {name: float(max(np.atleast_1d(eps))) for name, eps in tolerances},
                          float(bound), bool(bound <= delta), solves,
                          {name: dict(band_tolerances([(name, eps)]))
                           for name, eps in tolerances if name in BOUNDED and len(FAMILY_RATES[name]) > 1})
    return best, record

r"""A stated safety margin for group thresholds: choose them at ε' = ε − m on the fitting rows so that the exact
gap of the same rule on UNSEEN rows exceeds ε with probability at most δ.

**The bound.** A rule is fitted on n_g rows of group g (for demographic parity; the group's positives P_g for a
TPR band, its negatives N_g for an FPR band) and reaches there the rates R̂_g; its true rates are R_g. On an unseen
sample of u_g rows of group g drawn like them it reaches R̃_g. Treating the rule as fixed (it is K thresholds chosen
from thousands of rows; the simulation test measures what that neglects), R̂_g − R_g and R̃_g − R_g are independent
binomial proportions' errors, so d_g = R̃_g − R̂_g is approximately normal with mean 0 and variance

    s_g² = R_g (1 − R_g) (1/n_g + 1/u_g)       (R_g estimated by (n_g R̂_g + 1)/(n_g + 2), never 0 or 1).

The unseen gap max_g R̃_g − min_g R̃_g exceeds ε only if some ordered pair a ≠ b has R̃_a − R̃_b > ε, i.e.
d_a − d_b > ε − (R̂_a − R̂_b); by the union bound over the K(K − 1) ordered pairs of every band (one band per
rate of each family: DP's selection rate, equal opportunity's TPR, equalized odds' TPR and FPR),

    P(unseen gap > ε for some family) ≤ B = Σ_bands Σ_{a≠b} Φ̄((ε − (R̂_a − R̂_b)) / √(s_a² + s_b²)).

With two groups whose fitting gap is ε' the pair in the gap's direction contributes Φ̄(m/√(s_a² + s_b²)) and the
other one Φ̄((ε + ε')/…) ≈ 0: m ≈ z_{1−δ} √(s_a² + s_b²), the one-sided normal bound on a difference of rates.

**The margin.** B depends on the rule, which depends on ε'. :func:`with_margin` solves at ε'_f = ε_f (1 − σ) for
every family f with a common share σ ∈ [0, σ_max] (``margin_max_share``; defaults below): σ = 0
when that rule already has B ≤ δ, else the smallest σ with B ≤ δ found by bisection (:data:`BISECTIONS` solves; B
falls as σ grows). When even σ = σ_max leaves B > δ (small groups: a group of 100 rows has rate errors of ±0.03 at
SR 0.1, more than any useful ε), the rule at that share is returned and the record says the bound is not met
(``met``: False, with B): aiming nearer 0 would trade accuracy for a promise the rows cannot support.

**Why the cap is 3/4 for deterministic thresholds and 1/2 for randomised ones.** On a validation split of Adult
(6,512 rows, about 2,150 women and 4,360 men, selection rates near 0.17 at DP ≤ 0.02) √(s_a² + s_b²) ≈ 0.0115, so δ
= 0.1 asks m ≈ 1.28 · 0.0115 ≈ 0.0147 by the one-pair approximation, σ ≈ 0.74 at ε = 0.02; under a cap of 1/2 the
margin stopped at half of that. B falls with σ there (seed 0: 0.354, 0.240, 0.165, 0.136 at σ = 1/4, 1/2, 3/4, 0.9),
and so does the test DP of gbdt ``group_thresholds`` at DP ≤ 0.02 (``python -m bench.threshold_margin_cap``,
``bench/results/threshold_margin_cap.md``): over seeds 0–14 it was ≤ ε on 11 of 15 seeds under 1/2 (mean 0.0149,
largest 0.0382) and on 12 of 15 under 3/4 (mean 0.0110, largest 0.0305), mean test accuracy 0.8535 → 0.8527; bank DP
(seeds 0–4) 0.0148 → 0.0137. Equalized odds is different: its rates are TPRs and FPRs on a few hundred positives of
the smaller group, so B stays far above δ at any useful share (Adult seed 0: 0.91, 0.75, 0.66, 0.64), and the
tighter ε' is met by mixing more thresholds, not by a rule whose unseen gap is smaller: over the same 15 seeds of
Adult at equalized odds ≤ 0.02 the test gap was ≤ ε on 7 under 1/2 and on 5 under 3/4 (mean 0.0300 → 0.0334),
accuracy 0.8638 → 0.8623 (on 5 seeds of bank and COMPAS the mean moved the other way, 0.0294 → 0.0270 and 0.0688 →
0.0661, at −0.0012 and −0.0038 of accuracy, kept on as many seeds or fewer). The loss is the mixture's, not the
rates': deterministic equal opportunity, whose TPRs are as noisy, gains from 3/4 on the same 15 seeds (kept 9 → 11,
mean 0.0273 → 0.0251, accuracy 0.8715 under both). So randomised rules — the default for equalized odds and several
constraints — keep the cap of 1/2, and deterministic ones (DP, equal opportunity, partial DP) take 3/4. Near 1 the
deterministic rule that keeps ε' ≈ 0 on validation is the constant one (Adult: test accuracy 0.76), so the user's
``margin_max_share`` is at most 0.9 (at 0.9 on Adult DP, seeds 0–4: test accuracy 0.8523, not trivial).

**Unseen rows.** u_g = ``unseen_rows`` · c_g / Σ c (c the rate's denominators on the fitting rows): the promise is
about a fresh sample of ``unseen_rows`` rows (a held-out split of that size); ``unseen_rows`` → ∞ gives the
gap of the rule's rates on the population.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy.special import ndtr

from ..catalog.postprocess import MAX_MARGIN_SHARE  # the deterministic rules' cap (module docstring)
from .threshold_lp import FAMILY_RATES, ThresholdSolution

#: the families whose rates the bound covers (partial DP's kept-row share keeps its tolerance)
BOUNDED = ("demographic_parity", "equal_opportunity", "equalized_odds")
#: bisection steps on the share σ (the share is then known to its cap / 2^BISECTIONS)
BISECTIONS = 7


@dataclass
class MarginRecord:
    """What :func:`with_margin` chose: the share σ, the tolerances solved at, the bound B on P(unseen gap > ε)."""

    delta: float
    unseen_rows: float
    share: float
    tolerances: dict[str, float]
    bound: float
    met: bool
    solves: int

    def summary(self) -> dict:
        return {"delta": self.delta, "unseen_rows": self.unseen_rows, "share": self.share,
                "tolerances": self.tolerances, "bound": self.bound, "met": self.met, "solves": self.solves}


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
    fitting rates ``rates`` (per rate, (K,), NaN where undefined) on ``counts`` (its denominators) rows."""
    total = 0.0
    for name, eps in families:
        for r in FAMILY_RATES[name]:
            n = counts[r]
            ok = np.isfinite(rates[r]) & (n > 0)
            if ok.sum() < 2:
                continue
            R, n = rates[r][ok], n[ok]
            u = float(unseen_rows) * n / n.sum()
            p = (n * R + 1.0) / (n + 2.0)
            var = p * (1.0 - p) * (1.0 / n + 1.0 / u)
            diff = R[:, None] - R[None, :]                        # (a, b): R̂_a − R̂_b
            z = (eps - diff) / np.sqrt(var[:, None] + var[None, :])
            off = ~np.eye(len(R), dtype=bool)
            total += float(ndtr(-z[off]).sum())
    return total


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


def with_margin(solve: Callable[[list[tuple[str, float]]], ThresholdSolution], families: Sequence[tuple[str, float]],
                counts: dict[str, np.ndarray], delta: float, unseen_rows: float,
                max_share: float = MAX_MARGIN_SHARE) -> tuple[ThresholdSolution, MarginRecord]:
    """The rule of ``solve`` at the tolerances ε_f (1 − σ) with the smallest σ ≤ ``max_share`` whose bound
    B ≤ ``delta`` (module docstring); ``solve`` maps (family, tolerance) pairs to a :class:`ThresholdSolution`."""
    families = [(name, float(eps)) for name, eps in families]
    bounded = [(name, eps) for name, eps in families if name in BOUNDED]

    def shrunk(share: float) -> list[tuple[str, float]]:
        return [(name, eps * (1.0 - share) if name in BOUNDED else eps) for name, eps in families]

    def attempt(share: float):
        solution = solve(shrunk(share))
        return solution, violation_bound(solution.rates, counts, bounded, unseen_rows)

    solves = 1
    best_share, (best, bound) = 0.0, attempt(0.0)
    if bound > delta:
        solves += 1
        best_share, (best, bound) = max_share, attempt(max_share)
        lo, hi = 0.0, max_share
        if bound <= delta:
            for _ in range(BISECTIONS):       # invariant: hi meets the bound, lo does not
                mid = 0.5 * (lo + hi)
                solution, b = attempt(mid)
                solves += 1
                if b <= delta:
                    hi, best_share, best, bound = mid, mid, solution, b
                else:
                    lo = mid
    record = MarginRecord(float(delta), float(unseen_rows), float(best_share),
                          dict(shrunk(best_share)), float(bound),
                          bool(bound <= delta), solves)
    return best, record

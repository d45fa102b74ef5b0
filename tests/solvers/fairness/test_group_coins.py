"""Coins for groups too small for a threshold (solvers.fairness.group_coins): where demographic parity's population
margin cannot be met, the rule with coins meets it, and keeps the population gap as often as it promises."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from solvers.fairness.group_coins import MAX_COIN_SHARE, coin_shift, with_coins
from solvers.fairness.threshold_lp import prepare, solve_thresholds
from solvers.fairness.threshold_margin import SHARE_LIMIT, denominators, range_exceeds, violation_bound, with_margin

EPS, DELTA = 0.05, 0.1
#: two large groups and one of 0.5 % of the rows (about 100 of 20,000)
SHARES = (0.595, 0.4, 0.005)


def _planted(rng, n, shares=SHARES):
    """Group g: a share ``shares[g]`` of the rows, positives with probability 0.25 + 0.1 g, score
    y + 0.5 g + N(0, 1)."""
    g = rng.choice(len(shares), n, p=shares)
    y = (rng.random(n) < 0.25 + 0.1 * g).astype(np.int64)
    return y + 0.5 * g + rng.normal(size=n), y, g


def _population_rates(solution, K: int) -> np.ndarray:
    """Each group's exact population selection rate under the (possibly randomised) rule: Σ_k w_gk P(s > t_gk | g)
    for the planted scores of :func:`_planted`."""
    g = np.arange(K)[:, None]
    b = 0.25 + 0.1 * g
    t = solution.thresholds
    tail = b * norm.sf(t - 1 - 0.5 * g) + (1 - b) * norm.sf(t - 0.5 * g)
    return (solution.weights * tail).sum(axis=1)


def _population_accuracy(solution, shares=SHARES) -> float:
    """The rule's exact expected accuracy on the planted population of :func:`_planted`."""
    g = np.arange(len(shares))[:, None]
    b = 0.25 + 0.1 * g
    t = solution.thresholds
    right = b * norm.sf(t - 1 - 0.5 * g) + (1 - b) * norm.cdf(t - 0.5 * g)
    return float(np.asarray(shares) @ (solution.weights * right).sum(axis=1))


def _margin_and_coins(rng, n=20000):
    s, y, g = _planted(rng, n)
    K = len(SHARES)
    prepared = prepare(s, y, g, K, "accuracy", False)

    def solve(families):
        return solve_thresholds(s, y, g, K, families, randomized=False, prepared=prepared)

    counts = denominators(y, g, K)
    plain = with_margin(solve, [("demographic_parity", EPS)], counts, DELTA)
    return plain, with_coins(solve, [("demographic_parity", EPS)], counts, DELTA, np.inf, SHARE_LIMIT,
                             coin_shift(s)), s


def test_a_group_too_small_for_the_margin_gets_a_coin_in_the_middle_of_the_others_rates():
    (solution, record), coined, s = _margin_and_coins(np.random.default_rng(0))
    assert not record.met and record.bound > DELTA   # about 100 rows: their rate is off by ±0.04
    assert coined is not None
    tossed, margin = coined
    assert margin.met and margin.bound <= DELTA and tossed.randomized
    q = tossed.info["coins"][2]
    assert list(tossed.info["coins"]) == [2]
    shift = coin_shift(s)
    np.testing.assert_allclose(tossed.thresholds[2], [-shift, shift])
    np.testing.assert_allclose(tossed.weights[2], [q, 1 - q])
    others = tossed.rates["sr"][:2]
    assert q == pytest.approx((others.max() + others.min()) / 2)
    for group in (0, 1):   # the other groups keep one threshold each
        assert tossed.weights[group, 0] == 1.0 and tossed.weights[group, 1] == 0.0
    # its population rate is q exactly, the others' as solved up to their sampling error
    rates = _population_rates(tossed, 3)
    assert rates[2] == pytest.approx(q, abs=1e-12)


def test_coins_keep_the_population_gap_with_probability_one_minus_delta_where_thresholds_cannot():
    """60 fitting samples of 20,000 rows: the rule with a coin keeps the EXACT population gap ≤ ε in at least
    1 − δ of them (up to 2.33 simulation standard errors). The margin's rule without coins, fitted at its largest
    share (its bound above δ), keeps it less often and is less accurate: every group is held to ε/10 for the
    small one's sake."""
    rng = np.random.default_rng(3)
    reps = 60
    kept, plain, accuracy = [], [], []
    for _ in range(reps):   # test set-up: one fitting sample per repetition
        (solution, _), coined, _ = _margin_and_coins(rng)
        rates = _population_rates(coined[0], 3)
        kept.append(rates.max() - rates.min() <= EPS)
        rates = _population_rates(solution, 3)
        plain.append(rates.max() - rates.min() <= EPS)
        accuracy.append(_population_accuracy(coined[0]) - _population_accuracy(solution))
    tolerance = 2.33 * np.sqrt(DELTA * (1 - DELTA) / reps)
    assert np.mean(kept) >= 1 - DELTA - tolerance
    assert np.mean(plain) <= np.mean(kept)
    assert np.mean(accuracy) > 0.001


def test_no_coins_beyond_their_share_of_rows_or_for_other_families():
    rng = np.random.default_rng(1)
    s, y, g = _planted(rng, 4000, (0.5, 0.5 - MAX_COIN_SHARE / 2, MAX_COIN_SHARE / 2))
    K = 3

    def solve(families):
        return solve_thresholds(s, y, g, K, families, randomized=True)

    counts = denominators(y, g, K)
    assert with_coins(solve, [("equalized_odds", EPS)], counts, DELTA, np.inf, SHARE_LIMIT, 10.0) is None
    assert with_coins(solve, [("demographic_parity", EPS)], counts, DELTA, 6000, SHARE_LIMIT, 10.0) is None
    # 4,000 rows: every group's rate is too loose for ε = 0.01, and coins may take 10 % of the rows at most
    assert with_coins(solve, [("demographic_parity", 0.01)], counts, DELTA, np.inf, SHARE_LIMIT, 10.0) is None


def test_an_exact_rate_adds_no_sampling_error_to_the_bound():
    """Two groups, one rate exact (an infinite count): B is the two-sided normal tail of the other group's error;
    all rates exact: B is 0 inside ε and 1 outside."""
    rates = {"sr": np.array([0.20, 0.21])}
    n = 400.0
    bound = violation_bound(rates, {"sr": np.array([np.inf, n])}, [("demographic_parity", EPS)], np.inf)
    p = (n * 0.21 + 1) / (n + 2)
    sd = np.sqrt(p * (1 - p) / n)
    assert bound == pytest.approx(norm.sf((EPS - 0.01) / sd) + norm.sf((EPS + 0.01) / sd), rel=1e-9)
    assert range_exceeds(np.array([0.2, 0.22, 0.24]), np.zeros(3), EPS) == pytest.approx(0.0, abs=1e-9)
    assert range_exceeds(np.array([0.2, 0.22, 0.26]), np.zeros(3), EPS) == pytest.approx(1.0, abs=1e-9)
    with pytest.raises(ValueError, match="population"):
        violation_bound(rates, {"sr": np.array([np.inf, n])}, [("demographic_parity", EPS)], 6000)


def test_a_job_decides_its_smallest_group_by_a_coin_and_says_so():
    """Through ``group_thresholds`` (a linear base, DP ≤ 0.05, 20,000 rows of which group C holds about 100): the
    margin is met with C decided by a coin — the stored model selects C's rows at its rate whatever their label
    —, and the promise names the group."""
    import pandas as pd

    from fairsolve.model import FairModel
    from solvers import ProblemSpec, run
    from solvers.data.encoding import TableEncoder
    from solvers.fairness.promise import promise_sentence

    def table(seed, n):
        s, y, g = _planted(np.random.default_rng(seed), n)
        rng = np.random.default_rng(seed + 100)
        return pd.DataFrame({"x1": s + rng.normal(scale=0.1, size=n), "x2": rng.normal(size=n),
                             "grp": np.array(["A", "B", "C"])[g], "y": np.where(y == 1, "yes", "no")})

    spec = ProblemSpec(target="y", positive_label="yes", sensitive=["grp"], model={"type": "linear"},
                       constraints=[{"type": "demographic_parity", "tolerance": EPS}],
                       split={"test": 0.1, "validation": 0.3, "seed": 0}, max_iterations=200,
                       solver={"name": "group_thresholds", "params": {"threshold_rows": "train_validation"}})
    out = run(table(5, 20000), spec)
    margin = out.enforcement["margin"]
    assert margin["met"] and list(margin["coins"]) == ["C"]
    q = margin["coins"]["C"]
    model = FairModel.from_state(TableEncoder.from_dict(out.encoder), spec.model, out.state_dict)
    fresh = table(6, 400000)
    c = fresh[fresh["grp"] == "C"]
    selected = model.decision_function(c) > 0
    positive = (c["y"] == "yes").to_numpy()
    assert selected.mean() == pytest.approx(q, abs=0.03)   # about 2,000 rows of C
    assert abs(selected[positive].mean() - selected[~positive].mean()) < 0.06   # a coin: blind to the label
    sentence = promise_sentence([("demographic_parity", EPS)], None, out.enforcement)["sentence"]
    assert "The group C has too few rows" in sentence
    params = {"threshold_rows": "train_validation", "coins": False}   # asked for none: every group keeps a threshold
    plain = run(table(5, 20000), spec.model_copy(update={"solver": spec.solver.model_copy(update={"params": params})}))
    assert not plain.enforcement["margin"]["met"] and "coins" not in plain.enforcement["margin"]

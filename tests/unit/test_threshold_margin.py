"""The safety margin of group thresholds (solvers.fairness.threshold_margin) and cross-fitted gbdt scores
(solvers.gbdt.cross_fit): coverage on fresh samples by simulation, the bound's limits, the folds."""
from __future__ import annotations

import numpy as np
import pytest

from solvers.fairness.threshold_lp import solve_thresholds
from solvers.fairness.threshold_margin import MAX_MARGIN_SHARE, denominators, violation_bound, with_margin

EPS, DELTA = 0.05, 0.1


def _sample(rng, n, shares, shift):
    """Scores of a planted disparity: group g has a share ``shares[g]`` of the rows, base rate 0.3 + 0.15 g and
    scores y + shift·g + N(0, 1)."""
    g = rng.choice(len(shares), n, p=shares)
    y = (rng.random(n) < 0.3 + 0.15 * g).astype(np.int64)
    return y + shift * g + rng.normal(size=n), y, g


def _fresh_gaps(rng, solution, n, shares, reps):
    """Exact DP of the (deterministic) rule on ``reps`` fresh samples of ``n`` rows."""
    out = np.empty(reps)
    for r in range(reps):   # test set-up: one fresh sample per repetition
        s, _, g = _sample(rng, n, shares, 1.0)
        pred = s > solution.thresholds[g, 0]
        rate = np.bincount(g, weights=pred, minlength=len(shares)) / np.bincount(g, minlength=len(shares))
        out[r] = rate.max() - rate.min()
    return out


@pytest.mark.parametrize("shares,eps", [((0.6, 0.4), EPS), ((0.5, 0.3, 0.2), 0.08)])
def test_margin_keeps_the_gap_on_fresh_samples_with_probability_one_minus_delta(shares, eps):
    """Fit the rule on n rows (a fresh draw each repetition), then measure its exact gap on a fresh sample of the
    promised size: with the margin the share ≤ ε is at least 1 − δ (up to 2.33 simulation standard errors);
    without it (thresholds at exactly ε) it is about one half, which the same check would reject."""
    rng = np.random.default_rng(0)
    K, n_fit, n_unseen, reps = len(shares), 12000, 6000, 50
    kept_margin, kept_plain, shares_used = [], [], []
    for _ in range(reps):   # test set-up: one fitting sample per repetition
        s, y, g = _sample(rng, n_fit, shares, 1.0)

        def solve(families):
            return solve_thresholds(s, y, g, K, families, randomized=False)

        solution, record = with_margin(solve, [("demographic_parity", eps)], denominators(y, g, K), DELTA, n_unseen)
        assert record.met and 0.0 < record.share < MAX_MARGIN_SHARE and record.bound <= DELTA
        assert solution.gaps["demographic_parity"] <= eps * (1 - record.share) + 1e-9
        shares_used.append(record.share)
        kept_margin.append(_fresh_gaps(rng, solution, n_unseen, shares, 5) <= eps)
        kept_plain.append(_fresh_gaps(rng, solve([("demographic_parity", eps)]), n_unseen, shares, 5) <= eps)
    kept, plain = np.mean(kept_margin), np.mean(kept_plain)
    tolerance = 2.33 * np.sqrt(DELTA * (1 - DELTA) / reps)   # repetitions are the independent units
    assert kept >= 1 - DELTA - tolerance
    assert plain < 1 - DELTA - tolerance


def test_no_margin_when_the_rows_already_support_the_promise_and_capped_when_they_cannot():
    rng = np.random.default_rng(1)
    s, y, g = _sample(rng, 4000, (0.5, 0.5), 0.5)

    def solve(families):
        return solve_thresholds(s, y, g, 2, families, randomized=False)

    counts = denominators(y, g, 2)
    huge = {k: v * 1e6 for k, v in counts.items()}                      # a million times the rows: no noise
    _, record = with_margin(solve, [("demographic_parity", EPS)], huge, DELTA, 1e12)
    assert record.share == 0.0 and record.met and record.solves == 1
    _, record = with_margin(solve, [("demographic_parity", EPS)], counts, DELTA, 50)   # 25 unseen rows a group
    assert record.share == MAX_MARGIN_SHARE and not record.met and record.bound > DELTA
    assert record.tolerances["demographic_parity"] == pytest.approx(EPS * (1 - MAX_MARGIN_SHARE))
    _, capped = with_margin(solve, [("demographic_parity", EPS)], counts, DELTA, 50, max_share=0.3)
    assert capped.share == 0.3 and not capped.met and capped.bound > record.bound   # a lower cap: less kept back
    assert capped.tolerances["demographic_parity"] == pytest.approx(EPS * 0.7)


def test_the_margin_cap_is_a_bounded_solver_param():
    """``margin_max_share`` is refused, naming the field, outside (0, 0.9]; unset, the rule's own default."""
    from pydantic import ValidationError

    from solvers.catalog.postprocess import RANDOMIZED_MARGIN_SHARE, GroupThresholdsConfig

    assert GroupThresholdsConfig().margin_max_share is None
    assert (MAX_MARGIN_SHARE, RANDOMIZED_MARGIN_SHARE) == (0.75, 0.5)
    for bad in (0.0, 0.95, 1.0):
        with pytest.raises(ValidationError, match="margin_max_share"):
            GroupThresholdsConfig(margin_max_share=bad)


@pytest.mark.parametrize("kind,randomized,cap", [("demographic_parity", False, 0.75), ("equalized_odds", True, 0.5)])
def test_a_job_caps_the_margin_by_its_rules_kind_unless_told(kind, randomized, cap):
    """Small validation groups: the bound is out of reach, so the margin stops at the cap — 3/4 of ε for
    deterministic thresholds, 1/2 for randomised ones — or at the one the job names."""
    from solvers import ProblemSpec, run
    from tests.datagen import planted_table

    fields = dict(target="income", positive_label=">50K", sensitive=["sex"], max_iterations=50, device="cpu",
                  constraints=[{"type": kind, "tolerance": 0.02}], split={"test": 0.2, "validation": 0.2, "seed": 0})
    table = planted_table(1000, seed=2)
    for params, share in (({}, cap), ({"margin_max_share": 0.3}, 0.3)):
        out = run(table, ProblemSpec(**fields, solver={"name": "group_thresholds", "params": params}))
        margin = out.enforcement["margin"]
        assert out.enforcement["randomized"] is randomized
        assert not margin["met"] and margin["share"] == share
        assert margin["tolerances"][kind] == pytest.approx(0.02 * (1 - share))


def test_violation_bound_is_the_normal_tail_of_the_rate_difference():
    """Two groups at a fitting gap ε − m: B = Φ̄(m/σ) + Φ̄((2ε − m)/σ), σ² the two rates' variances summed."""
    from scipy.stats import norm

    n, u, m = np.array([1000.0, 3000.0]), 2000.0, 0.01
    rates = {"sr": np.array([0.3 + EPS - m, 0.3])}
    bound = violation_bound(rates, {"sr": n}, [("demographic_parity", EPS)], u)
    p = (n * rates["sr"] + 1) / (n + 2)
    sigma = np.sqrt((p * (1 - p) * (1 / n + 1 / (u * n / n.sum()))).sum())
    assert bound == pytest.approx(norm.sf(m / sigma) + norm.sf((2 * EPS - m) / sigma), rel=1e-9)


def test_folds_are_stratified_by_group_and_label_and_seeded():
    from solvers.gbdt.cross_fit import fold_of

    rng = np.random.default_rng(2)
    y, g = rng.integers(0, 2, 1003), rng.integers(0, 3, 1003)
    fold = fold_of(y, g, 5, seed=7)
    counts = np.zeros((6, 5), int)
    np.add.at(counts, (2 * g + y, fold), 1)
    assert (counts.max(1) - counts.min(1) <= 1).all()                   # each stratum dealt evenly
    np.testing.assert_array_equal(fold, fold_of(y, g, 5, seed=7))
    assert (fold != fold_of(y, g, 5, seed=8)).any()


def test_out_of_fold_scores_come_from_the_model_without_the_row():
    import lightgbm as lgb

    from solvers.gbdt.cross_fit import _params, fold_of, out_of_fold_scores
    from solvers.spec import ModelSpec

    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] + rng.normal(size=600) > 0).astype(float)
    g = (X[:, 1] > 0).astype(int)
    spec = ModelSpec(type="gbdt", n_estimators=10, num_leaves=7, min_child_samples=10)
    scores = out_of_fold_scores(X, y, g, spec, 10, 3, seed=0)
    out = fold_of(y, g, 3, seed=0) == 1
    params = _params(spec, 0)
    booster = lgb.train(params, lgb.Dataset(X[~out], label=y[~out], params=params), num_boost_round=10)
    np.testing.assert_allclose(scores[out], booster.predict(X[out], raw_score=True), rtol=1e-12)
    full = lgb.train(params, lgb.Dataset(X, label=y, params=params), num_boost_round=10)
    assert not np.allclose(scores[out], full.predict(X[out], raw_score=True))    # not the in-sample scores

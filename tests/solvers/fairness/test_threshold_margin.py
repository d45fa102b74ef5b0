"""The safety margin of group thresholds (solvers.fairness.threshold_margin) and cross-fitted gbdt scores
(solvers.models.gbdt.cross_fit): coverage on fresh samples by simulation, the bound's limits, the folds."""
from __future__ import annotations

import numpy as np
import pytest

from solvers.fairness.threshold_lp import prepare, solve_thresholds
from solvers.fairness.threshold_margin import BISECTIONS, SHARE_LIMIT, denominators, violation_bound, with_margin


def _solver(s, y, g, n_groups, randomized=True):
    """``families → solve_thresholds(...)`` on these rows, their ROC points prepared once (as a job's rule does,
    ``group_thresholds._Fitted.solve``): the margin's bisection solves the same rows many times."""
    prepared = prepare(s, y, g, n_groups, "accuracy", randomized)
    return lambda families: solve_thresholds(s, y, g, n_groups, families, randomized=randomized, prepared=prepared)


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

        solve = _solver(s, y, g, K, randomized=False)

        solution, record = with_margin(solve, [("demographic_parity", eps)], denominators(y, g, K), DELTA, n_unseen)
        assert record.met and 0.0 < record.share < SHARE_LIMIT and record.bound <= DELTA
        assert solution.gaps["demographic_parity"] <= eps * (1 - record.share) + 1e-9
        shares_used.append(record.share)
        kept_margin.append(_fresh_gaps(rng, solution, n_unseen, shares, 5) <= eps)
        kept_plain.append(_fresh_gaps(rng, solve([("demographic_parity", eps)]), n_unseen, shares, 5) <= eps)
    kept, plain = np.mean(kept_margin), np.mean(kept_plain)
    tolerance = 2.33 * np.sqrt(DELTA * (1 - DELTA) / reps)   # repetitions are the independent units
    assert kept >= 1 - DELTA - tolerance
    assert plain < 1 - DELTA - tolerance


def _population_gap(thresholds: np.ndarray, shares, shift: float) -> float:
    """The exact population DP of the rule s > t_g for the planted scores of :func:`_sample`: group g's rows are
    positive with probability b_g = 0.3 + 0.15 g and score y + shift·g + N(0, 1), so P(s > t | g) = b_g Φ̄(t − 1 −
    shift·g) + (1 − b_g) Φ̄(t − shift·g)."""
    from scipy.stats import norm

    g = np.arange(len(shares))
    b = 0.3 + 0.15 * g
    t = thresholds[:, 0]
    rate = b * norm.sf(t - 1 - shift * g) + (1 - b) * norm.sf(t - shift * g)
    return float(rate.max() - rate.min())


@pytest.mark.parametrize("shares,eps,n_fit", [((0.6, 0.4), EPS, 6000), ((0.7, 0.3), 0.03, 20000),
                                               ((0.55, 0.25, 0.1, 0.06, 0.04), EPS, 18000)])
def test_the_population_margin_keeps_the_population_gap_with_probability_one_minus_delta(shares, eps, n_fit):
    """The default promise (unseen_rows = ∞): fit the rule on n rows, compute its EXACT population gap (closed
    form): ≤ ε in at least 1 − δ of the repetitions (up to 2.33 simulation standard errors), and not far more
    (the margin spends the tolerance: the mean population gap is above ε/2 and the keep-rate below 1 − δ/10 would
    mean a margin many times too wide); without the margin the keep-rate is about one half."""
    rng = np.random.default_rng(4)
    K, reps = len(shares), 60
    kept, plain, gaps = [], [], []
    for _ in range(reps):   # test set-up: one fitting sample per repetition
        s, y, g = _sample(rng, n_fit, shares, 1.0)

        solve = _solver(s, y, g, K, randomized=False)

        solution, record = with_margin(solve, [("demographic_parity", eps)], denominators(y, g, K), DELTA)
        assert record.met and record.summary()["about"] == "population" and record.summary()["unseen_rows"] is None
        gap = _population_gap(solution.thresholds, shares, 1.0)
        gaps.append(gap)
        kept.append(gap <= eps)
        plain.append(_population_gap(solve([("demographic_parity", eps)]).thresholds, shares, 1.0) <= eps)
    tolerance = 2.33 * np.sqrt(DELTA * (1 - DELTA) / reps)
    assert np.mean(kept) >= 1 - DELTA - tolerance
    assert np.mean(plain) < 1 - DELTA - tolerance
    assert np.mean(gaps) > eps / 2


def test_no_margin_when_the_rows_already_support_the_promise_and_capped_when_they_cannot():
    rng = np.random.default_rng(1)
    s, y, g = _sample(rng, 4000, (0.5, 0.5), 0.5)

    solve = _solver(s, y, g, 2, randomized=False)

    counts = denominators(y, g, 2)
    huge = {k: v * 1e6 for k, v in counts.items()}                      # a million times the rows: no noise
    _, record = with_margin(solve, [("demographic_parity", EPS)], huge, DELTA, 1e12)
    assert record.share == 0.0 and record.met and record.solves == 1
    _, record = with_margin(solve, [("demographic_parity", EPS)], counts, DELTA, 50)   # 25 unseen rows a group
    assert record.share == SHARE_LIMIT and not record.met and record.bound > DELTA
    assert record.tolerances["demographic_parity"] == pytest.approx(EPS * (1 - SHARE_LIMIT))
    _, capped = with_margin(solve, [("demographic_parity", EPS)], counts, DELTA, 50, max_share=0.3)
    assert capped.share == 0.3 and not capped.met and capped.bound > record.bound   # a lower cap: less kept back
    assert capped.tolerances["demographic_parity"] == pytest.approx(EPS * 0.7)


def test_the_margin_cap_is_a_bounded_solver_param():
    """``margin_max_share`` is refused, naming the field, outside (0, 0.9]; unset, the limit 0.9 (no fixed share)."""
    from pydantic import ValidationError

    from solvers.catalog.postprocess import GroupThresholdsConfig

    assert GroupThresholdsConfig().margin_max_share is None and GroupThresholdsConfig().margin_rows is None
    assert SHARE_LIMIT == 0.9
    for bad in (0.0, 0.95, 1.0):
        with pytest.raises(ValidationError, match="margin_max_share"):
            GroupThresholdsConfig(margin_max_share=bad)


@pytest.mark.parametrize("kind,randomized,cap", [("demographic_parity", False, SHARE_LIMIT),
                                                  ("equalized_odds", True, SHARE_LIMIT)])
def test_a_job_caps_the_margin_at_the_limit_unless_told(kind, randomized, cap):
    """Small validation groups: the bound is out of reach, so the margin stops at the limit (0.9 of ε, for
    deterministic and randomised rules alike) or at the cap the job names."""
    from solvers import ProblemSpec, run
    from bench.common.datagen import planted_table

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
    from solvers.models.gbdt.cross_fit import fold_of

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

    from solvers.models.gbdt.cross_fit import _params, fold_of, out_of_fold_scores
    from solvers.data.spec import ModelSpec

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


def _population_rates(solution, shares, shift: float) -> tuple[np.ndarray, np.ndarray]:
    """(TPR, FPR) per group on the population of :func:`_sample` of a (randomised) rule: Σ_j w_gj Φ̄(t_gj − 1 −
    shift·g) over the positives, Σ_j w_gj Φ̄(t_gj − shift·g) over the negatives."""
    from scipy.stats import norm

    g = np.arange(len(shares))[:, None]
    t, w = np.asarray(solution.thresholds), np.asarray(solution.weights)
    tpr = np.nansum(w * norm.sf(t - 1 - shift * g), axis=1)
    fpr = np.nansum(w * norm.sf(t - shift * g), axis=1)
    return tpr, fpr


@pytest.mark.parametrize("shares,n_fit", [((0.96, 0.04), 18000), ((0.5, 0.3, 0.2), 12000)])
def test_the_equalized_odds_margin_keeps_the_population_gap_with_small_cells(shares, n_fit):
    """Equalized odds (randomised thresholds, the default): TPR's denominators are each group's positives and FPR's
    its negatives (a group of 4 % of 18,000 rows at base rate 0.45 has about 320 positives): the population
    max(TPR gap, FPR gap) of the fitted rule is ≤ ε in at least 1 − δ of the repetitions, up to 2.33 simulation
    standard errors."""
    rng = np.random.default_rng(5)
    K, reps, eps = len(shares), 60, EPS
    kept = []
    for _ in range(reps):   # test set-up: one fitting sample per repetition
        s, y, g = _sample(rng, n_fit, shares, 1.0)
        counts = denominators(y, g, K)
        assert counts["tpr"].sum() == y.sum() and counts["fpr"].sum() == (1 - y).sum()

        solve = _solver(s, y, g, K)

        solution, record = with_margin(solve, [("equalized_odds", eps)], counts, DELTA)
        tpr, fpr = _population_rates(solution, shares, 1.0)
        kept.append(max(np.ptp(tpr), np.ptp(fpr)) <= eps)
    tolerance = 2.33 * np.sqrt(DELTA * (1 - DELTA) / reps)
    assert np.mean(kept) >= 1 - DELTA - tolerance


def test_the_range_probability_is_exact_for_many_groups():
    """P(max − min > ε) of independent normals: the closed form for two groups, the integral for more, against a
    Monte-Carlo estimate (4 standard errors); the union bound over pairs it replaced is far above it."""
    from scipy.special import ndtr

    from solvers.fairness.threshold_margin import range_exceeds

    rng = np.random.default_rng(6)
    for c, sd in [((0.2, 0.25), (0.01, 0.02)), ((0.2, 0.25, 0.22), (0.01, 0.02, 0.03)),
                  ((0.2, 0.21, 0.2, 0.22, 0.19), (0.003, 0.01, 0.02, 0.025, 0.025))]:
        c, sd = np.asarray(c), np.asarray(sd)
        draws = rng.normal(c, sd, size=(200_000, len(c)))
        mc = float((np.ptp(draws, axis=1) > EPS).mean())
        exact = range_exceeds(c, sd, EPS)
        assert abs(exact - mc) <= 4 * np.sqrt(mc * (1 - mc) / len(draws)) + 1e-4
        z = (EPS - (c[:, None] - c[None, :])) / np.sqrt(sd[:, None] ** 2 + sd[None, :] ** 2)
        union = float(ndtr(-z[~np.eye(len(c), dtype=bool)]).sum())
        assert exact <= union + 1e-12 and (len(c) == 2 or union > 1.5 * exact)



def _odds_sample(rng, n=20000):
    """A small group (15 %) with a low base rate (0.1 against 0.3): about 300 positives (its TPR noisy) and 2,500
    negatives (its FPR precise); scores 1.5 y + 0.8 g + N(0, 1) − 0.5."""
    g = rng.choice(2, n, p=(0.85, 0.15))
    y = (rng.random(n) < np.where(g == 1, 0.1, 0.3)).astype(np.int64)
    return 1.5 * y + 0.8 * g + rng.normal(size=n) - 0.5, y, g


def test_each_band_of_equalized_odds_keeps_its_own_tolerance():
    """Per-rate tolerances (TPR, FPR) of one family: each band's gap on the fitting rows is within its own, a looser
    band is used (and gains accuracy) where it binds, and a tolerance count that is not one per rate is refused."""
    s, y, g = _odds_sample(np.random.default_rng(8))
    common = solve_thresholds(s, y, g, 2, [("equalized_odds", 0.005)])
    split = solve_thresholds(s, y, g, 2, [("equalized_odds", (0.005, 0.08))])
    assert np.ptp(split.rates["tpr"]) <= 0.005 + 1e-7 and np.ptp(split.rates["fpr"]) <= 0.08 + 1e-7
    assert np.ptp(split.rates["fpr"]) > 0.008 and split.objective > common.objective
    with pytest.raises(ValueError, match="one per rate"):
        solve_thresholds(s, y, g, 2, [("equalized_odds", (0.02, 0.03, 0.04))])


def test_the_margin_is_spent_where_the_rates_are_precise():
    """Equalized odds with few positives in the small group (its TPR noisy) and many negatives (FPR precise): the
    margin searched per band keeps B ≤ δ, is at least as accurate on the fitting rows as the common share's rule
    (every band at ε (1 − σ), the smallest σ with B ≤ δ) and keeps back more of the noisy band's tolerance than of
    the precise one's; the record lists both bands."""
    from solvers.fairness.threshold_margin import band_directions

    s, y, g = _odds_sample(np.random.default_rng(8))
    counts = denominators(y, g, 2)

    solve = _solver(s, y, g, 2)

    solution, record = with_margin(solve, [("equalized_odds", EPS)], counts, DELTA)
    assert record.met and record.bound <= DELTA
    bands = record.bands["equalized_odds"]
    assert bands["tpr"] < bands["fpr"] and np.ptp(solution.rates["fpr"]) <= bands["fpr"] + 1e-7
    assert record.summary()["bands"] == record.bands and record.tolerances["equalized_odds"] == max(bands.values())
    assert violation_bound(solution.rates, counts, [("equalized_odds", EPS)], np.inf) <= DELTA
    common = None
    for share in np.linspace(0, SHARE_LIMIT, 91):       # the common share's rule: the smallest σ with B ≤ δ
        common = solve([("equalized_odds", EPS * (1 - share))])
        if violation_bound(common.rates, counts, [("equalized_odds", EPS)], np.inf) <= DELTA:
            break
    assert solution.objective > common.objective
    assert len(band_directions(1)) == 1 and len(band_directions(2)) == 7


@pytest.mark.parametrize("randomized", [True, False])
def test_the_directions_searched_on_threads_give_the_same_rule_and_record(randomized):
    """with_margin's directions on two threads (a job's finish, its fits ended) against one after the other: the
    same thresholds, weights and record, the directions' solves all counted."""
    s, y, g = _odds_sample(np.random.default_rng(8))
    counts = denominators(y, g, 2)
    one = with_margin(_solver(s, y, g, 2, randomized), [("equalized_odds", EPS)], counts, DELTA)
    two = with_margin(_solver(s, y, g, 2, randomized), [("equalized_odds", EPS)], counts, DELTA, workers=2)
    np.testing.assert_array_equal(one[0].thresholds, two[0].thresholds)
    np.testing.assert_array_equal(one[0].weights, two[0].weights)
    assert one[1] == two[1] and one[1].solves > 1 + BISECTIONS   # several directions were searched


def test_the_margin_per_band_keeps_the_population_gap_with_probability_one_minus_delta():
    """The per-band search by simulation: on :func:`_odds_sample`'s population (TPR noisy, FPR precise, where the
    search keeps back more of the TPR band) the fitted rule's population max(TPR gap, FPR gap) — exact, from the
    normal scores — is ≤ ε in at least 1 − δ of the fits, up to 2.33 simulation standard errors."""
    from scipy.stats import norm

    rng = np.random.default_rng(9)
    reps, kept, split = 30, [], 0
    for _ in range(reps):   # test set-up: one fitting sample per repetition
        s, y, g = _odds_sample(rng)
        solution, record = with_margin(_solver(s, y, g, 2), [("equalized_odds", EPS)],
                                       denominators(y, g, 2), DELTA)
        bands = record.bands.get("equalized_odds", {})
        split += bool(bands) and bands["tpr"] != bands["fpr"]
        t, w = np.asarray(solution.thresholds), np.asarray(solution.weights)
        shift = 0.8 * np.arange(2)[:, None] - 0.5
        tpr = np.nansum(w * norm.sf(t - 1.5 - shift), axis=1)
        fpr = np.nansum(w * norm.sf(t - shift), axis=1)
        kept.append(max(np.ptp(tpr), np.ptp(fpr)) <= EPS)
    assert split >= reps // 4                                # the bands' own margins were searched and chosen
    assert np.mean(kept) >= 1 - DELTA - 2.33 * np.sqrt(DELTA * (1 - DELTA) / reps)

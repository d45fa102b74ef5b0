"""The key of a randomised rule's draw (solvers.fairness.mixture_draw): on rows of few distinct feature rows the kept
key realises the fitted rates on the fitting rows, and on the population those rows come from, far better than the
rule's first key; on rows it has not seen the draw stays uniform; a job's randomised rule records and uses it."""
from __future__ import annotations

import numpy as np
import torch

from solvers import Problem, solve
from solvers.constraints import CONSTRAINTS
from solvers.fairness.mixture_draw import best_key, candidate_keys, realised_error
from solvers.models.thresholded import row_draw

THRESHOLDS = np.array([[0.55, 0.25], [0.6, 0.3]])
CUMULATIVE = np.array([[0.4, 1.0], [0.7, 1.0]])
KINDS = ["tpr", "fpr"]


def discrete_population(n: int, rng: np.random.Generator, cells: int = 60):
    """Rows drawn from ``cells`` distinct feature rows (one-hot cell, the group's flag): score, label, group."""
    cell = rng.integers(0, cells, n)
    group = (cell % 2).astype(np.int64)
    score = (cell // 2) / (cells / 2)
    y = (rng.random(n) < 0.2 + 0.6 * score).astype(np.int64)
    X = np.zeros((n, cells + 1))
    X[np.arange(n), cell] = 1.0
    X[:, -1] = group
    return torch.as_tensor(X), score, y, group


def rates(decision: np.ndarray, y: np.ndarray, group: np.ndarray) -> np.ndarray:
    return np.array([[decision[(group == g) & (y == label)].mean() for label in (1, 0)] for g in (0, 1)])


def realised(X, key, score, y, group):
    u = row_draw(X, key).numpy()
    J = (CUMULATIVE[group] <= u[:, None]).sum(1).clip(max=1)
    return rates((score > THRESHOLDS[group, J]).astype(float), y, group)


def expected(score, y, group):
    w = np.diff(np.c_[np.zeros(2), CUMULATIVE], axis=1)
    return rates((w[group] * (score[:, None] > THRESHOLDS[group])).sum(1), y, group)


def test_the_kept_key_realises_the_fitted_rates_on_the_fitting_rows_and_on_their_population():
    """60 distinct feature rows: the first key's draw misses the expected TPR / FPR by a cell's mass; the kept one,
    chosen on 2,000 fitting rows, is within three hundredths on them and, over 8 samples, nearer the expectation on a
    fresh 50,000-row sample of the same population (every one of its feature rows is one the fitting rows hold)."""
    first_error, kept_error = [], []
    for seed in range(8):
        rng = np.random.default_rng(seed)
        X, score, y, group = discrete_population(2000, rng)
        first = torch.rand(X.shape[1], generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 1000
        keys = candidate_keys(first, len(y), seed)
        key, record = best_key(keys, [X], row_draw, CUMULATIVE, THRESHOLDS, score, y, group, KINDS)
        assert record["realised_error"] <= record["realised_error_first"] and record["keys_tried"] == len(keys)
        assert np.abs(realised(X, key, score, y, group) - expected(score, y, group)).max() < 0.03
        Xp, sp, yp, gp = discrete_population(50_000, np.random.default_rng(100 + seed))
        target = expected(sp, yp, gp)
        first_error.append(np.abs(realised(Xp, first, sp, yp, gp) - target).max())
        kept_error.append(np.abs(realised(Xp, key, sp, yp, gp) - target).max())
    assert np.mean(kept_error) < 0.5 * np.mean(first_error), (kept_error, first_error)


def test_the_error_is_the_distance_of_realised_from_expected_counts_per_group():
    """A draw that sends every row to the component the expectation weighs fully has no error; one that sends a
    group's rows all to its other component has that component's rate difference, in each kind."""
    score = np.array([0.1, 0.4, 0.7, 0.9, 0.1, 0.4, 0.7, 0.9])
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    group = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    cumulative = np.array([[1.0, 1.0], [1.0, 1.0]])         # component 0 only
    thresholds = np.array([[0.5, 0.05], [0.5, 0.05]])
    u = np.column_stack([np.full(8, 0.5), np.full(8, 0.5)])
    assert realised_error(u, cumulative, thresholds, score, y, group, KINDS).tolist() == [0.0, 0.0]
    half = np.array([[0.5, 1.0], [1.0, 1.0]])                # group 0 draws component 1 (t = 0.05) for u ≥ 0.5
    error = realised_error(np.column_stack([np.full(8, 0.9), np.full(8, 0.1)]), half, thresholds, score, y, group,
                           KINDS)
    # expected group 0: TPR ½·½ + ½·1 = 0.75, FPR ½·½ + ½·1 = 0.75; all at component 1: 1 and 1; at component 0: ½, ½
    np.testing.assert_allclose(error, [0.5, 0.5])


def test_on_rows_it_has_not_seen_the_kept_draw_is_uniform():
    """Continuous features, each fitting row twice (a bootstrap's twins): the keys are tried, and whichever is kept,
    the share of new rows with u < w is w within the coins' noise."""
    rng = np.random.default_rng(3)
    X = torch.as_tensor(np.repeat(rng.normal(size=(2000, 5)), 2, axis=0))
    first = torch.rand(5, generator=torch.Generator().manual_seed(3), dtype=torch.float64) * 1000
    score = np.repeat(rng.random(2000), 2)
    y = (rng.random(4000) < score).astype(np.int64)
    group = np.repeat(rng.integers(0, 2, 2000), 2)
    key, record = best_key(candidate_keys(first, 4000, 3), [X], row_draw, CUMULATIVE, THRESHOLDS, score, y, group,
                           KINDS)
    assert record["keys_tried"] == 64 and record["shared_draws"] == 0.5
    u = row_draw(torch.as_tensor(rng.normal(size=(200_000, 5))), key).numpy()
    for w in (0.1, 0.4, 0.7):
        assert abs((u < w).mean() - w) < 0.005


def test_fewer_keys_are_tried_on_many_rows():
    first = torch.zeros(3, dtype=torch.float64)
    assert len(candidate_keys(first, 1000, 0)) == 64 and len(candidate_keys(first, 10**6, 0)) == 4
    assert len(candidate_keys(first, 10**8, 0)) == 1 and torch.equal(candidate_keys(first, 10, 0)[0], first)


def test_a_jobs_randomised_rule_on_few_distinct_rows_keeps_the_key_nearest_its_fitted_rates():
    """Equalized odds on rows of 40 distinct feature rows: the rule records its draw, and its gaps on the rows it was
    fitted on as realised are those the LP fitted, within two hundredths."""
    rng = np.random.default_rng(11)
    n = 3000
    cell = rng.integers(0, 40, n)
    g = (cell % 2).astype(np.int64)
    X = np.zeros((n, 42), dtype=np.float32)
    X[np.arange(n), cell] = 1.0
    X[:, 40], X[:, 41] = g == 1, g == 0
    y = (rng.random(n) < 0.15 + 0.02 * (cell // 2) + 0.1 * g).astype(np.int64)
    kw = dict(group_names=["a", "b"], device="cpu")
    problem = Problem(X=X[:2000], y=y[:2000], group=g[:2000], constraints=[CONSTRAINTS.get("equalized_odds")(0.02)],
                      **kw)
    val = Problem(X=X[2000:], y=y[2000:], group=g[2000:], **kw)
    report = solve(problem, "group_thresholds", max_iterations=200, validation=val).model.net.report
    assert report["randomized"] and report["draw"]["realised_error"] <= report["draw"]["realised_error_first"]
    assert report["realised_gaps"]["equalized_odds"] <= report["gaps"]["equalized_odds"] + 0.02


def test_rows_that_are_all_distinct_keep_the_first_key_untried():
    rng = np.random.default_rng(4)
    X = torch.as_tensor(rng.normal(size=(3000, 4)))
    first = torch.rand(4, generator=torch.Generator().manual_seed(4), dtype=torch.float64) * 1000
    score, y, group = rng.random(3000), rng.integers(0, 2, 3000), rng.integers(0, 2, 3000)
    key, record = best_key(candidate_keys(first, 3000, 4), [X], row_draw, CUMULATIVE, THRESHOLDS, score, y, group,
                           KINDS)
    assert torch.equal(key, first) and record == {"keys_tried": 1, "shared_draws": 0.0}


def test_only_the_rows_the_draw_decides_are_drawn():
    """Rows whose every drawn component decides alike are not drawn: none here, so the first key is kept untried."""
    X = torch.as_tensor(np.repeat(np.eye(4), 50, axis=0))
    score = np.repeat([0.1, 0.9, 0.1, 0.9], 50)                 # below both or above both thresholds of each group
    group = np.repeat([0, 0, 1, 1], 50)
    first = torch.arange(4, dtype=torch.float64)
    key, record = best_key(candidate_keys(first, 200, 0), [X], row_draw, CUMULATIVE, THRESHOLDS, score,
                           np.zeros(200), group, KINDS)
    assert torch.equal(key, first) and record["keys_tried"] == 1

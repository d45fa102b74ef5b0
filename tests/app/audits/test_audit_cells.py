"""The rate metrics from cell counts against the solver library and scikit-learn, and their multinomial
bootstrap against the row bootstrap in distribution (a seeded simulation: deterministic, so it cannot flake; its
tolerances are what 4,000 replicates resolve, and a slightly different table is told apart)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ks_2samp
from sklearn import metrics as skm

from app.audits import cells
from app.audits.metrics import MetricSpec, Scored, bootstrap_all, on_cells, resamples
from solvers.auc.metrics import auc
from solvers.metrics import group_fairness, minority_rate

NAMES = ["a", "b", "c", "empty"]


def table(n: int, seed: int, flip: float = 0.0) -> Scored:
    """Four groups: "c" has no positive label (TPR undefined), "empty" has no rows."""
    rng = np.random.default_rng(seed)
    group = rng.choice(3, n, p=[0.6, 0.3, 0.1])
    y = np.where(group == 2, 0, rng.random(n) < 0.4 + 0.2 * group).astype(np.int64)
    logits = rng.normal(1.0 * y - 0.5 + 0.4 * group, 1.0)
    logits[rng.random(n) < flip] += 3.0
    return Scored(y, logits, group, NAMES)


def test_cell_metrics_match_the_solver_library_and_sklearn():
    s = table(500, 1)
    ref = group_fairness(s.y, s.pred, s.group, NAMES)

    def value(type_, **options):
        spec = MetricSpec(type=type_, **options)
        return spec.metric.compute(s, spec.options)

    dp, by_group = value("demographic_parity")
    assert dp == pytest.approx(ref["demographic_parity"])
    assert by_group["selection_rate"] == pytest.approx({**ref["demographic_parity_by_group"], "empty": None})
    eop, by_group = value("equal_opportunity")
    assert eop == pytest.approx(ref["equal_opportunity"]) and by_group["tpr"]["c"] is None
    eodds, by_group = value("equalized_odds")
    assert eodds == pytest.approx(ref["equalized_odds"])
    assert by_group["fpr"]["b"] == pytest.approx(ref["equalized_odds_by_group"]["b"]["fpr"])
    acc, by_group = value("accuracy")
    assert acc == pytest.approx(skm.accuracy_score(s.y, s.pred)) and by_group["accuracy"]["empty"] is None
    rows = s.group == 1
    assert by_group["accuracy"]["b"] == pytest.approx(skm.accuracy_score(s.y[rows], s.pred[rows]))
    bal, by_group = value("balanced_accuracy")
    assert bal == pytest.approx(skm.balanced_accuracy_score(s.y, s.pred))
    assert by_group["balanced_accuracy"]["a"] == pytest.approx(
        skm.balanced_accuracy_score(s.y[s.group == 0], s.pred[s.group == 0]))
    assert by_group["balanced_accuracy"]["c"] is None  # one label only
    for minority in (None, "b", "empty"):
        ours, shares = value("minority_rate", minority=minority)
        theirs = minority_rate(s.pred, s.group, NAMES, minority)
        assert ours == pytest.approx(theirs["minority_rate"])
        assert shares["share"] == pytest.approx({**theirs["minority_rate_by_group"], "empty": None})


def row_bootstrap_counts(s: Scored, n_boot: int, seed: int) -> np.ndarray:
    """The cell counts of ``n_boot`` row resamples (the rows themselves drawn, as the row bootstrap does)."""
    rows = np.random.default_rng(seed).integers(0, len(s.y), size=(n_boot, len(s.y)))
    index = (4 * s.group + 2 * s.y + s.pred)[rows] + 4 * len(NAMES) * np.arange(n_boot)[:, None]
    return np.bincount(index.ravel(), minlength=4 * len(NAMES) * n_boot).reshape(n_boot, len(NAMES), 2, 2)


STATS = {"demographic_parity": lambda c: cells.gap(cells.selection_rate(c)),
         "equal_opportunity": lambda c: cells.gap(cells.tpr(c)),
         "equalized_odds": cells.equalized_odds, "accuracy": cells.accuracy,
         "tpr of b": lambda c: cells.tpr(c)[..., 1]}
B = 4000
KS_LIMIT = np.sqrt(-np.log(1e-6 / 2) / 2) * np.sqrt(2 / B)  # two-sample KS at level 1e-6: 0.060 for B = 4,000


def test_multinomial_cells_match_the_row_bootstrap_in_distribution():
    s = table(300, 2)
    counts = cells.cell_counts(s.y, s.pred, s.group, len(NAMES))
    by_rows = row_bootstrap_counts(s, B, seed=10)
    by_cells = cells.resample(counts, B, seed=11)
    assert by_cells.shape == by_rows.shape and (by_cells.sum(axis=(1, 2, 3)) == 300).all()
    # the first two moments of the cell counts: n p and n (diag p − p pᵀ), within 5 standard errors
    p = counts.reshape(-1) / 300
    cov = 300 * (np.diag(p) - np.outer(p, p))
    for draws in (by_rows, by_cells):
        flat = draws.reshape(B, -1)
        assert np.all(np.abs(flat.mean(axis=0) - 300 * p) <= 5 * np.sqrt(np.diag(cov) / B) + 1e-12)
        assert np.allclose(np.cov(flat.T), cov, atol=5 * np.sqrt(2 / B) * np.max(np.diag(cov)))
    # every statistic's distribution, and its 95% interval within the Monte Carlo error of B replicates
    for name, stat in STATS.items():
        a, b = stat(by_rows), stat(by_cells)
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
        assert ks_2samp(a, b).statistic < KS_LIMIT, name
        spread = np.std(a)
        assert np.quantile(a, [0.025, 0.975]) == pytest.approx(np.quantile(b, [0.025, 0.975]), abs=0.25 * spread)
    # the test tells a different table apart: the row bootstrap of a table with 10 % of scores raised
    other = table(300, 2, flip=0.1)
    shifted = row_bootstrap_counts(other, B, seed=10)
    assert ks_2samp(STATS["accuracy"](shifted), STATS["accuracy"](by_cells)).statistic > KS_LIMIT


def test_bootstrap_all_gives_the_percentile_interval_of_the_cell_draws():
    """A rate metric that is not a rate gap (accuracy): the percentile interval of the cell draws (the rate gaps'
    are exact: test_rate_gap_intervals_are_the_job_reports_clopper_pearson)."""
    s = table(400, 3)
    specs = [MetricSpec(type="accuracy", threshold=0.5), MetricSpec(type="equal_opportunity"),
             MetricSpec(type="roc_auc")]
    out = bootstrap_all(specs, s, resamples(400, n_boot=60, seed=5))
    draws = cells.resample(cells.cell_counts(s.y, s.pred, s.group, 4), 60, 5)
    expected = np.quantile(cells.accuracy(draws), [0.025, 0.975])
    assert out[0]["ci"] == pytest.approx(list(expected))
    assert out[0]["by_group"]["accuracy"]["b"]["ci"] == pytest.approx(
        list(np.quantile(cells.group_accuracy(draws)[:, 1], [0.025, 0.975])))
    assert out[0]["by_group"]["accuracy"]["empty"] == {"value": None, "ci": None}
    assert out[1]["by_group"]["tpr"]["c"] == {"value": None, "ci": None}  # no positives: no value, no interval
    assert out[2]["ci"][0] < out[2]["value"] < out[2]["ci"][1] and out[2]["by_group"]["roc_auc"]["c"]["ci"] is None
    assert on_cells(specs[:2], cells.cell_counts(s.y, s.pred, s.group, 4), NAMES, 60, 5) == out[:2]
    assert bootstrap_all(specs, s, resamples(400, n_boot=60, seed=5)) == out  # reproducible


def test_auc_of_score_bins_is_exact_on_few_distinct_scores_and_within_the_tie_bound_otherwise():
    rng = np.random.default_rng(4)
    y = rng.random(5000) < 0.4
    rounded = np.round(rng.normal(y * 0.8, 1.0), 1)  # about 80 distinct scores: one bin each
    bins = cells.score_bins(rounded)
    assert cells.auc_of_bins(cells.binned_counts(y, bins, np.zeros(5000, int), 1)[0]) == pytest.approx(
        auc(y, rounded), abs=1e-12)
    f = rng.normal(y * 0.8, 1.0)
    c = cells.binned_counts(y, cells.score_bins(f), np.zeros(5000, int), 1)[0]
    bound = 0.5 * (c[0] * c[1]).sum() / (c[0].sum() * c[1].sum())
    assert abs(cells.auc_of_bins(c) - auc(y, f)) <= bound and 0 < bound < 0.01


def test_auc_intervals_match_the_row_bootstrap_in_distribution():
    """The AUC's binned multinomial draws, shifted by the run's binning error, against the exact AUC of row
    resamples: the same distribution (KS at level 1e-6 over 4,000 seeded replicates) and interval."""
    s = table(300, 6)
    rows = np.random.default_rng(12).integers(0, 300, size=(B, 300))
    by_rows = np.array([auc(s.y[r], s.logits[r]) for r in rows], dtype=float)
    out = bootstrap_all([MetricSpec(type="roc_auc")], s, resamples(300, n_boot=B, seed=13))[0]
    m = cells.n_score_bins(len(NAMES), B)
    counts = cells.binned_counts(s.y, cells.score_bins(s.logits, m), s.group, len(NAMES), m)
    draws = cells.pooled_auc_of_bins(cells.resample(counts, B, 13)) + out["value"] - cells.pooled_auc_of_bins(counts)
    assert ks_2samp(by_rows, draws).statistic < KS_LIMIT
    assert out["ci"] == pytest.approx(list(np.quantile(draws, [0.025, 0.975])))
    assert out["ci"] == pytest.approx(list(np.quantile(by_rows, [0.025, 0.975])), abs=0.25 * by_rows.std())


@pytest.mark.parametrize("type_", ["demographic_parity", "equal_opportunity", "equalized_odds"])
def test_rate_gap_intervals_are_the_job_reports_clopper_pearson(type_):
    """One metric, one interval method: an audit's DP / equal opportunity / equalized odds gap has the job
    fairness report's exact Clopper–Pearson interval for the same labels, predictions and groups, on the
    in-memory and the streamed (counts-only) path alike; its per-group rates have each cell's exact binomial
    interval. Neither depends on the resamples' number or seed."""
    from solvers.fairness.intervals import clopper_pearson, constraint_bounds
    from solvers.fairness.report import fairness_entries
    from solvers.spec import ConstraintSpec

    from app.audits.report import evaluate, evaluate_counts

    s = table(400, 3)
    family = ConstraintSpec(type=type_, tolerance=0.05).build().bind(NAMES, np.bincount(s.group, minlength=4))
    bound = constraint_bounds([family], s.y, s.logits, s.group, NAMES)[0]
    job = fairness_entries([family], s.y, s.logits, s.group, NAMES, {"test": np.arange(400)})[0]
    assert bound.method == job["method"] == "clopper_pearson" and job["test"]["ci"] == [bound.lo, bound.hi]
    spec = MetricSpec(type=type_, threshold=0.05)
    counts = cells.cell_counts(s.y, s.pred, s.group, len(NAMES))
    in_memory = bootstrap_all([spec], s, resamples(400, n_boot=60, seed=5))[0]
    assert in_memory["value"] == pytest.approx(bound.value) and in_memory["ci"] == job["test"]["ci"]
    assert bootstrap_all([spec], s, resamples(400, n_boot=7, seed=99))[0] == in_memory
    assert on_cells([spec], counts, NAMES, 60, 5)[0] == in_memory
    whole, streamed = evaluate([spec], s)["results"][0], evaluate_counts([spec], counts, NAMES)["results"][0]
    assert whole["ci"] == streamed["ci"] == job["test"]["ci"] and whole == streamed
    rows = {"selection_rate": (np.ones(400, bool), s.pred), "tpr": (s.y == 1, s.pred), "fpr": (s.y == 0, s.pred)}
    for stat, groups in in_memory["by_group"].items():
        mask, pred = rows[stat]
        n = np.bincount(s.group[mask], minlength=4)
        lo, hi = clopper_pearson(np.bincount(s.group[mask], weights=pred[mask], minlength=4), n, 0.05)
        for k, name in enumerate(NAMES):
            assert groups[name]["ci"] == (None if n[k] == 0 else pytest.approx([lo[k], hi[k]])), (stat, name)

"""bench.quality.frontier's summaries: per-cell statistics over seeds, the comparison with each peer, the targets."""
from bench.quality.frontier import (TOLERANCE, best_within, cell_stats, headline_verdicts, intervals, job_key,
                            versus_peers)


def _job(method: str, seed: int, accuracy: float, gap: float, dataset: str = "adult_sex") -> tuple[str, dict]:
    row = {"dataset": dataset, "constraint": "demographic_parity", "seed": seed, "method": method,
           "runs_as": "x", "test_accuracy": accuracy, "test_gap": gap, "test_accuracy_ci": [accuracy - 0.01,
           accuracy + 0.01], "test_gap_ci": [0.0, gap + 0.01], "cpu_s": 1.0 + seed, "wall_s": 2.0 + seed}
    return job_key(dataset, "demographic_parity", seed, method), row


def test_cell_statistics_average_over_seeds_and_count_errors_and_kept_seeds():
    jobs = dict([_job("gbdt fair_boosting", 0, 0.85, 0.01), _job("gbdt fair_boosting", 1, 0.87, 0.03),
                 _job("LightGBM", 0, 0.87, 0.18)])
    broken = _job("gbdt reductions", 0, 0, 0)[1]
    del broken["test_gap"]
    jobs["broken"] = {**broken, "error": "diverged"}
    stats = cell_stats(jobs)[("adult_sex", "demographic_parity")]
    fb = stats["gbdt fair_boosting"]
    assert fb["role"] == "ours" and fb["seeds"] == 2 and fb["errors"] == 0
    assert abs(fb["accuracy"]["mean"] - 0.86) < 1e-12 and fb["accuracy"]["ci_low"] is None  # 2 seeds: no interval
    assert fb["accuracy"]["ci_note"].startswith("too few seeds")
    assert fb["kept_share"] == 0.5 and fb["cpu_s"] == 1.5 and fb["job_ci"] is None and fb["time_limited"] == 0
    assert stats["LightGBM"]["role"] == "reference" and stats["LightGBM"]["job_ci"]["accuracy"] == [0.86, 0.88]
    assert stats["gbdt reductions"]["seeds"] == 0 and stats["gbdt reductions"]["errors"] == 1


def test_versus_peers_takes_our_most_accurate_method_at_an_equal_or_lower_gap():
    jobs = dict([_job("gbdt fair_boosting", 0, 0.860, 0.015), _job("gbdt group_thresholds", 0, 0.858, 0.005),
                 _job("gbdt erm", 0, 0.90, 0.0),  # a reference never counts, even at a low gap
                 _job("fairlearn EG(LightGBM)", 0, 0.855, 0.02), _job("OxonFair(LightGBM)", 0, 0.859, 0.01),
                 _job("fairlearn ThresholdOptimizer(LightGBM)", 0, 0.85, 0.001)])
    rows = {r["peer"]: r for r in versus_peers(cell_stats(jobs)[("adult_sex", "demographic_parity")])}
    assert set(rows) == {"fairlearn EG(LightGBM)", "OxonFair(LightGBM)", "fairlearn ThresholdOptimizer(LightGBM)"}
    assert rows["fairlearn EG(LightGBM)"]["ours"] == "gbdt fair_boosting" and rows["fairlearn EG(LightGBM)"]["met"]
    # at OxonFair's gap only group_thresholds qualifies, and it is less accurate
    assert rows["OxonFair(LightGBM)"]["ours"] == "gbdt group_thresholds" and not rows["OxonFair(LightGBM)"]["met"]
    assert rows["fairlearn ThresholdOptimizer(LightGBM)"]["ours"] is None
    assert not rows["fairlearn ThresholdOptimizer(LightGBM)"]["met"]
    best, stats = best_within(cell_stats(jobs)[("adult_sex", "demographic_parity")], TOLERANCE)
    assert best == "gbdt fair_boosting" and stats["accuracy"]["mean"] == 0.860


def test_headline_needs_accuracy_gap_and_a_tenth_of_the_time():
    eg = {"wall_s": 20.0, "cpu_s": 10.0}
    head = {"fairlearn EG(LightGBM)": eg, "ours": {
        "fast": {"test_accuracy": 0.857, "test_gap": 0.019, "wall_s": 1.9, "cpu_s": 1.0},
        "slow": {"test_accuracy": 0.860, "test_gap": 0.010, "wall_s": 2.1, "cpu_s": 1.0},
        "unfair": {"test_accuracy": 0.870, "test_gap": 0.021, "wall_s": 1.0, "cpu_s": 1.0},
        "failed": {"error": "failed: x"}}}
    verdicts = headline_verdicts(head)
    assert verdicts["fast"]["met"] and not verdicts["slow"]["met"] and not verdicts["unfair"]["met"]
    assert verdicts["slow"]["met_cpu"] and verdicts["slow"]["cpu_ratio"] == 0.1 and not verdicts["unfair"]["met_cpu"]
    assert "failed" not in verdicts and abs(verdicts["slow"]["wall_ratio"] - 0.105) < 1e-12


def test_intervals_give_an_exact_binomial_interval_around_the_accuracy():
    row = intervals(0.85, 1000, {"value": 0.01, "ci": [0.0, 0.03], "kept": True})
    lo, hi = row["test_accuracy_ci"]
    assert lo < 0.85 < hi and 0.02 < hi - lo < 0.05 and row["test_gap_ci"] == [0.0, 0.03]

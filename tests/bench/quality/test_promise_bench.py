"""bench.quality.promise's summary: kept shares, largest excess and the accuracy cost against the best violating model."""
from bench.quality.promise import job_key, summarise


def _job(method: str, seed: int, gap: float, accuracy: float, tolerance: float = 0.02) -> tuple[str, dict]:
    key = job_key("d", "demographic_parity", tolerance, "linear", seed, method)
    return key, {"dataset": "d", "constraint": "demographic_parity", "tolerance": tolerance, "model": "linear",
                 "seed": seed, "method": method, "test_gap": gap, "test_accuracy": accuracy, "time_s": 1.0}


def test_summary_counts_kept_jobs_excess_and_the_cost_against_the_best_violating_model():
    jobs = dict([_job("auto", 0, 0.015, 0.80), _job("auto", 1, 0.035, 0.82),
                 _job("ssg", 0, 0.05, 0.83), _job("ssg", 1, 0.01, 0.79), _job("plada", 0, 0.03, 0.85)])
    jobs["x"] = {**_job("plada", 1, 0, 0)[1], "error": "diverged"}
    jobs["x"].pop("test_gap")
    summary = summarise(jobs)
    auto, plada = summary["by_method"]["auto"], summary["by_method"]["plada"]
    assert auto["jobs"] == 2 and auto["kept_share"] == 0.5 and abs(auto["max_excess"] - 0.015) < 1e-12
    assert plada["errors"] == 1 and plada["kept_share"] == 0.0  # an error keeps nothing
    # seed 0: best violating 0.85 (plada) vs auto 0.80; seed 1: auto itself violates at 0.82 -> cost 0
    assert summary["auto_cells_with_a_violating_model"] == 2
    assert abs(summary["auto_median_cost_vs_best_violating"] - 0.025) < 1e-12


def test_the_guarantee_is_summarised_separately_where_it_is_verifiable():
    jobs = {}
    for seed, (verifiable, gap, accuracy) in enumerate([(True, 0.01, 0.80), (True, 0.03, 0.81), (False, 0.05, 0.7)]):
        key, job = _job("auto+guarantee", seed, gap, accuracy)
        jobs[key] = {**job, "guarantee": {"met": verifiable, "verifiable": verifiable, "predicted_width": [0.01]}}
        key, job = _job("ssg", seed, 0.04, 0.84)
        jobs[key] = job
    s = summarise(jobs)["by_method"]["auto+guarantee"]
    assert s["verifiable_jobs"] == 2 and s["kept_share_verifiable"] == 0.5
    assert abs(s["max_excess_verifiable"] - 0.01) < 1e-12 and abs(s["kept_share"] - 1 / 3) < 1e-12
    summary = summarise(jobs)
    # costs against ssg's 0.84: 0.04, 0.03 in the verifiable cells (median 0.035), 0.14 in the other one
    assert abs(summary["auto+guarantee_median_cost_vs_best_violating_verifiable"] - 0.035) < 1e-12
    assert summary["auto+guarantee_verifiable_cells_with_a_violating_model"] == 2
    assert abs(summary["auto+guarantee_median_cost_vs_best_violating"] - 0.04) < 1e-12


def test_the_zero_gap_ceiling_is_the_mean_keep_probability_over_the_cells():
    """Two seeds' test splits: a huge one (the zero-gap model keeps DP ≤ 0.02 surely) and one of 20 + 20 rows
    (it keeps it only when both groups select exactly as many: Σ_s Bin(20, ½)(s)² ≈ 0.176)."""
    import numpy as np
    from scipy.stats import binom

    floors = {"d|0": {"counts": [10**7, 10**7], "positives": [10**6, 10**6], "rate": 0.5, "tpr": 0.5, "fpr": 0.5,
                      "loss_sd": 0.5},
              "d|1": {"counts": [20, 20], "positives": [5, 5], "rate": 0.5, "tpr": 0.5, "fpr": 0.5, "loss_sd": 0.5}}
    jobs = dict([_job("auto", 0, 0.015, 0.80), _job("auto", 1, 0.035, 0.82), _job("ssg", 0, 0.01, 0.8)])
    summary = summarise(jobs, floors)
    exact = float(np.sum(binom.pmf(np.arange(21), 20, 0.5) ** 2))
    assert summary["cells"] == 2 and abs(summary["zero_gap_keeps_grid"] - (1 + exact) / 2) < 0.01
    assert abs(summary["by_method"]["auto"]["zero_gap_keeps"] - (1 + exact) / 2) < 0.01
    assert summary["by_method"]["ssg"]["zero_gap_keeps"] == 1.0
    assert summarise(jobs)["zero_gap_keeps_grid"] is None  # not computed: not reported


def test_headline_takes_the_median_of_back_to_back_pairs(monkeypatch):
    """--headline fits fairlearn then auto ``repeats`` times and reports the median of the pairs' ratios (wall and
    CPU), with each pair stored; the report shows the pairs and the other tables' rows."""
    import bench.quality.promise as promise

    walls = iter([10.0, 1.2, 20.0, 1.0, 8.0, 1.6])  # fairlearn, auto, ... -> ratios 0.12, 0.05, 0.2
    monkeypatch.setitem(promise.DATASETS, "adult_sex", (lambda: None, promise.DATASETS["adult_sex"][1]))
    monkeypatch.setattr(promise, "fit_fairlearn", lambda table, spec: {"time_s": next(walls), "cpu_s": 5.0,
                                                                       "test_accuracy": 0.84, "test_gap": 0.04})
    monkeypatch.setattr(promise, "ours", lambda table, spec: {"time_s": next(walls), "cpu_s": 0.4, "test_accuracy": 0.841,
                                                              "test_gap": 0.019, "selected": {"solver": "ssg"}})
    head = promise.headline("adult_sex", repeats=3)
    assert [round(p["time_ratio"], 6) for p in head["pairs"]] == [0.12, 0.05, 0.2]
    assert abs(head["time_ratio"] - 0.12) < 1e-12 and abs(head["cpu_ratio"] - 0.08) < 1e-12
    assert head["fairlearn"]["time_s"] == 10.0 and head["auto"]["time_s"] == 1.2 and head["same_models"]
    assert not head["meets_target"]  # 0.12 > 0.1
    md = "\n".join(promise._headline_section(head, {"compas_race": {**head, "measured_at": "t"}}))
    assert "median of 3 pairs fitted back to back: 0.120, 0.050, 0.200" in md and "| compas_race |" in md


def test_a_rerun_keeps_the_first_stored_figures_and_the_report_compares_them():
    """--rerun: the replacing job carries the stored figures as ``previous``; a second rerun keeps the first ones;
    the before/after section counts kept jobs and the largest excess from them."""
    import bench.quality.promise as promise

    key, old = _job("auto+guarantee", 0, 0.05, 0.80)
    first = promise._previous(old)
    assert first == {"previous": {"test_gap": 0.05, "test_accuracy": 0.80, "time_s": 1.0}}
    rerun = {**_job("auto+guarantee", 0, 0.015, 0.79)[1], **first, "measured_at": "t1"}
    assert promise._previous(rerun) == first  # the original, not the first rerun's figures
    jobs = {key: rerun, **dict([_job("ssg", 0, 0.04, 0.84)])}
    md = "\n".join(promise._reruns(jobs))
    assert "| auto+guarantee | 1 | 0 % | 100 % | 0.0300 | 0.0000 | 0.0400 | 0.0500 |" in md
    assert "loaded machine" in md and promise._reruns(dict([_job("ssg", 0, 0.04, 0.84)])) == []


def test_misses_are_classified_on_train_then_by_the_reference_on_the_same_test_split():
    from bench.quality.misses import CLASSES, classify

    _, job = _job("auto+guarantee", 0, 0.05, 0.8)
    assert classify({**job, "test_gap": 0.01}, 0.0) is None                                # kept
    assert classify({**job, "train_gap": 0.03, "validation_gap": 0.0}, 0.0) == CLASSES[0]  # over ε on train
    assert classify({**job, "train_gap": 0.001, "validation_gap": 0.1}, 0.03) == CLASSES[1]  # the reference misses too
    assert classify({**job, "train_gap": 0.001}, 0.01) == CLASSES[2]                        # it keeps: the model's
    assert classify({**job, "constraint": "equalized_odds", "train_gap": 0.0}, 0.03) == CLASSES[3]  # no EO reference

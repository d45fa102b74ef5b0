"""bench.promise's summary: kept shares, largest excess and the accuracy cost against the best violating model."""
from bench.promise import job_key, summarise


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

"""Sweep expansion and summaries (pure logic; the end-to-end path is in tests/integration/test_sweeps.py)."""
from __future__ import annotations

import math

import pytest
from scipy import stats

from app.models import Job
from app.sweeps.grid import GridError, SweepCreate, expand
from app.sweeps.report import safe_cell
from app.sweeps.summary import mean_ci, metric_range, pareto_front, summarize

BASE = {"dataset_id": "d", "target": "y", "positive_label": 1, "sensitive": ["s"],
        "constraints": [{"type": "demographic_parity", "tolerance": 0.1}], "solver": {"name": "plada"}}


def test_expansion_counts_chains_and_tolerance_order():
    req = SweepCreate.model_validate({"base": BASE, "warm_start": True, "grid": {
        "tolerances": [0.01, 0.1, 0.05], "seeds": [3, 4],
        "solvers": [{"name": "plada"}, {"name": "penalty"}], "params": {"eta": [0.1, 0.5]}}})
    jobs = expand(req)
    # plada × 2 etas + penalty (no eta) = 3 combos; × 2 seeds × 3 tolerances + 2 erm
    assert len(jobs) == 3 * 2 * 3 + 2
    chains: dict = {}
    for j in jobs:
        if j.chain:
            chains.setdefault(j.chain, []).append(j.point["tolerance"])
    assert len(chains) == 6 and all(t == [0.1, 0.05, 0.01] for t in chains.values())  # loosest first
    plada = [j for j in jobs if j.point["solver"] == "plada"]
    assert {j.spec.solver.params["eta"] for j in plada} == {0.1, 0.5}
    assert all(j.spec.split.seed == j.spec.seed == j.point["seed"] for j in jobs)
    assert all(c.tolerance == j.point["tolerance"] for j in jobs if j.point["solver"] != "erm"
               for c in j.spec.constraints)


def test_large_grids_need_allow_large():
    grid = {"tolerances": [i / 1000 for i in range(1, 101)], "seeds": list(range(6))}
    with pytest.raises(GridError) as err:
        expand(SweepCreate.model_validate({"base": BASE, "grid": grid}))
    assert err.value.loc == ("grid",) and "606" in err.value.msg
    assert len(expand(SweepCreate.model_validate({"base": BASE, "grid": grid, "allow_large": True}))) == 606


def test_mean_ci_is_the_student_t_interval():
    values = [0.8, 0.82, 0.85, 0.79]
    out = mean_ci(values)
    half = stats.t.ppf(0.975, 3) * stats.tstd(values) / 2
    assert out["mean"] == pytest.approx(0.815) and out["ci_high"] - out["mean"] == pytest.approx(half)
    assert mean_ci([None, float("nan")])["n"] == 0


def test_intervals_keep_to_the_metrics_range_and_need_three_seeds():
    """Issue 30 item 6: from 2 seeds the sweep report printed solver time [−546, 718] s and DP [−0.009, 0.061]."""
    two = mean_ci([5.0, 90.0], metric_range("solver_time_s"))
    assert two["mean"] == 47.5 and two["ci_low"] is None and two["ci_high"] is None
    assert two["ci_note"] == "too few seeds for an interval (2; 3 needed)"
    assert mean_ci([0.5])["ci_low"] is None and mean_ci([0.5])["ci_note"].startswith("too few seeds")
    dp = mean_ci([0.001, 0.002, 0.05], metric_range("demographic_parity"))  # the t interval reaches below 0
    assert dp["ci_low"] == 0.0 and 0.0 < dp["ci_high"] <= 1.0
    acc = mean_ci([0.97, 0.999, 0.9999], metric_range("accuracy"))
    assert acc["ci_high"] == 1.0 and acc["ci_low"] < acc["mean"]
    seconds = mean_ci([1.0, 2.0, 60.0], metric_range("solver_time_s"))
    assert seconds["ci_low"] == 0.0 and seconds["ci_high"] > 60.0
    assert metric_range("roc_auc") == metric_range("equalized_odds") == metric_range("minority_rate") == (0.0, 1.0)
    assert metric_range("log_loss") == metric_range("loss_gap") == metric_range("iterations") == (0.0, math.inf)


def test_the_sweep_report_says_when_seeds_are_too_few():
    from app.sweeps.report import _fmt

    assert _fmt(mean_ci([5.0, 90.0], metric_range("solver_time_s"))) == \
        "47.5 (too few seeds for an interval (2; 3 needed))"
    assert _fmt(mean_ci([0.001, 0.002, 0.05], metric_range("demographic_parity"))).startswith("0.01767 [0, ")


def _job(status, solver, tol, seed, acc=None, dp=None, error=None):
    metrics = {"test": {"accuracy": acc, "demographic_parity": dp, "n": 10}} if acc is not None else None
    return Job(id=f"{solver}-{tol}-{seed}", status=status, error=error, metrics=metrics,
               sweep_point={"solver": solver, "params": {}, "tolerance": tol, "seed": seed},
               result={"solver_time_s": 1.0, "iterations": 10} if metrics else None)


def test_partial_failure_and_pareto_front():
    jobs = [_job("succeeded", "a", 0.1, 0, 0.85, 0.08), _job("succeeded", "a", 0.1, 1, 0.87, 0.10),
            _job("succeeded", "a", 0.02, 0, 0.80, 0.02), _job("failed", "a", 0.02, 1, error="boom"),
            _job("succeeded", "b", 0.1, 0, 0.84, 0.12),  # dominated by a@0.1 (0.86, 0.09)
            _job("succeeded", "erm", None, 0, 0.90, 0.30)]
    out = summarize(jobs)
    assert out["status"] == "partial" and out["progress"]["failed"] == 1
    assert out["failures"] == [{"job_id": "a-0.02-1", "point": jobs[3].sweep_point, "error": "boom"}]
    a01 = next(p for p in out["points"] if p["solver"] == "a" and p["tolerance"] == 0.1)
    assert a01["metrics"]["test"]["accuracy"]["mean"] == pytest.approx(0.86)
    front = pareto_front(out["points"], "demographic_parity", "accuracy")
    assert [(p["solver"], p["tolerance"]) for p in front] == [("a", 0.02), ("a", 0.1), ("erm", None)]
    assert summarize([_job("running", "a", 0.1, 0)])["status"] == "running"
    assert summarize([_job("failed", "a", 0.1, 0, error="x")])["status"] == "failed"
    assert not math.isnan(out["points"][0]["solver_time_s"]["mean"])


def test_pareto_chart_of_an_unknown_metric_is_no_data():
    """bench.system.hostile: ``?y=<not a metric>`` answered 500 (KeyError 'mean'): only x was looked up."""
    from app.render.charts import sweeps as sweep_charts

    out = summarize([_job("succeeded", "a", 0.1, 0, 0.85, 0.08), _job("succeeded", "erm", None, 0, 0.90, 0.30)])
    assert len(sweep_charts.pareto(out, "demographic_parity", "accuracy").data) == 2
    for x, y in (("demographic_parity", "no_such"), ("no_such", "accuracy")):
        with pytest.raises(sweep_charts.NoData, match="no_such"):
            sweep_charts.pareto(out, x, y)


def test_formula_cells_are_escaped():
    assert safe_cell("=HYPERLINK(1)") == "'=HYPERLINK(1)" and safe_cell("-1+2") == "'-1+2"
    assert safe_cell("plada") == "plada" and safe_cell(-1.5) == -1.5


def _bomb(values_per_param: int, allow_large: bool) -> dict:
    """The issue's attack shape: a few KB of JSON whose parameter product is astronomically large."""
    names = ["batch_size", "eta", "tau", "alpha", "beta", "gamma0", "kappa", "u_max"]
    params = {n: [i + 1 for i in range(values_per_param)] for n in names}
    return {"base": BASE, "allow_large": allow_large,
            "grid": {"params": params, "tolerances": [0.01, 0.02, 0.05], "seeds": [0, 1, 2]}}


@pytest.mark.parametrize("allow_large", [False, True])
def test_grid_bomb_is_refused_by_arithmetic_before_anything_is_built(allow_large):
    import time

    from app.sweeps.grid import HARD_MAX_JOBS, grid_size

    request = SweepCreate.model_validate(_bomb(12, allow_large))  # 12^8 · 3 · 3 ≈ 3.9e9 jobs
    started = time.process_time()
    with pytest.raises(GridError) as err:
        expand(request)
    assert time.process_time() - started < 0.5
    assert err.value.loc == ("grid",) and str(12 ** 8 * 9 + 3) in err.value.msg
    assert f"more than {HARD_MAX_JOBS}" in err.value.msg  # allow_large or not: the hard ceiling
    # the count agrees with the built grid where the grid is small enough to build
    small = SweepCreate.model_validate({"base": BASE, "allow_large": True, "grid": {
        "solvers": [{"name": "plada"}, {"name": "penalty"}, {"name": "ssg"}],
        "params": {"eta": [0.1, 0.2, 0.3], "lr": [0.01, 0.1], "tolerance": [0.1, 0.2]}, "seeds": [1, 2]}})
    assert grid_size(small) == len(expand(small)) == (3 + 2 + 2) * 2 + 2


@pytest.mark.parametrize("grid, loc", [
    ({"tolerances": [0.01] * 101}, ("grid", "tolerances")),
    ({"seeds": list(range(101))}, ("grid", "seeds")),
    ({"solvers": [{"name": "plada"}] * 21}, ("grid", "solvers")),
    ({"params": {"eta": list(range(101))}}, ("grid", "params", "eta")),
    ({"params": {f"p{i}": [1] for i in range(17)}}, ("grid", "params")),
])
def test_grid_lists_are_capped_in_the_schema(grid, loc):
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as err:
        SweepCreate.model_validate({"base": BASE, "grid": grid, "allow_large": True})
    assert err.value.errors()[0]["loc"] == loc


def test_share_of_jobs_that_keep_every_tolerance_on_test():
    def kept(seed, *flags):
        job = _job("succeeded", "a", 0.05, seed, 0.8, 0.04)
        job.result["fairness"] = [{"type": "demographic_parity", "kept_on_test": f} for f in flags]
        return job

    jobs = [kept(0, True, True), kept(1, True, False), kept(2, True, None), kept(3, True, True)]
    point = summarize(jobs)["points"][0]
    assert point["kept_on_test"] == 0.5  # an undefined metric is not kept
    assert summarize([_job("succeeded", "a", 0.05, 0, 0.8, 0.04)])["points"][0]["kept_on_test"] is None


def test_the_ceiling_beside_the_kept_share_is_the_mean_least_zero_gap_chance():
    def job(seed, *chances):
        out = _job("succeeded", "a", 0.05, seed, 0.8, 0.04)
        out.result["fairness"] = [{"type": "demographic_parity", "kept_on_test": True,
                                   "test_noise_floor": None if c is None else {"keep_probability": c}}
                                  for c in chances]
        return out

    assert summarize([job(0, 0.9, 0.5), job(1, 0.7)])["points"][0]["zero_gap_keeps"] == pytest.approx(0.6)
    assert summarize([job(0, 0.9), job(1, None)])["points"][0]["zero_gap_keeps"] is None   # e.g. a loss gap

"""Issue 17's benchmark: does a job keep the fairness it was asked for on data the model has not seen?

Cells: dataset × constraint × tolerance × model × seed, with the datasets of :data:`DATASETS` (Adult by sex
and by race White vs non-White, COMPAS African-American vs Caucasian with race among the features, bank age
25–60 vs other), demographic
parity and equalized odds (and the BCE loss gap for MLPs), tolerances 0.01 / 0.02 / 0.05, seeds 0–4 (a seed
sets the split and the model seed, as sweeps do). In each cell, on the same split and encoding:

* each named solver of ``--solvers`` with its defaults as today (``max_iterations`` 2000);
* ``auto`` (:mod:`solvers.auto`), and ``auto`` with ``guarantee: {"confidence": 0.95}`` when the spec has it;
* fairlearn's ``ExponentiatedGradient(LogisticRegression)`` with the same bound (linear cells only).

Every method runs with ``--threads`` (default 1) torch and BLAS threads: on a shared machine more threads
thrash (Adult, 300 SSG iterations under a load of about 8 on 2 cores: 15.3 s with torch's 2 threads, 1.2 s with 1).

Per job: the exact test metric (ŷ = 1{f > 0}; fairlearn's own randomised predictions at ``random_state=0``),
test accuracy, time. Per method and cell group: the share of jobs whose test metric is ≤ the tolerance, the
largest excess, the mean test accuracy. Targets (issue 17): with the guarantee ≥ 95 % of jobs keep the
tolerance on test and none exceeds it by more than 0.01; the median accuracy cost of the guarantee against the
most accurate model of its cell that violates on test is ≤ 0.01 (both also over the cells where the guarantee
is verifiable at the validation split's size: ``guarantee.verifiable``); ``auto`` on Adult, sex, DP ≤ 0.02, linear,
seed 0 reaches fairlearn's test accuracy at a test gap ≤ 0.02 in at most 1/10 of fairlearn's time — both fitted
in the same invocation (``--headline``), back to back.

Jobs are stored as they finish in ``bench/quality/results/promise.json`` (keyed by cell and method; a run skips the
jobs already there, so a large grid can be run in parts) and the report ``promise.md`` is rewritten from
every stored job. Run::

    python -m bench.quality.promise --quick                          # one small cell (a smoke run)
    python -m bench.quality.promise --headline                       # the auto-vs-fairlearn figure alone (3 pairs, median)
    python -m bench.quality.promise --headline --headline-datasets adult_sex compas_race   # and the same spec on COMPAS
    python -m bench.quality.promise --frontier                       # fairlearn's linear models at test DP ≤ 0.02
    python -m bench.quality.promise --datasets compas_race --tolerances 0.02 0.05 --seeds 0 1
    python -m bench.quality.promise --report                         # rewrite promise.md from the stored jobs
    python -m bench.quality.promise --rerun --solvers --no-fairlearn ...   # auto / auto+guarantee again, before kept
    python -m bench.quality.promise --pooling --datasets compas_race adult_sex   # bench.quality.pooling: where to fit the correction
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch
from threadpoolctl import threadpool_limits

from bench.quality import misses, noise_floor, pooling
from bench.common.datasets import adult, bank, compas
from bench.quality.fairlearn_reference import fit as fit_fairlearn

RESULTS = Path(__file__).resolve().parent / "results"
STORE = RESULTS / "promise.json"
REPORT = RESULTS / "promise.md"
NAMED = ("ssg", "plada", "lagrangian", "penalty", "ipc", "alm", "ssl_alm")
KINDS = {"linear": ("demographic_parity", "equalized_odds"),
         "mlp": ("demographic_parity", "equalized_odds", "loss_gap")}


def _compas_two_races() -> pd.DataFrame:
    table = compas()
    return table[table["race"].isin(["African-American", "Caucasian"])].reset_index(drop=True)


#: name -> (loader, spec fields): the target, the sensitive column and its groups, the features
DATASETS: dict[str, tuple[Callable[[], pd.DataFrame], dict[str, Any]]] = {
    "adult_sex": (adult, {"target": "income", "positive_label": ">50K", "sensitive": ["sex"]}),
    "adult_race": (adult, {"target": "income", "positive_label": ">50K", "sensitive": ["race"],
                           "group_rules": {"race": {"values": {"White": ["White"]}, "other": "non-White"}}}),
    # COMPAS: African-American vs Caucasian; defendants' history and charge, not race itself or the COMPAS score
    "compas_race": (_compas_two_races, {
        "target": "two_year_recid", "positive_label": 1, "sensitive": ["race"],
        "features": ["race", "sex", "age", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count",
                     "c_charge_degree"]}),
    # bank: age 25–60 vs other; `duration` is known only after the call (UCI's advice: drop it)
    "bank_age": (bank, {"target": "y", "positive_label": "yes", "sensitive": ["age"],
                        "group_rules": {"age": {"ranges": {"25-60": [25, 61]}, "other": "other"}},
                        "features": ["age", "job", "marital", "education", "default", "housing", "loan", "contact",
                                     "month", "day_of_week", "campaign", "pdays", "previous", "poutcome",
                                     "emp.var.rate", "cons.price.idx", "cons.conf.idx", "euribor3m",
                                     "nr.employed"]}),
}


def spec_for(dataset: str, kind: str, tolerance: float, model: str, seed: int, solver: dict,
             guarantee: float | None = None) -> dict[str, Any]:
    constraint = {"type": kind, "tolerance": tolerance}
    if kind == "loss_gap":
        constraint["loss"] = "bce"
    spec = {**DATASETS[dataset][1], "model": {"type": model, "hidden": [64, 64]}, "objective": "logistic",
            "constraints": [constraint], "solver": solver, "split": {"test": 0.2, "validation": 0.2, "seed": seed},
            "seed": seed, "max_iterations": 2000, "time_limit_s": 600, "device": "cpu"}
    if guarantee is not None:
        spec["guarantee"] = {"confidence": guarantee}
    return spec


def guarantee_supported() -> bool:
    from solvers import ProblemSpec

    return "guarantee" in ProblemSpec.model_fields


def ours(table: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    """One FairSolve job: test accuracy and exact test metric, the validation / train ones beside, time: ``time_s``
    the solve's wall seconds (``solver_time_s``), ``cpu_s`` the CPU seconds of the whole job (encoding, solve,
    evaluation and fairness report: an upper bound on the solve's)."""
    from solvers import ProblemSpec, run

    kind = spec["constraints"][0]["type"]
    started, cpu = time.perf_counter(), time.process_time()
    try:
        out = run(table, ProblemSpec.model_validate(spec))
    except ArithmeticError as exc:  # a diverged named solver is a result of the benchmark, not an error of it
        return {"error": f"{type(exc).__name__}: {exc}"[:300], "time_s": time.perf_counter() - started}
    row = {"time_s": out.solver_time_s, "cpu_s": time.process_time() - cpu, "iterations": out.iterations,
           "test_accuracy": out.metrics["test"]["accuracy"], "test_gap": out.metrics["test"][kind],
           "validation_gap": out.metrics.get("validation", {}).get(kind), "train_gap": out.metrics["train"][kind]}
    selected = [t for t in out.tried if t.get("selected")]
    if selected:
        row["selected"] = {"solver": selected[0]["solver"], "params": selected[0]["params"],
                           "training_tolerances": selected[0]["training_tolerances"]}
        row["tried"] = len(out.tried)
    if out.guarantee is not None:
        row["guarantee"] = {k: out.guarantee.get(k) for k in ("met", "best_bound", "verifiable", "predicted_width")}
    return row


AIM_TOLERANCE = "auto+guarantee, aim tolerance"  # when_unverifiable "tolerance" (the default is "tightest")


def methods(model: str, kind: str, solvers: list[str], with_fairlearn: bool,
            aim_tolerance: bool = False) -> list[tuple[str, dict | None, float | None]]:
    """(method label, solver spec or None for fairlearn, guarantee confidence)."""
    out: list[tuple[str, dict | None, float | None]] = [(name, {"name": name}, None) for name in solvers]
    out.append(("auto", {"name": "auto"}, None))
    if guarantee_supported():
        out.append(("auto+guarantee", {"name": "auto"}, 0.95))
        if aim_tolerance:
            out.append((AIM_TOLERANCE, {"name": "auto"}, 0.95))
    if with_fairlearn and model == "linear" and kind in ("demographic_parity", "equalized_odds"):
        out.append(("fairlearn", None, None))
    return out


def job_key(dataset: str, kind: str, tolerance: float, model: str, seed: int, method: str) -> str:
    return f"{dataset}|{kind}|{tolerance}|{model}|{seed}|{method}"


def load_store() -> dict[str, Any]:
    """``{"jobs": {key: job}, "headline": {...} or None}`` as stored."""
    stored = json.loads(STORE.read_text()) if STORE.exists() else {}
    return {"jobs": stored.get("jobs", {}), "headline": stored.get("headline"), "frontier": stored.get("frontier"),
            "noise_floor": stored.get("noise_floor", {}), "headline_other_tables": stored.get("headline_other_tables", {}),
            "pooling": stored.get("pooling", {}), "references": stored.get("references", {})}


def save_store(store: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    STORE.write_text(json.dumps({**store, "summary": summarise(store["jobs"], store.get("noise_floor"))}, indent=1,
                                sort_keys=True))


def with_split_infos(store: dict[str, Any]) -> dict[str, Any]:
    """``store["noise_floor"]`` (:mod:`bench.quality.noise_floor`) and ``store["references"]`` (:func:`bench.quality.misses.references`)
    completed for every (dataset, seed) of the stored jobs."""
    cells = {(j["dataset"], j["seed"]) for j in store["jobs"].values()}
    tables: dict[str, pd.DataFrame] = {}
    for key, complete in (("noise_floor", noise_floor.infos_for), ("references", misses.references)):
        store[key] = complete(cells, store.get(key) or {},
                              lambda d, s: spec_for(d, "demographic_parity", 0.02, "linear", s, {"name": "erm"}),
                              lambda d: tables.setdefault(d, DATASETS[d][0]()))
    return store


def zero_gap_keeps(job: dict, floors: dict[str, Any] | None) -> float | None:
    """The zero-gap model's probability of keeping the job's tolerance on its test split (None: not computed)."""
    info = (floors or {}).get(f"{job['dataset']}|{job['seed']}")
    return None if info is None else noise_floor.keeps(info, job["constraint"], job["tolerance"])["keep_probability"]


def run_grid(args: argparse.Namespace) -> None:
    store = load_store()
    jobs = store["jobs"]
    for dataset in args.datasets:
        table = DATASETS[dataset][0]()
        for model in args.models:
            for kind in [k for k in args.constraints if k in KINDS[model]]:
                for tolerance in args.tolerances:
                    for seed in args.seeds:
                        for method, solver, confidence in methods(model, kind, args.solvers, not args.no_fairlearn,
                                                                  args.aim_tolerance):
                            key = job_key(dataset, kind, tolerance, model, seed, method)
                            if (key in jobs and not args.rerun) or (args.methods and method not in args.methods):
                                continue
                            spec = spec_for(dataset, kind, tolerance, model, seed, solver or {"name": "erm"},
                                            confidence)
                            if method == AIM_TOLERANCE:
                                spec["guarantee"]["when_unverifiable"] = "tolerance"
                            row = fit_fairlearn(table, spec) if solver is None else ours(table, spec)
                            jobs[key] = {"dataset": dataset, "constraint": kind, "tolerance": tolerance,
                                         "model": model, "seed": seed, "method": method, **row,
                                         "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                         **_previous(jobs.get(key))}
                            save_store(store)
                            print(key, {k: row.get(k) for k in ("test_accuracy", "test_gap", "time_s")}, flush=True)


#: what a rerun job keeps of the stored one it replaces (the first stored: a second rerun keeps the original)
PREVIOUS = ("test_gap", "test_accuracy", "train_gap", "validation_gap", "time_s")


def _previous(old: dict | None) -> dict[str, Any]:
    """``{"previous": ...}`` for a job that replaces ``old`` (``--rerun``), else nothing."""
    if not old or "test_gap" not in old:
        return {}
    return {"previous": old.get("previous") or {k: old[k] for k in PREVIOUS if k in old}}


def _as_before(jobs: dict[str, dict]) -> dict[str, dict]:
    """The stored jobs with every rerun job's figures as they were before its first rerun."""
    return {key: {**job, **job["previous"]} if "previous" in job else job for key, job in jobs.items()}


HEADLINE_DATASETS = ("adult_sex", "compas_race", "bank_age")


def headline(dataset: str = "adult_sex", repeats: int = 3) -> dict[str, Any]:
    """auto vs fairlearn on ``dataset`` (the target's: Adult, sex), DP ≤ 0.02, linear, seed 0, fitted back to back
    ``repeats`` times in this invocation (fairlearn, then auto). On a shared machine one pair's wall-time ratio
    moves with the load of the moment, so the figure is the median of the pairs' ratios (each pair's is stored);
    the CPU-time ratio beside it (auto's whole job, set-up and evaluation included, against fairlearn's fit) does
    not depend on how many other processes share the cores."""
    table = DATASETS[dataset][0]()
    spec = spec_for(dataset, "demographic_parity", 0.02, "linear", 0, {"name": "auto"})
    pairs = []
    for _ in range(repeats):
        pairs.append((fit_fairlearn(table, spec), ours(table, spec)))
    pair_rows = [{"fairlearn_s": f["time_s"], "auto_s": a["time_s"], "time_ratio": a["time_s"] / f["time_s"],
                  "fairlearn_cpu_s": f["cpu_s"], "auto_cpu_s": a["cpu_s"], "cpu_ratio": a["cpu_s"] / f["cpu_s"]}
                 for f, a in pairs]
    theirs, mine = pairs[0][0], pairs[0][1]  # the models are the same in every pair: same split and seeds
    median = statistics.median
    theirs = {**theirs, "time_s": median(r["fairlearn_s"] for r in pair_rows),
              "cpu_s": median(r["fairlearn_cpu_s"] for r in pair_rows)}
    mine = {**mine, "time_s": median(r["auto_s"] for r in pair_rows), "cpu_s": median(r["auto_cpu_s"] for r in pair_rows)}
    out = {"dataset": dataset, "fairlearn": theirs, "auto": mine, "pairs": pair_rows,
           "same_models": all(a.get("test_accuracy") == mine.get("test_accuracy") and f["test_accuracy"] ==
                              theirs["test_accuracy"] for f, a in pairs),
           "time_ratio": median(r["time_ratio"] for r in pair_rows),
           "cpu_ratio": median(r["cpu_ratio"] for r in pair_rows),
           "accuracy_difference": mine["test_accuracy"] - theirs["test_accuracy"],
           "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out["meets_target"] = bool(out["accuracy_difference"] >= 0 and mine["test_gap"] <= 0.02
                               and out["time_ratio"] <= 0.1)
    return out


FRONTIER_BOUNDS = (0.005, 0.01, 0.02)


def frontier(tolerance: float = 0.02) -> dict[str, Any]:
    """How accurate can a linear model be at test DP ≤ ``tolerance`` on the headline's split (Adult, sex, seed 0)?
    fairlearn's ExponentiatedGradient at the bounds :data:`FRONTIER_BOUNDS`: its randomised classifier and
    every deterministic logistic regression it fitted on the way (its ``predictors_``, Lagrangian reweightings
    of the training rows). Among those with test DP ≤ ``tolerance`` the most accurate one ON TEST is kept —
    an optimistic, test-selected figure for what these linear models can reach at that gap."""
    import warnings

    from fairlearn.metrics import demographic_parity_difference
    from fairlearn.reductions import DemographicParity, ExponentiatedGradient
    from sklearn.linear_model import LogisticRegression

    from solvers import ProblemSpec, prepare

    spec = spec_for("adult_sex", "demographic_parity", tolerance, "linear", 0, {"name": "auto"})
    data = prepare(adult(), ProblemSpec.model_validate(spec))
    X, y, group, train, test = data.X, data.y, data.group, data.splits["train"], data.splits["test"]
    rows = []
    for bound in FRONTIER_BOUNDS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = ExponentiatedGradient(LogisticRegression(max_iter=1000), DemographicParity(
                difference_bound=bound)).fit(X[train], y[train], sensitive_features=group[train])
        outputs = [("randomised", model.predict(X[test], random_state=0))]
        outputs += [("predictor", p.predict(X[test])) for p in model.predictors_]
        for kind, pred in outputs:
            rows.append({"bound": bound, "kind": kind, "test_accuracy": float((pred == y[test]).mean()),
                         "test_gap": float(demographic_parity_difference(y[test], pred,
                                                                         sensitive_features=group[test]))})
    within = [r for r in rows if r["test_gap"] <= tolerance]
    best = max(within, key=lambda r: r["test_accuracy"]) if within else None
    return {"tolerance": tolerance, "models": len(rows), "within": len(within), "best_within": best,
            "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def _kept(job: dict) -> bool:
    return job.get("test_gap") is not None and job["test_gap"] <= job["tolerance"] + 1e-12


def summarise(jobs: dict[str, dict], floors: dict[str, Any] | None = None) -> dict[str, Any]:
    """Per method: jobs, share kept on test, largest excess, mean accuracy; the guarantee's targets; with the
    split infos ``floors`` (:func:`with_split_infos`), the zero-gap model's mean keep probability over the cells
    of each method's jobs (the best share any method could keep on them) and over every cell of the grid."""
    by_method: dict[str, list[dict]] = {}
    for job in jobs.values():
        by_method.setdefault(job["method"], []).append(job)
    table = {}
    for method, rows in sorted(by_method.items()):
        done = [r for r in rows if "test_gap" in r]
        excess = [max(0.0, r["test_gap"] - r["tolerance"]) for r in done]
        table[method] = {"jobs": len(rows), "errors": len(rows) - len(done),
                         "kept_share": sum(map(_kept, done)) / len(rows) if rows else None,
                         "max_excess": max(excess) if excess else None,
                         "mean_test_accuracy": statistics.fmean(r["test_accuracy"] for r in done) if done else None,
                         "median_time_s": statistics.median(r["time_s"] for r in done) if done else None}
        ceiling = [zero_gap_keeps(r, floors) for r in rows]
        if floors and None not in ceiling:
            table[method]["zero_gap_keeps"] = statistics.fmean(ceiling)
        asked = [r["guarantee"] for r in done if r.get("guarantee")]
        if asked:
            table[method]["guarantee_met_share"] = sum(bool(g.get("met")) for g in asked) / len(asked)
            verifiable = [r for r in done if _verifiable(r)]
            table[method]["verifiable_jobs"] = len(verifiable)
            table[method]["kept_share_verifiable"] = (sum(map(_kept, verifiable)) / len(verifiable)
                                                      if verifiable else None)
            table[method]["max_excess_verifiable"] = (max(max(0.0, r["test_gap"] - r["tolerance"])
                                                          for r in verifiable) if verifiable else None)
    out: dict[str, Any] = {"by_method": table}
    cells: dict[tuple, list[dict]] = {}
    for job in jobs.values():
        cells.setdefault((job["dataset"], job["constraint"], job["tolerance"], job["model"], job["seed"]),
                         []).append(job)
    ceiling = [zero_gap_keeps(rows[0], floors) for rows in cells.values()]
    out["zero_gap_keeps_grid"] = statistics.fmean(ceiling) if floors and ceiling and None not in ceiling else None
    out["cells"] = len(cells)
    for method in ("auto", "auto+guarantee"):
        costs, verifiable_costs = [], []
        for rows in cells.values():
            mine = [r for r in rows if r["method"] == method and "test_gap" in r]
            violating = [r["test_accuracy"] for r in rows if "test_gap" in r and not _kept(r)]
            if mine and violating:
                costs.append(max(violating) - mine[0]["test_accuracy"])
                if any(_verifiable(r) for r in rows):
                    verifiable_costs.append(costs[-1])
        out[f"{method}_median_cost_vs_best_violating"] = statistics.median(costs) if costs else None
        out[f"{method}_cells_with_a_violating_model"] = len(costs)
        out[f"{method}_median_cost_vs_best_violating_verifiable"] = (statistics.median(verifiable_costs)
                                                                     if verifiable_costs else None)
        out[f"{method}_verifiable_cells_with_a_violating_model"] = len(verifiable_costs)
    return out


def _verifiable(job: dict) -> bool:
    """The job's guarantee could pass at its validation size: the bound's predicted width w_0 < the tolerance
    (:mod:`solvers.fairness.guarantee`); the validation and test splits are the same size, so a test gap of
    a fair model has about the same spread."""
    return bool((job.get("guarantee") or {}).get("verifiable"))


def write_report(jobs: dict[str, dict], head: dict | None, front: dict | None = None,
                 floors: dict[str, Any] | None = None, other_heads: dict[str, dict] | None = None,
                 pooled: dict[str, dict] | None = None, refs: dict[str, float] | None = None) -> None:
    summary = summarise(jobs, floors)
    md = ["# Keep the promise (issue 17): exact test metric vs the requested tolerance", "",
          "Generated by `python -m bench.quality.promise`; every job is in `promise.json`. "
          "Kept = exact test metric ≤ tolerance. One torch and one BLAS thread per method (`--threads 1`) on a "
          "2-core machine shared with other work: times are indicative, ratios are measured within one invocation, "
          "back to back.", "",
          "COMPAS uses race among its features: without it (the benchmark's earlier feature set) every method's "
          "model at DP ≤ 0.02 on the training rows has test accuracy 0.53–0.58 and balanced accuracy 0.51–0.57 "
          "(auto, ssg and the Lagrangian with σ(f/T) at T = 0.25 or 0.1, fairlearn: 0.567–0.577), because the "
          "features that predict recidivism (priors, age) are the ones whose distribution differs by race; with "
          "race a linear model can shift its threshold per group (disparate treatment, as group-threshold "
          "post-processing does) and keeps about 0.67.", ""]
    older = [j for j in jobs.values() if j.get("auto_refine_iterations")]
    if older:
        md += [f"{len(older)} auto jobs ({', '.join(sorted({j['dataset'] for j in older}))}) ran with "
               f"`refine_iterations` {older[0]['auto_refine_iterations']}, auto's previous default; the others "
               "with 100. Jobs are stored as they finish and runs skip stored jobs, so the times in one table can "
               "come from runs under different loads.", ""]
    if head is not None:
        md += _headline_section(head, other_heads or {})
    if front is not None and front.get("best_within"):
        b = front["best_within"]
        md += [f"Linear frontier on the same split (`--frontier`): of the {front['models']} linear models fairlearn "
               f"fits at bounds {', '.join(map(str, FRONTIER_BOUNDS))} (its randomised classifiers and every "
               f"logistic regression among its `predictors_`), {front['within']} have test DP ≤ "
               f"{front['tolerance']}; the most accurate of them, selected on test (optimistic), reaches "
               f"{b['test_accuracy']:.4f} (test DP {b['test_gap']:.4f}; a {b['kind']} at bound {b['bound']})"
               + ("" if head is None else
                  f", {'below' if b['test_accuracy'] < head['auto']['test_accuracy'] else 'not below'} auto's "
                  f"{head['auto']['test_accuracy']:.4f}; fairlearn's {head['fairlearn']['test_accuracy']:.4f} above "
                  f"comes with test DP {head['fairlearn']['test_gap']:.4f}") + ".", ""]
    md += ["## Per method, over every stored job", "",
           "| method | jobs | errors | kept on test | zero-gap model keeps | largest excess | mean test accuracy | "
           "median time |", "|---|---|---|---|---|---|---|---|"]
    for method, s in summary["by_method"].items():
        md.append(f"| {method} | {s['jobs']} | {s['errors']} | {_pct(s['kept_share'])} | "
                  f"{_pct(s.get('zero_gap_keeps'))} | {_num(s['max_excess'])} | "
                  f"{_num(s['mean_test_accuracy'])} | {_num(s['median_time_s'], 2)} s |")
    if summary.get("zero_gap_keeps_grid") is not None:
        md += ["", "**What the test splits can show** (`solvers.fairness.noise_floor`, `bench/quality/noise_floor.py`): a "
               "model whose population gap is exactly 0 — every group at the pooled test rates of an unconstrained "
               "logistic regression (selection rate; TPR and FPR) — keeps the tolerance on a test split of the "
               "cell's group sizes with the probability in the column \"zero-gap model keeps\" (20,000 binomial "
               "draws per cell; per method, the mean over the cells of its jobs). Over the "
               f"{summary['cells']} cells of this grid the mean is **{_pct(summary['zero_gap_keeps_grid'])}**: the "
               "best share of jobs any method could keep, so a target of 95 % kept on test is "
               + ("attainable" if summary["zero_gap_keeps_grid"] >= 0.95 else "**not attainable**")
               + " on these test splits, whatever the model."]
    md += [f"\n{method}: the guarantee was met (bound ≤ tolerance on validation) in "
           f"{_pct(s['guarantee_met_share'])} of its jobs. It was verifiable (the bound's width predicted at the "
           f"validation split's size below the tolerance, so some model could pass) in {s['verifiable_jobs']} jobs; "
           f"of these {_pct(s['kept_share_verifiable'])} kept the tolerance on test, largest excess "
           f"{_num(s['max_excess_verifiable'])}." for method, s in summary["by_method"].items()
           if "guarantee_met_share" in s and method != AIM_TOLERANCE]
    md += ["", "Median test-accuracy cost against the most accurate model of the same cell that violates on test: "
           f"auto {_num(summary['auto_median_cost_vs_best_violating'])} "
           f"({summary['auto_cells_with_a_violating_model']} cells), auto+guarantee "
           f"{_num(summary['auto+guarantee_median_cost_vs_best_violating'])} "
           f"({summary['auto+guarantee_cells_with_a_violating_model']} cells); over the cells where the guarantee "
           f"was verifiable: auto {_num(summary['auto_median_cost_vs_best_violating_verifiable'])} "
           f"({summary['auto_verifiable_cells_with_a_violating_model']} cells), auto+guarantee "
           f"{_num(summary['auto+guarantee_median_cost_vs_best_violating_verifiable'])} "
           f"({summary['auto+guarantee_verifiable_cells_with_a_violating_model']} cells).", ""]
    md += _reruns(jobs, floors)
    md += pooling.report(pooled or {})
    md += misses.report(jobs, refs or {}, ("auto", "auto+guarantee"))
    md += _verifiability(jobs, floors)
    md += _aims(jobs)
    groups: dict[tuple, dict[str, list[dict]]] = {}
    for job in jobs.values():
        cell = (job["dataset"], job["model"], job["constraint"], job["tolerance"])
        groups.setdefault(cell, {}).setdefault(job["method"], []).append(job)
    md += ["## Per dataset, model, constraint and tolerance (over seeds)", "",
           "| dataset | model | constraint | tolerance | method | seeds | kept on test | mean test gap | "
           "mean test accuracy | zero-gap model keeps |", "|---|---|---|---|---|---|---|---|---|---|"]
    for cell in sorted(groups):
        for method, rows in sorted(groups[cell].items()):
            done = [r for r in rows if "test_gap" in r]
            ceiling = [zero_gap_keeps(r, floors) for r in rows]
            md.append(f"| {' | '.join(map(str, cell))} | {method} | {len(rows)} | "
                      f"{_pct(sum(map(_kept, done)) / len(rows))} | "
                      f"{_num(statistics.fmean(r['test_gap'] for r in done) if done else None)} | "
                      f"{_num(statistics.fmean(r['test_accuracy'] for r in done) if done else None)} | "
                      f"{_pct(statistics.fmean(ceiling) if None not in ceiling else None)} |")
    REPORT.write_text("\n".join(md) + "\n")


def _headline_section(head: dict, other_heads: dict[str, dict]) -> list[str]:
    """The auto-vs-fairlearn section: the target's table (Adult, sex) and the same spec on other tables."""
    a, f = head["auto"], head["fairlearn"]
    pairs = head.get("pairs") or []
    md = ["## Adult, sex, DP ≤ 0.02, linear, seed 0: auto vs fairlearn (same run, back to back)", "",
          "| method | test accuracy | test DP | time (wall, median) | CPU |", "|---|---|---|---|---|",
          f"| fairlearn ExponentiatedGradient | {f['test_accuracy']:.4f} | {f['test_gap']:.4f} | "
          f"{f['time_s']:.2f} s | {_num(f.get('cpu_s'), 2)} s |",
          f"| auto (selected {a.get('selected', {}).get('solver')}) | {a['test_accuracy']:.4f} | "
          f"{a['test_gap']:.4f} | {a['time_s']:.2f} s | {_num(a.get('cpu_s'), 2)} s |", "",
          f"Time ratio auto / fairlearn: **{head['time_ratio']:.3f}** (target ≤ 0.1"
          + (f"; median of {len(pairs)} pairs fitted back to back: "
             f"{_ratios(pairs)}; CPU-time ratio {head['cpu_ratio']:.3f}, "
             "auto's whole job — encoding, solve, evaluation — against fairlearn's fit" if pairs else "")
          + f"); accuracy difference {head['accuracy_difference']:+.4f} (target ≥ 0 at test DP ≤ 0.02); target met: "
          f"**{'yes' if head['meets_target'] else 'no'}** (measured {head['measured_at']}).", ""]
    if other_heads:
        md += ["The same spec (DP ≤ 0.02, linear, seed 0, `--headline-datasets`) on other tables:", "",
               "| table | fairlearn test accuracy / DP | auto (selected) test accuracy / DP | wall ratio (median) | "
               "CPU ratio | measured |", "|---|---|---|---|---|---|"]
        for name, h in sorted(other_heads.items()):
            md.append(f"| {name} | {h['fairlearn']['test_accuracy']:.4f} / {h['fairlearn']['test_gap']:.4f} | "
                      f"{h['auto']['test_accuracy']:.4f} / {h['auto']['test_gap']:.4f} "
                      f"({h['auto'].get('selected', {}).get('solver')}) | {h['time_ratio']:.3f} "
                      f"({_ratios(h['pairs'])}) | {h['cpu_ratio']:.3f} | "
                      f"{h['measured_at']} |")
        md.append("")
    return md


def _ratios(pairs: list[dict]) -> str:
    return ", ".join(f"{p['time_ratio']:.3f}" for p in pairs)


def _reruns(jobs: dict[str, dict], floors: dict[str, Any] | None = None) -> list[str]:
    """Jobs rerun with ``--rerun`` against what was stored before (same cells, every method of them kept as the
    comparison for the cost): kept share, largest excess, median cost against the best violating model."""
    rerun = [j for j in jobs.values() if "previous" in j]
    if not rerun:
        return []
    cells = {(j["dataset"], j["constraint"], j["tolerance"], j["model"], j["seed"]) for j in rerun}
    after = {k: j for k, j in jobs.items()
             if (j["dataset"], j["constraint"], j["tolerance"], j["model"], j["seed"]) in cells}
    sums = {"before": summarise(_as_before(after), floors), "after": summarise(after, floors)}
    when = sorted(j["measured_at"] for j in rerun if j.get("measured_at"))
    md = ["## Rerun rows: before and after (`--rerun`)", "",
          f"{len(rerun)} jobs in {len(cells)} cells rerun {when[0]} – {when[-1]} (loaded machine) on the current code; "
          "\"before\" is what was stored for the same jobs. The cost is against the most accurate model of the cell "
          "that violates on test (every method stored in these cells)"
          + (f"; a zero-gap model keeps {_pct(sums['after']['zero_gap_keeps_grid'])} of these cells"
             if sums["after"].get("zero_gap_keeps_grid") is not None else "") + ".", "",
          "| method | jobs | kept before | kept after | largest excess before | after | median cost before | after |",
          "|---|---|---|---|---|---|---|---|"]
    for method in sorted({j["method"] for j in rerun}):
        b, a = (sums[side]["by_method"][method] for side in ("before", "after"))
        cost = [sums[side].get(f"{method}_median_cost_vs_best_violating") for side in ("before", "after")]
        md.append(f"| {method} | {a['jobs']} | {_pct(b['kept_share'])} | {_pct(a['kept_share'])} | "
                  f"{_num(b['max_excess'])} | {_num(a['max_excess'])} | {_num(cost[0])} | {_num(cost[1])} |")
    return md + [""]


def _verifiability(jobs: dict[str, dict], floors: dict[str, Any] | None = None) -> list[str]:
    """Per dataset, constraint and tolerance: the guarantee's predicted bound width w_0 (mean over seeds) against
    the tolerance — a tolerance below w_0 cannot be verified on a validation split of that size."""
    cells: dict[tuple, list[dict]] = {}
    for job in jobs.values():
        width = (job.get("guarantee") or {}).get("predicted_width") if job["method"] == "auto+guarantee" else None
        if width and width[0] is not None:
            cells.setdefault((job["dataset"], job["model"], job["constraint"], job["tolerance"]), []).append(job)
    if not cells:
        return []
    md = ["## Can the guarantee be verified? (auto+guarantee, 95 %)", "",
          "| dataset | model | constraint | tolerance | seeds | predicted bound width w_0 | verifiable | met | "
          "kept on test | zero-gap model keeps |", "|---|---|---|---|---|---|---|---|---|---|"]
    for cell in sorted(cells):
        rows = cells[cell]
        ceiling = [zero_gap_keeps(r, floors) for r in rows]
        md.append(f"| {' | '.join(map(str, cell))} | {len(rows)} | "
                  f"{_num(statistics.fmean(r['guarantee']['predicted_width'][0] for r in rows))} | "
                  f"{_pct(sum(map(_verifiable, rows)) / len(rows))} | "
                  f"{_pct(sum(bool(r['guarantee'].get('met')) for r in rows) / len(rows))} | "
                  f"{_pct(sum(map(_kept, rows)) / len(rows))} | "
                  f"{_pct(statistics.fmean(ceiling) if None not in ceiling else None)} |")
    return md + [""]


def _aims(jobs: dict[str, dict]) -> list[str]:
    """auto+guarantee (an unverifiable tolerance aimed at the tightest gap, the default) against
    :data:`AIM_TOLERANCE` (aimed at the tolerance) on the same unverifiable jobs (cell and seed)."""
    pairs = [(job, jobs.get(key.replace("|auto+guarantee", f"|{AIM_TOLERANCE}")))
             for key, job in jobs.items() if job["method"] == "auto+guarantee" and "test_gap" in job
             and not _verifiable(job)]
    pairs = [(a, b) for a, b in pairs if b is not None and "test_gap" in b]
    if not pairs:
        return []
    md = ["## An unverifiable tolerance: the tightest aim against the tolerance aim (same jobs)", "",
          f"`python -m bench.quality.promise --aim-tolerance ...` also runs `{AIM_TOLERANCE}` (`when_unverifiable: "
          "\"tolerance\"`); beside it `auto+guarantee` (the default `\"tightest\"`), on the same unverifiable "
          "jobs.", "", "| dataset | constraint | tolerance | jobs | aim | kept on test | mean test gap | largest test gap "
          "| mean test accuracy |", "|---|---|---|---|---|---|---|---|---|"]
    cells: dict[tuple, list[tuple[dict, dict]]] = {}
    for a, b in pairs:
        cells.setdefault((a["dataset"], a["constraint"], a["tolerance"]), []).append((a, b))
    for cell, rows in sorted(cells.items()):
        for label, side in (("tightest", 0), ("tolerance", 1)):
            done = [r[side] for r in rows]
            md.append(f"| {' | '.join(map(str, cell))} | {len(rows)} | {label} | "
                      f"{_pct(sum(map(_kept, done)) / len(done))} | "
                      f"{_num(statistics.fmean(r['test_gap'] for r in done))} | {_num(max(r['test_gap'] for r in done))} "
                      f"| {_num(statistics.fmean(r['test_accuracy'] for r in done))} |")
    return md + [""]


def _pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.0f} %"


def _num(value: float | None, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--models", nargs="+", default=["linear"], choices=list(KINDS))
    parser.add_argument("--constraints", nargs="+", default=["demographic_parity", "equalized_odds", "loss_gap"])
    parser.add_argument("--tolerances", nargs="+", type=float, default=[0.01, 0.02, 0.05])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--solvers", nargs="*", default=list(NAMED), help="named solvers run with their defaults")
    parser.add_argument("--no-fairlearn", action="store_true")
    parser.add_argument("--aim-tolerance", action="store_true",
                        help=f"also '{AIM_TOLERANCE}': the guarantee with when_unverifiable 'tolerance'")
    parser.add_argument("--headline", action="store_true", help="only the auto-vs-fairlearn figure")
    parser.add_argument("--headline-datasets", nargs="+", default=["adult_sex"], choices=list(HEADLINE_DATASETS),
                        help="the tables of --headline (adult_sex: the target's; the others: the same spec elsewhere)")
    parser.add_argument("--repeats", type=int, default=3, help="--headline: fairlearn / auto pairs per table (median)")
    parser.add_argument("--frontier", action="store_true",
                        help="the linear models fairlearn fits on the headline's split: best test accuracy at test DP ≤ 0.02")
    parser.add_argument("--report", action="store_true", help="only rewrite promise.md from the stored jobs")
    parser.add_argument("--rerun", action="store_true",
                        help="run the grid's jobs even when stored (each keeps the stored figures as 'previous')")
    parser.add_argument("--methods", nargs="+", help="only these method labels (e.g. auto+guarantee)")
    parser.add_argument("--pooling", action="store_true",
                        help="only bench.quality.pooling on --datasets over --pooling-seeds: an unverifiable tolerance's "
                        "correction fitted on train or on train ∪ validation")
    parser.add_argument("--pooling-seeds", type=int, default=60, help="--pooling: split seeds 100, 101, ...")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch and BLAS threads of every method (one: on a shared machine more threads thrash, "
                        "torch's far more than fairlearn's)")
    parser.add_argument("--quick", action="store_true",
                        help="one small cell: COMPAS, DP ≤ 0.05, linear, seed 0, auto / auto+guarantee / fairlearn")
    args = parser.parse_args()
    if args.quick:
        args.datasets, args.models, args.constraints = ["compas_race"], ["linear"], ["demographic_parity"]
        args.tolerances, args.seeds, args.solvers = [0.05], [0], []
    torch.set_num_threads(args.threads)
    threadpool_limits(args.threads)
    if args.headline or args.frontier:
        store = load_store()
        for dataset in args.headline_datasets if args.headline else []:
            result = headline(dataset, args.repeats)
            if dataset == "adult_sex":
                store["headline"] = result
            else:
                store["headline_other_tables"][dataset] = result
        if args.frontier:
            store["frontier"] = frontier()
        save_store(store)
    elif args.pooling:
        store = load_store()
        for dataset in args.datasets:
            table = DATASETS[dataset][0]()
            store["pooling"][dataset] = pooling.pooling(
                table, lambda s: spec_for(dataset, "demographic_parity", 0.02, "linear", s, {"name": "erm"}),
                list(range(100, 100 + args.pooling_seeds)), tuple(args.tolerances))
        save_store(store)
    elif not args.report:
        run_grid(args)
    store = with_split_infos(load_store())
    save_store(store)
    write_report(store["jobs"], store["headline"], store.get("frontier"), store["noise_floor"],
                 store["headline_other_tables"], store["pooling"], store["references"])
    print(REPORT.read_text())


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()

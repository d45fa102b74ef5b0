"""The ``reductions`` solver on Adult (sex, demographic parity ≤ 0.02, seed 0): test accuracy, test DP and seconds
of the job's classifier (1{p_Q > ½}, the weighted majority of Q's classifiers) and of fairlearn's randomised
classifier Q itself, read from the same job's scores σ(f) = p_Q: its expected test metrics and one draw
ŷ = 1{p_Q ≥ u}, u ~ U(0, 1) at ``random_state=0`` (fairlearn's ``predict``).

Per model type (``linear``, ``gbdt``) and decision rule (``majority``, the default, and ``draw``: one seeded draw of
Q per row), with the job's default exact enforcement and without it (fairlearn's output as it is). Writes
``bench/quality/results/reductions.{json,md}``. Run: ``python -m bench.quality.reductions [--models linear,gbdt]
[--decisions majority,draw]``.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.common.datasets import adult
from bench.quality.promise import spec_for

RESULTS = Path(__file__).resolve().parent / "results"
TOLERANCE = 0.02


def spread(values: np.ndarray, group: np.ndarray) -> float:
    """max − min over the groups of the mean of ``values``."""
    means = pd.Series(values).groupby(group).mean()
    return float(means.max() - means.min())


def randomised(p: np.ndarray, y: np.ndarray, group: np.ndarray) -> dict[str, float]:
    """fairlearn's view of the job's Q on the test split (p = P(Q(x) = 1)): expected accuracy and DP, and those of
    one draw."""
    draw = (p >= np.random.RandomState(0).rand(len(p))).astype(np.int64)
    return {"expected_accuracy": float(np.mean(p * y + (1 - p) * (1 - y))), "expected_dp": spread(p, group),
            "draw_accuracy": float(np.mean(draw == y)), "draw_dp": spread(draw.astype(float), group)}


def one(table: pd.DataFrame, model: str, decision: str, enforce: bool) -> dict[str, Any]:
    import torch

    from solvers import ProblemSpec, prepare, run
    from solvers.algorithms.auc_postprocess import restore_model
    from solvers.models import model_factory

    spec = spec_for("adult_sex", "demographic_parity", TOLERANCE, model, 0,
                    {"name": "reductions", "params": {"decision": decision}})
    spec["exact_enforcement"] = enforce
    started = time.perf_counter()
    problem_spec = ProblemSpec.model_validate(spec)
    out = run(table, problem_spec)
    wall = time.perf_counter() - started
    data = prepare(table, problem_spec)   # the same split and encoding: Q's P(ŷ = 1 | x) on the test rows
    test = data.splits["test"]
    q = restore_model(model_factory(problem_spec.model)(data.X.shape[1]), out.state_dict)
    with torch.no_grad():
        p = q.positive_probability(torch.as_tensor(data.X[test])).numpy()
    return {"model": model, "decision": decision, "exact_enforcement": enforce, "wall_s": wall, "solver_time_s": out.solver_time_s,
            "iterations": out.iterations, "enforcement": (out.enforcement or {}).get("method"),
            "test_accuracy": out.metrics["test"]["accuracy"], "test_dp": out.metrics["test"]["demographic_parity"],
            "train_dp": out.metrics["train"]["demographic_parity"], "randomised": randomised(p, data.y[test], data.group[test])}


def previous_rows() -> list[dict[str, Any]]:
    """The rows of the stored results (cells not measured again keep them)."""
    path = RESULTS / "reductions.json"
    return json.loads(path.read_text())["rows"] if path.exists() else []


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="linear,gbdt")
    parser.add_argument("--decisions", default="majority,draw")
    args = parser.parse_args()
    table = adult()
    measured = {(r["model"], r.get("decision", "majority"), r["exact_enforcement"]): r for r in previous_rows()}
    for model in args.models.split(","):
        for decision in args.decisions.split(","):
            for enforce in (True, False):   # each row replaces the stored one of its cell
                row = one(table, model, decision, enforce)
                measured[(model, decision, enforce)] = {**row, "measured_at": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                                             time.gmtime())}
    rows = list(measured.values())
    report = {"dataset": "adult (sex), split 0.6/0.2/0.2 seed 0", "tolerance": TOLERANCE, "rows": rows,
              "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "reductions.json").write_text(json.dumps(report, indent=2))
    md = [f"# reductions on Adult (sex), DP ≤ {TOLERANCE}, seed 0", "",
          "`python -m bench.quality.reductions [--models ...] [--decisions ...]` (a run replaces the rows of the cells it "
          "measures); each row's time is in the JSON; a shared 2-core machine under load (seconds are wall time "
          "there).", "",
          "The job's own figures are those of its decision 1{f > 0} (majority: 1{p > ½}; draw: 1{u(x) < p}); "
          "Q's are fairlearn's randomised classifier on the same test rows (p from the job's scores; with 'draw' "
          "p is recomputed from the stored model).", "",
          "| model | decision | exact enforcement | seconds (run) | iterations | test accuracy (job) | test DP (job) "
          "| Q: expected accuracy | Q: expected DP | Q drawn (seed 0): accuracy | Q drawn: DP |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        q = r["randomised"]
        md.append(f"| {r['model']} | {r.get('decision', 'majority')} | {r['enforcement'] if r['exact_enforcement'] else 'off'} | "
                  f"{r['wall_s']:.1f} | "
                  f"{r['iterations']} | {r['test_accuracy']:.4f} | {r['test_dp']:.4f} | {q['expected_accuracy']:.4f} | "
                  f"{q['expected_dp']:.4f} | {q['draw_accuracy']:.4f} | {q['draw_dp']:.4f} |")
    (RESULTS / "reductions.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()

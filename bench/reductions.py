"""The ``reductions`` solver on Adult (sex, demographic parity ≤ 0.02, seed 0): test accuracy, test DP and seconds
of the job's classifier (1{p_Q > ½}, the weighted majority of Q's classifiers) and of fairlearn's randomised
classifier Q itself, read from the same job's scores σ(f) = p_Q: its expected test metrics and one draw
ŷ = 1{p_Q ≥ u}, u ~ U(0, 1) at ``random_state=0`` (fairlearn's ``predict``).

Per model type (``linear``; ``gbdt`` when the model type exists), with the job's default exact enforcement and
without it (fairlearn's output as it is). Writes ``bench/results/reductions.{json,md}``. Run:
``python -m bench.reductions [--models linear,gbdt]``.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.datasets import adult
from bench.promise import spec_for

RESULTS = Path(__file__).resolve().parent / "results"
TOLERANCE = 0.02


def spread(values: np.ndarray, group: np.ndarray) -> float:
    """max − min over the groups of the mean of ``values``."""
    means = pd.Series(values).groupby(group).mean()
    return float(means.max() - means.min())


def randomised(predictions: pd.DataFrame) -> dict[str, float]:
    """fairlearn's view of the job's Q on the test split: expected accuracy and DP, and those of one draw."""
    p, y, group = predictions["score"].to_numpy(), predictions["label"].to_numpy(), predictions["group"].to_numpy()
    draw = (p >= np.random.RandomState(0).rand(len(p))).astype(np.int64)
    return {"expected_accuracy": float(np.mean(p * y + (1 - p) * (1 - y))), "expected_dp": spread(p, group),
            "draw_accuracy": float(np.mean(draw == y)), "draw_dp": spread(draw.astype(float), group)}


def one(table: pd.DataFrame, model: str, enforce: bool) -> dict[str, Any]:
    from solvers import ProblemSpec, run

    spec = spec_for("adult_sex", "demographic_parity", TOLERANCE, model, 0, {"name": "reductions"})
    spec["exact_enforcement"] = enforce
    started = time.perf_counter()
    out = run(table, ProblemSpec.model_validate(spec))
    wall = time.perf_counter() - started
    return {"model": model, "exact_enforcement": enforce, "wall_s": wall, "solver_time_s": out.solver_time_s,
            "iterations": out.iterations, "enforcement": (out.enforcement or {}).get("method"),
            "test_accuracy": out.metrics["test"]["accuracy"], "test_dp": out.metrics["test"]["demographic_parity"],
            "train_dp": out.metrics["train"]["demographic_parity"], "randomised": randomised(out.predictions)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="linear")
    args = parser.parse_args()
    table = adult()
    rows = [one(table, model, enforce) for model in args.models.split(",") for enforce in (True, False)]
    report = {"dataset": "adult (sex), split 0.6/0.2/0.2 seed 0", "tolerance": TOLERANCE, "rows": rows,
              "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "reductions.json").write_text(json.dumps(report, indent=2))
    md = [f"# reductions on Adult (sex), DP ≤ {TOLERANCE}, seed 0", "",
          "`python -m bench.reductions`; measured " + report["measured_at"] + " on a shared 2-core machine.", "",
          "| model | exact enforcement | seconds (run) | oracle calls + stages | test accuracy (1{p>½}) | test DP "
          "(1{p>½}) | Q: expected accuracy | Q: expected DP | Q drawn (seed 0): accuracy | Q drawn: DP |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        q = r["randomised"]
        md.append(f"| {r['model']} | {r['enforcement'] if r['exact_enforcement'] else 'off'} | {r['wall_s']:.1f} | "
                  f"{r['iterations']} | {r['test_accuracy']:.4f} | {r['test_dp']:.4f} | {q['expected_accuracy']:.4f} | "
                  f"{q['expected_dp']:.4f} | {q['draw_accuracy']:.4f} | {q['draw_dp']:.4f} |")
    (RESULTS / "reductions.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()

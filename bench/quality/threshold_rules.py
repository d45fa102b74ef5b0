"""``group_thresholds`` on Adult (sex, demographic parity ≤ 0.02), once: test accuracy and test DP, seconds.

Each cell is one ``solvers.run`` of the job spec (the worker's path: split, encoding, base model, LP, every
split's metrics): the base model (``erm`` of the model type on the train split) is trained in the same run.
Cells: linear and gbdt bases × randomised (the LP's exact optimum, realised by the per-row draw) and deterministic
thresholds (the mixed-integer optimum). Reported per cell: test accuracy and DP of the stored model, the LP/MIP
objective on validation (expected) against the realised validation accuracy and DP, the LP's columns and seconds,
the whole run's seconds. Writes ``bench/quality/results/threshold_rules.{json,md}``::

    python -m bench.quality.threshold_rules
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from bench.common.datasets import adult

RESULTS = Path(__file__).resolve().parent / "results"
MODELS = {"linear": {"type": "linear"}, "gbdt": {"type": "gbdt"}}
ITERATIONS = {"linear": 1000, "gbdt": 200}


def spec(model: str, randomized: bool, tolerance: float = 0.02) -> dict:
    return {"target": "income", "positive_label": ">50K", "sensitive": ["sex"], "model": MODELS[model],
            "constraints": [{"type": "demographic_parity", "tolerance": tolerance}],
            "solver": {"name": "group_thresholds", "params": {"randomized": randomized}},
            "split": {"test": 0.2, "validation": 0.2, "seed": 0}, "max_iterations": ITERATIONS[model],
            "time_limit_s": 600, "device": "cpu"}


def cell(table, model: str, randomized: bool) -> dict:
    from solvers import ProblemSpec, run

    started, cpu = time.perf_counter(), time.process_time()
    out = run(table, ProblemSpec(**spec(model, randomized)))
    record = out.enforcement
    return {"model": model, "randomized": randomized,
            "test_accuracy": out.metrics["test"]["accuracy"], "test_dp": out.metrics["test"]["demographic_parity"],
            "validation_objective": record["objective"], "validation_dp_expected": record["gaps"]["demographic_parity"],
            "validation_accuracy": out.metrics["validation"]["accuracy"],
            "validation_dp": out.metrics["validation"]["demographic_parity"],
            "lp_columns": record["n_points"], "lp_seconds": record["seconds"], "status": record["status"],
            "seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu}


def main() -> None:
    table = adult()
    rows = [cell(table, model, randomized) for model in MODELS for randomized in (True, False)]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "threshold_rules.json").write_text(json.dumps(rows, indent=1))
    lines = ["# group_thresholds on Adult (sex, DP ≤ 0.02)", "",
             "`python -m bench.quality.threshold_rules`: adult.data, split test 0.2 / validation 0.2, seed 0; one `solvers.run` "
             "per row (base model trained in it). Validation: the LP/MIP's expected objective and DP vs the realised "
             "(drawn) rule. The solver's default for DP is the deterministic row. Measured on a shared 2-core "
             "machine under load (run s is wall time there; CPU s the process' own).", "",
             "| base | thresholds | test acc | test DP | val objective (LP) | val DP (LP) | val acc | val DP | "
             "LP columns | LP s | run s | CPU s |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {'randomised' if r['randomized'] else 'deterministic'} | "
                     f"{r['test_accuracy']:.4f} | {r['test_dp']:.4f} | {r['validation_objective']:.4f} | "
                     f"{r['validation_dp_expected']:.4f} | {r['validation_accuracy']:.4f} | {r['validation_dp']:.4f} | "
                     f"{r['lp_columns']} | {r['lp_seconds']:.2f} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} |")
    (RESULTS / "threshold_rules.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

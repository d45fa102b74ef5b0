"""Scale: one prediction-log audit run on 1,000,000 rows, in-process as the worker runs it (no broker, no DB).

The log is synthetic (two sensitive columns, 3 × 2 = 6 groups, a probability score and a label); the run is
what ``app.audits.lifecycle.run`` does between reading the table and storing the report: score the log
(:class:`app.audits.logs.PredictionLog`), summarise the scores per group and compare them with a reference
run's summary (:mod:`app.audits.drift`), and evaluate the metrics with 200 bootstrap resamples
(:func:`app.audits.report.evaluate`). Figures: CPU seconds (user + system of this process) and wall time of
each step, and the process's peak resident memory (``ru_maxrss``) before and after the run.

    python -m bench.system.audit_scale [--rows 1000000] [--n-boot 200]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

import numpy as np
import pandas as pd

from app.audits.drift import compare, summarise
from app.audits.logs import PredictionLog
from app.audits.metrics import MetricSpec
from app.audits.report import evaluate

RESULTS = Path(__file__).resolve().parent / "results"
METRICS = [{"type": "accuracy", "threshold": 0.6}, {"type": "roc_auc"}, {"type": "demographic_parity", "threshold": 0.1},
           {"type": "equalized_odds", "threshold": 0.1}, {"type": "score_psi", "threshold": 0.25},
           {"type": "score_ks", "threshold": 0.1}]
LOG = PredictionLog(score_column="score", label_column="outcome", positive_label=1, sensitive=["race", "sex"])


def prediction_log(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    race = rng.choice(["a", "b", "c"], rows, p=[0.6, 0.3, 0.1])
    sex = rng.choice(["F", "M"], rows)
    y = (rng.random(rows) < 0.3).astype(np.int64)
    logit = rng.normal(1.2 * y - 0.8 + 0.3 * (sex == "M"), 1.0)
    return pd.DataFrame({"race": race, "sex": sex, "outcome": y, "score": 1 / (1 + np.exp(-logit))})


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--n-boot", type=int, default=200)
    args = parser.parse_args()
    specs = [MetricSpec.model_validate(m) for m in METRICS]
    reference = summarise(LOG.score(prediction_log(args.rows, seed=1)))
    table = prediction_log(args.rows, seed=2)
    before = peak_mib()
    steps, t_cpu, t_wall = {}, cpu(), time.perf_counter()

    def step(name: str, started: tuple[float, float]) -> tuple[float, float]:
        steps[name] = {"cpu_s": round(cpu() - started[0], 2), "wall_s": round(time.perf_counter() - started[1], 2)}
        return cpu(), time.perf_counter()

    mark = (t_cpu, t_wall)
    scored = LOG.score(table)
    mark = step("score the log", mark)
    summary = summarise(scored)
    drift = {"previous": compare(summary, reference, "ref"), "baseline": None}
    mark = step("summary and drift", mark)
    report = evaluate(specs, scored, drift=drift, n_boot=args.n_boot)
    step(f"metrics with {args.n_boot} bootstrap resamples", mark)
    out = {"rows": args.rows, "groups": scored.n_groups, "n_boot": args.n_boot,
           "metrics": [m["type"] for m in METRICS], "steps": steps,
           "total": {"cpu_s": round(cpu() - t_cpu, 2), "wall_s": round(time.perf_counter() - t_wall, 2)},
           "peak_rss_mib": {"before_run": round(before), "after_run": round(peak_mib())},
           "table_mib": round(table.memory_usage(deep=True).sum() / 2**20),
           "load_average_15min": round(os.getloadavg()[2], 1), "cpus": os.cpu_count(),
           "values": {r["key"]: r["value"] for r in report["results"]}}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "audit_scale.json").write_text(json.dumps(out, indent=2) + "\n")
    lines = [f"# Scale: one prediction-log audit run on {args.rows:,} rows ({scored.n_groups} groups)", "",
             "`python -m bench.system.audit_scale` (in-process, what the worker runs between reading the table and "
             "storing the report; one core).", "",
             "| step | CPU s | wall s |", "|---|---|---|"]
    lines += [f"| {name} | {v['cpu_s']} | {v['wall_s']} |" for name, v in steps.items()]
    lines += [f"| **total** | **{out['total']['cpu_s']}** | {out['total']['wall_s']} |", "",
              f"Peak resident memory of the process: {out['peak_rss_mib']['before_run']} MiB before the run "
              f"(the {args.rows:,}-row table, {out['table_mib']} MiB in pandas, and a reference run's summary), "
              f"{out['peak_rss_mib']['after_run']} MiB after it.", "",
              "Metrics: " + ", ".join(out["metrics"]) + ".", "",
              f"The machine's 15-minute load average at the end: {out['load_average_15min']} on {out['cpus']} CPUs "
              "(wall time is not the figure; CPU seconds are)."]
    (RESULTS / "audit_scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

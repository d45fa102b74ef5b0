"""A large job's own work around the solve, in process (issue 33; the CUDA run of ``bench.system.gpu_paths`` found
10M-row jobs spending 23–45 s there against 1–2 s of solve): ``solvers.prepare`` (split, encoding) and the whole
``solvers.run`` (with keeping the promise, evaluation and predictions) of a job on the generated table of
``bench.system.gpu_paths``, best of ``--reps``, with the solver's own seconds beside.

    python -m bench.system.setup_speed [--rows 2000000] [--reps 3] [--threads 2]

Prints one line per job (linear SSG full batch; MLP 64-64 SSL-ALM on batches of 4,096; 60 iterations, DP ≤ 0.02).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import torch

from app.datasets.storage import load_table
from bench.system.gpu_paths import write_table
from solvers import run
from solvers.data.spec import ProblemSpec
from solvers.pipeline import prepare

JOBS = {"linear ssg": ({"type": "linear"}, {"name": "ssg", "params": {}}),
        "mlp ssl_alm": ({"type": "mlp", "hidden": [64, 64]}, {"name": "ssl_alm", "params": {"batch_size": 4096}})}


def best(fn, reps: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "table.parquet"
        write_table(path, args.rows)
        table = load_table(path, "parquet", {}, "setup-speed")
    for name, (model, solver) in JOBS.items():
        spec = ProblemSpec.model_validate({
            "target": "income", "positive_label": ">50K", "sensitive": ["sex"], "model": model, "solver": solver,
            "constraints": [{"type": "demographic_parity", "tolerance": 0.02}],
            "split": {"test": 0.2, "validation": 0.2, "seed": 0}, "max_iterations": 60, "enforcement_iterations": 6,
            "device": "cpu"})
        prepare_s, _ = best(lambda: prepare(table, spec), args.reps)
        run_s, out = best(lambda: run(table, spec), args.reps)
        print(json.dumps({"job": name, "rows": args.rows, "prepare_s": round(prepare_s, 3), "run_s": round(run_s, 3),
                          "solver_s": round(out.solver_time_s, 3), "test_accuracy": out.metrics["test"]["accuracy"],
                          "load": round(os.getloadavg()[0], 2)}), flush=True)


if __name__ == "__main__":
    main()

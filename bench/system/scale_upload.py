"""Scale: a 1,000,000-row CSV (Adult rows resampled, numeric columns jittered) uploaded to a real
API on PostgreSQL + Redis, then a linear demographic-parity solve on it.

Figures: upload wall time (client's POST to 201), the API process's resident memory before the
upload, its peak during it and through the submission of a job on the dataset (``VmHWM`` of
``/proc/<pid>/status``, reset before the upload by writing 5 to ``/proc/<pid>/clear_refs`` where the
kernel allows), the file size, the solve's time and test metrics, and what the idle API's memory is
made of: the resident size of fresh interpreters importing the API's library stack step by step.

    python -m bench.system.scale_upload [--rows 1000000] [--iterations 300]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import redis

from bench.common.datasets import adult
from bench.common.stack import REDIS_URL, pg_database, start_stack, stop_stack

RESULTS = Path(__file__).resolve().parent / "results"
NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]


def resampled_adult(rows: int, seed: int = 0):
    """``rows`` Adult rows drawn with replacement; numeric columns get ±5% multiplicative noise."""
    rng = np.random.default_rng(seed)
    base = adult()
    frame = base.iloc[rng.integers(0, len(base), rows)].reset_index(drop=True)
    for col in NUMERIC:
        frame[col] = np.round(frame[col].to_numpy(float) * rng.uniform(0.95, 1.05, rows)).astype(np.int64)
    return frame


def memory_kib(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def reset_peak(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


STACK = "import fastapi, sqlalchemy, celery, numpy, pyarrow.parquet, pandas, plotly.graph_objects\n"
IMPORT_STEPS = {  # each in a fresh interpreter
    "web and data stack (fastapi, sqlalchemy, celery, numpy, pyarrow, pandas, plotly)": STACK,
    "the API (app.main)": "import app.main\n",
    "the stack + scipy.stats, sklearn.metrics (not loaded by the API)": STACK + "import scipy.stats, sklearn.metrics\n",
    "the stack + scipy, sklearn, torch (the worker's solvers)": STACK + "import scipy.stats, sklearn.metrics, torch\n",
}


def import_footprint() -> dict[str, float]:
    """Peak resident MiB of a fresh interpreter after each import step."""
    out = {}
    for label, code in IMPORT_STEPS.items():
        # VmHWM of the new address space (ru_maxrss would carry this large process's peak across fork + exec)
        probe = code + "print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])"
        run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                             cwd=Path(__file__).resolve().parents[2])
        out[label] = int(run.stdout.split()[-1]) / 1024
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args()
    redis.Redis.from_url(REDIS_URL).flushdb()
    url, drop = pg_database()
    with tempfile.TemporaryDirectory() as home:
        csv_path = Path(home) / "adult_1m.csv"
        resampled_adult(args.rows).to_csv(csv_path, index=False)
        size = csv_path.stat().st_size
        (Path(home) / "stack").mkdir()
        stack = start_stack("scale-bench", Path(home) / "stack", url, REDIS_URL)
        try:
            api_pid = stack.procs["api"].pid
            with stack.client() as client:
                client.timeout = 600
                client.get("/api/v1/solvers")  # first request: imports done, caches warm
                before = memory_kib(api_pid)
                peak_reset = reset_peak(api_pid)
                t0 = time.perf_counter()
                with open(csv_path, "rb") as fh:
                    resp = client.post("/api/v1/datasets", files={"file": ("adult_1m.csv", fh, "text/csv")})
                upload_s = time.perf_counter() - t0
                assert resp.status_code == 201, resp.text
                after = memory_kib(api_pid)
                dataset = resp.json()
                spec = {"dataset_id": dataset["id"], "target": "income", "positive_label": ">50K",
                        "sensitive": ["sex"], "model": {"type": "linear"}, "objective": "logistic",
                        "constraints": [{"type": "demographic_parity", "tolerance": 0.02}],
                        "solver": {"name": "plada", "params": {"eta": 0.5}}, "max_iterations": args.iterations,
                        "time_limit_s": 3000, "device": "cpu"}
                t0 = time.perf_counter()
                job = client.post("/api/v1/jobs", json=spec).json()
                submitted = memory_kib(api_pid)  # VmHWM: the peak through the upload and the job's submission
                job = stack.wait_job(client, job["id"], {"succeeded", "failed"}, timeout=3000)
                solve_wall_s = time.perf_counter() - t0
        finally:
            stop_stack(stack)
            drop()
    peak_mib = after["VmHWM"] / 1024
    result = {
        "rows": args.rows, "file_mib": size / 2**20, "upload_s": upload_s,
        "api_rss_before_mib": before["VmRSS"] / 1024, "api_peak_mib": peak_mib, "peak_was_reset": peak_reset,
        "peak_over_before_mib": peak_mib - before["VmRSS"] / 1024,
        "api_peak_through_submission_mib": submitted["VmHWM"] / 1024,
        "peak_over_file": peak_mib / (size / 2**20),
        "increase_over_file": (peak_mib - before["VmRSS"] / 1024) / (size / 2**20),
        "solve": {"status": job["status"], "error": job["error"], "iterations": (job["result"] or {}).get("iterations"),
                  "solver_time_s": (job["result"] or {}).get("solver_time_s"), "wall_s": solve_wall_s,
                  "test_accuracy": ((job["metrics"] or {}).get("test") or {}).get("accuracy"),
                  "test_dp": ((job["metrics"] or {}).get("test") or {}).get("demographic_parity")},
    }
    result["import_footprint_mib"] = footprint = import_footprint()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "scale_upload.json").write_text(json.dumps(result, indent=2))
    s = result["solve"]
    md = ["# Scale: 1M-row upload and solve (PostgreSQL + Redis, 1 worker)", "",
          "| figure | value |", "|---|---|",
          f"| rows / file size | {args.rows:,} / {result['file_mib']:.1f} MiB |",
          f"| upload (POST to 201) | {upload_s:.1f} s |",
          f"| API resident memory before upload | {result['api_rss_before_mib']:.0f} MiB |",
          f"| API peak resident memory during upload | {peak_mib:.0f} MiB ({result['peak_over_file']:.2f}× file) |",
          f"| increase over the idle API | {result['peak_over_before_mib']:.0f} MiB "
          f"({result['increase_over_file']:.2f}× file) |",
          f"| API peak resident memory through the job's submission on it | "
          f"{result['api_peak_through_submission_mib']:.0f} MiB |",
          f"| solve (plada, linear, DP ≤ 0.02, {args.iterations} iterations) | {s['status']}, solver "
          f"{s['solver_time_s']:.1f} s, wall {s['wall_s']:.1f} s |" if s["solver_time_s"] else
          f"| solve | {s['status']}: {s['error']} |",
          f"| test accuracy / DP | {s['test_accuracy']} / {s['test_dp']} |", "",
          "What the idle API holds: peak resident size of a fresh interpreter after each import step.", "", "| imports | MiB |", "|---|---|"]
    md += [f"| {label} | {mib:.0f} |" for label, mib in footprint.items()] + [""]
    (RESULTS / "scale_upload.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()

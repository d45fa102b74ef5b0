"""Sweeps across workers on PostgreSQL + Redis (issue 6's figures).

1. A 60-job sweep (3 solvers × 5 tolerances × 4 seeds, Adult, linear) on 2 Celery
   worker processes: wall time vs the sum of job times (parallel efficiency), the
   queue overhead per job, and a check that no job was lost or run twice.
2. Per-job overhead of the queue + persistence path, one job at a time on an idle
   worker: submit → first iteration and last iteration → ``succeeded`` (median),
   on a small table (so data preparation does not hide the path) and on Adult.
3. Warm start along a tolerance path: iterations to settle (``iterations_to_target``)
   with and without ``warm_start``.

Writes ``bench/system/results/sweep_throughput.json`` and ``.md``. Run: ``python -m bench.system.sweep_throughput``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

import redis

from bench.common.jobs import job_settled
from bench.common.wait import wait_until
from bench.common.datasets import adult
from bench.common.datagen import planted_table
from bench.common.stack import REDIS_URL, pg_database, start_stack, stop_stack

RESULTS = Path(__file__).resolve().parent / "results"
BASE = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"], "model": {"type": "linear"},
        "constraints": [{"type": "demographic_parity", "tolerance": 0.05}],
        "solver": {"name": "plada", "params": {"eta": 0.5}}, "max_iterations": 500, "device": "cpu"}
SOLVERS = [{"name": "plada", "params": {"eta": 0.5}}, {"name": "penalty", "params": {"penalty": 2.0}},
           {"name": "ssg", "params": {}}]
TOLERANCES = [0.01, 0.02, 0.05, 0.1, 0.2]


def ts(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def upload(client, frame, name):
    resp = client.post("/api/v1/datasets", files={"file": (f"{name}.csv", frame.to_csv(index=False), "text/csv")})
    resp.raise_for_status()
    return resp.json()["id"]


def run_sweep(client, body: dict, timeout: float = 1800) -> tuple[dict, float]:
    t0 = time.perf_counter()
    sweep_id = client.post("/api/v1/sweeps", json=body).json()["id"]

    def done() -> dict | None:
        sweep = client.get(f"/api/v1/sweeps/{sweep_id}").json()
        return sweep if sweep["status"] != "running" else None
    sweep = wait_until(done, timeout, 0.25, f"sweep {sweep_id} done")
    return sweep, time.perf_counter() - t0


def jobs_of(client, sweep: dict) -> list[dict]:
    return [client.get(f"/api/v1/jobs/{j}").json() for p in sweep["points"] for j in p["job_ids"]]


def throughput(client, dataset_id: str, workers: int) -> dict:
    body = {"base": {**BASE, "dataset_id": dataset_id},
            "grid": {"solvers": SOLVERS, "tolerances": TOLERANCES, "seeds": [0, 1, 2, 3],
                     "include_unconstrained": False}}
    sweep, wall = run_sweep(client, body)
    jobs = jobs_of(client, sweep)
    busy = [ts(j["finished_at"]) - ts(j["started_at"]) for j in jobs]
    solver = [j["result"]["solver_time_s"] for j in jobs]
    waits = sorted(ts(j["started_at"]) - ts(j["created_at"]) for j in jobs)
    return {"jobs": len(jobs), "status": sweep["status"], "succeeded": sweep["progress"]["succeeded"],
            "max_starts": max(j["starts"] for j in jobs), "wall_s": wall, "sum_job_s": sum(busy),
            "sum_solver_s": sum(solver), "parallel_efficiency": sum(busy) / (wall * workers),
            "job_overhead_s_median": statistics.median(b - s for b, s in zip(busy, solver)),
            "first_start_wait_s": waits[0]}


def per_job_overhead(client, dataset_id: str, n: int, spec_extra: dict) -> dict:
    first, last, submit_running = [], [], []
    for i in range(n):
        t_post = time.time()
        job_id = client.post("/api/v1/jobs", json={**BASE, **spec_extra, "dataset_id": dataset_id,
                                                   "seed": i, "max_iterations": 50}).json()["id"]
        job = job_settled(client, job_id, 600, baseline=False, interval=0.02)
        p = job["progress"]
        first.append(p["first_iteration_at"] - t_post)
        last.append(ts(job["finished_at"]) - p["last_iteration_at"])
        submit_running.append(ts(job["started_at"]) - ts(job["created_at"]))
    return {"jobs": n, "submit_to_first_iteration_ms_median": 1000 * statistics.median(first),
            "last_iteration_to_succeeded_ms_median": 1000 * statistics.median(last),
            "submit_to_running_ms_median": 1000 * statistics.median(submit_running)}


def warm_start(client, dataset_id: str) -> dict:
    out = {}
    for warm in (False, True):
        body = {"base": {**BASE, "dataset_id": dataset_id, "max_iterations": 1500},
                "grid": {"solvers": [SOLVERS[0]], "tolerances": TOLERANCES, "seeds": [0, 1],
                         "include_unconstrained": False}, "warm_start": warm}
        sweep, wall = run_sweep(client, body)
        its = [j["result"]["iterations_to_target"] for j in jobs_of(client, sweep)]
        out["warm" if warm else "cold"] = {"iterations_to_target_sum": sum(i or 1500 for i in its),
                                           "not_settled": sum(i is None for i in its), "wall_s": wall}
    out["saving_pct"] = 100 * (1 - out["warm"]["iterations_to_target_sum"] / out["cold"]["iterations_to_target_sum"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--overhead-jobs", type=int, default=20)
    args = parser.parse_args()
    redis.Redis.from_url(REDIS_URL).flushdb()
    url, drop = pg_database()
    with tempfile.TemporaryDirectory() as home:
        stack = start_stack("sweep-bench", Path(home), url, REDIS_URL, workers=args.workers)
        try:
            with stack.client() as client:
                adult_id = upload(client, adult(), "adult")
                small_id = upload(client, planted_table(2000), "small")
                # warm-up: each worker process imports torch and caches the tables once
                per_job_overhead(client, small_id, 2 * args.workers, {})
                result = {
                    "workers": args.workers,
                    "overhead_small": per_job_overhead(client, small_id, args.overhead_jobs, {}),
                    "overhead_adult": per_job_overhead(client, adult_id, args.overhead_jobs, {}),
                    "sweep_60": throughput(client, adult_id, args.workers),
                    "warm_start": warm_start(client, adult_id),
                }
        finally:
            stop_stack(stack)
            drop()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sweep_throughput.json").write_text(json.dumps(result, indent=2))
    s, os_, oa, w = result["sweep_60"], result["overhead_small"], result["overhead_adult"], result["warm_start"]
    md = ["# Sweeps on PostgreSQL + Redis", "", "| figure | value |", "|---|---|",
          f"| 60-job sweep: jobs succeeded / max starts per job | {s['succeeded']}/{s['jobs']} / {s['max_starts']} |",
          f"| 60-job sweep wall time ({args.workers} workers) | {s['wall_s']:.1f} s |",
          f"| sum of job times (started → finished) | {s['sum_job_s']:.1f} s |",
          f"| sum of solver times | {s['sum_solver_s']:.1f} s |",
          f"| parallel efficiency (sum of job times / (wall × workers)) | {s['parallel_efficiency']:.2f} |",
          f"| per-job time outside the solver (median; load, encode, metrics, artifacts) | "
          f"{1000 * s['job_overhead_s_median']:.0f} ms |",
          f"| submit → first iteration, small table (median of {os_['jobs']}) | "
          f"{os_['submit_to_first_iteration_ms_median']:.0f} ms |",
          f"| last iteration → succeeded, small table | {os_['last_iteration_to_succeeded_ms_median']:.0f} ms |",
          f"| submit → running, small table | {os_['submit_to_running_ms_median']:.0f} ms |",
          f"| submit → first iteration, Adult | {oa['submit_to_first_iteration_ms_median']:.0f} ms |",
          f"| last iteration → succeeded, Adult | {oa['last_iteration_to_succeeded_ms_median']:.0f} ms |",
          f"| warm start: iterations to settle, cold vs warm (plada, 5 tolerances × 2 seeds) | "
          f"{w['cold']['iterations_to_target_sum']} vs {w['warm']['iterations_to_target_sum']} "
          f"({w['saving_pct']:.0f}% saved) |"]
    (RESULTS / "sweep_throughput.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()

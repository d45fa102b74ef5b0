"""Issue 22's multi-host figure: the parallel efficiency of a sweep on two worker hosts that share nothing
with the API but PostgreSQL, Redis and S3-compatible object storage (``bench.common.hosts``: ``moto_server``, each host
with a ``FAIRSOLVE_HOME`` and, as root, a network namespace of its own), beside the same sweep on one machine
with two worker processes and the local storage directory.

Parallel efficiency = sum of job times (started → finished) / (wall time × workers), wall time from the
sweep's submission to its end; the sweep runs once the workers are up (one small job each, first). Each
host downloads the dataset from the object store on its first job (counted).

Writes ``bench/system/results/multi_host.json`` and ``.md``. Run: ``python -m bench.system.multi_host``.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from bench.common.jobs import job_settled
from bench.common.datasets import adult
from bench.system.sweep_throughput import BASE, RESULTS, SOLVERS, jobs_of, run_sweep, ts, upload
from bench.common.datagen import planted_table
from bench.common.hosts import worker_hosts
from bench.common.stack import REDIS_URL, pg_database, start_stack, stop_stack

TOLERANCES = [0.02, 0.05, 0.1]


def warm_up(client, dataset_id: str, workers: int) -> None:
    """One small job per worker, so the sweep's wall time holds no process start (torch import)."""
    ids = [client.post("/api/v1/jobs", json={**BASE, "dataset_id": dataset_id, "seed": i, "max_iterations": 20})
           .json()["id"] for i in range(2 * workers)]
    for job_id in ids:
        job_settled(client, job_id, 600, baseline=False, interval=0.1)


def measure(client, workers: int, seeds: int) -> dict:
    adult_id = upload(client, adult(), "adult")
    warm_up(client, upload(client, planted_table(2000), "small"), workers)
    body = {"base": {**BASE, "dataset_id": adult_id},
            "grid": {"solvers": SOLVERS[:2], "tolerances": TOLERANCES, "seeds": list(range(seeds)),
                     "include_unconstrained": False}}
    sweep, wall = run_sweep(client, body)
    jobs = jobs_of(client, sweep)
    busy = [ts(j["finished_at"]) - ts(j["started_at"]) for j in jobs]
    return {"jobs": len(jobs), "succeeded": sweep["progress"]["succeeded"], "max_starts": max(j["starts"] for j in jobs),
            "wall_s": wall, "sum_job_s": sum(busy), "sum_solver_s": sum(j["result"]["solver_time_s"] for j in jobs),
            "parallel_efficiency": sum(busy) / (wall * workers),
            "jobs_per_worker": sorted(sum(j["worker"] == w for j in jobs) for w in {j["worker"] for j in jobs})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    result = {"load_average_at_start": os.getloadavg()[0], "cpu_count": os.cpu_count()}
    with tempfile.TemporaryDirectory() as home:
        with worker_hosts(Path(home) / "hosts", 2) as hosts:
            with hosts.stack.client() as client:
                result["two_hosts_object_storage"] = {
                    **measure(client, 2, args.seeds),
                    "isolation": "network namespaces" if hosts.spaces else "separate processes"}
        url, drop = pg_database()
        stack = start_stack("one-machine", Path(home) / "local", url, REDIS_URL, workers=2)
        try:
            with stack.client() as client:
                result["one_machine_shared_directory"] = measure(client, 2, args.seeds)
        finally:
            stop_stack(stack)
            drop()
    result["load_average_at_end"] = os.getloadavg()[0]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "multi_host.json").write_text(json.dumps(result, indent=2))
    h, o = result["two_hosts_object_storage"], result["one_machine_shared_directory"]
    md = ["# A sweep on two worker hosts over object storage", "",
          f"Adult (32,561 rows), linear, plada and penalty × {len(TOLERANCES)} DP tolerances × {args.seeds} seeds, "
          f"500 iterations; {result['cpu_count']} cores, load average {result['load_average_at_start']:.1f} at "
          f"start and {result['load_average_at_end']:.1f} at the end (other processes share the machine). "
          "Run: `python -m bench.system.multi_host`.", "",
          "| figure | 2 hosts, object storage | 1 machine, 2 workers, shared directory |", "|---|---|---|",
          f"| jobs succeeded / max starts per job | {h['succeeded']}/{h['jobs']} / {h['max_starts']} | "
          f"{o['succeeded']}/{o['jobs']} / {o['max_starts']} |",
          f"| jobs per worker | {h['jobs_per_worker']} | {o['jobs_per_worker']} |",
          f"| wall time (submit → sweep done) | {h['wall_s']:.1f} s | {o['wall_s']:.1f} s |",
          f"| sum of job times (started → finished) | {h['sum_job_s']:.1f} s | {o['sum_job_s']:.1f} s |",
          f"| sum of solver times | {h['sum_solver_s']:.1f} s | {o['sum_solver_s']:.1f} s |",
          f"| parallel efficiency (sum of job times / (wall × 2)) | {h['parallel_efficiency']:.2f} | "
          f"{o['parallel_efficiency']:.2f} |",
          f"| host isolation | {h['isolation']} | none |"]
    (RESULTS / "multi_host.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()

"""Cancel storm: many clients cancelling many queued jobs at once, against reads and submits at the same
concurrency, on a real API (PostgreSQL + Redis, one Celery worker running jobs meanwhile).

Issue 31: 50 clients cancelling about 2,000 queued jobs exhausted the connection pool (120 answers of 503, one
request over 60 s) while reads and submits did not. One owner submits ``--jobs`` long jobs (``--clients`` threads),
every job is read once, then cancelled once, by the same number of threads; each phase's wall time, requests/s,
latency percentiles (client side, request to full answer) and answer codes are printed as JSON.

    python -m bench.system.cancel_storm [--jobs 2000] [--clients 50]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from bench.common.datagen import planted_table
from bench.common.stack import REDIS_URL, pg_database, start_stack, stop_stack

SPEC = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"], "model": {"type": "linear"},
        "constraints": [{"type": "demographic_parity", "tolerance": 0.05}],
        "solver": {"name": "plada", "params": {"eta": 0.05}}, "max_iterations": 2_000_000, "time_limit_s": 600,
        "device": "cpu"}


def phase(name: str, url: str, key: str, clients: int, calls: list[tuple[str, str, dict]]) -> tuple[dict, list]:
    """Run ``calls`` (method, path, json) over ``clients`` threads, each with its own connection."""
    def run(chunk: list[tuple[str, str, dict]]) -> list[tuple[int, float, dict | None]]:
        out = []
        with httpx.Client(base_url=url, timeout=120, headers={"Authorization": f"Bearer {key}"}) as client:
            for method, path, body in chunk:
                sent = time.perf_counter()
                try:
                    answer = client.request(method, path, json=body)
                    code, payload = answer.status_code, (answer.json() if answer.status_code < 300 else None)
                except httpx.HTTPError:
                    code, payload = 0, None
                out.append((code, time.perf_counter() - sent, payload))
        return out

    chunks = [calls[i::clients] for i in range(clients)]
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = [r for chunk in pool.map(run, chunks) for r in chunk]
    wall = time.perf_counter() - started
    latency = np.array([r[1] for r in results]) * 1000
    summary = {"phase": name, "requests": len(results), "wall_s": round(wall, 2),
               "requests_per_s": round(len(results) / wall, 1),
               "p50_ms": round(float(np.percentile(latency, 50)), 1),
               "p99_ms": round(float(np.percentile(latency, 99)), 1), "max_ms": round(float(latency.max()), 1),
               "codes": dict(Counter(r[0] for r in results))}
    print(json.dumps(summary), flush=True)
    return summary, [r[2] for r in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=50)
    args = parser.parse_args()
    database_url, drop = pg_database()
    home = Path(tempfile.mkdtemp(prefix="cancel-storm-"))
    stack = start_stack("cancel-storm", home, database_url, REDIS_URL, workers=1,
                        extra_env={"FAIRSOLVE_MAX_ACTIVE_JOBS": str(args.jobs + 10),
                                   "FAIRSOLVE_RATE_LIMIT_PER_S": "100000", "FAIRSOLVE_RATE_LIMIT_BURST": "100000"})
    try:
        key = stack.new_key("storm")
        with stack.client(key) as client:
            answer = client.post("/api/v1/datasets", files={"file": ("d.csv", planted_table(400, seed=5).to_csv(
                index=False), "text/csv")})
            dataset = answer.json()["id"]
        spec = {**SPEC, "dataset_id": dataset}
        _, submitted = phase("submit", stack.url, key, args.clients, [("POST", "/api/v1/jobs", spec)] * args.jobs)
        ids = [s["id"] for s in submitted if s]
        phase("read", stack.url, key, args.clients, [("GET", f"/api/v1/jobs/{i}", None) for i in ids])
        phase("cancel", stack.url, key, args.clients, [("POST", f"/api/v1/jobs/{i}/cancel", None) for i in ids])
        with stack.client(key) as client:
            left = [j["status"] for j in client.get("/api/v1/jobs", params={"limit": 1000}).json()]
        print(json.dumps({"statuses_of_last_1000": dict(Counter(left))}), flush=True)
    finally:
        stop_stack(stack)
        drop()


if __name__ == "__main__":
    main()

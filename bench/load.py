"""Load: concurrent clients uploading, submitting and polling against a real API on PostgreSQL +
Redis with Celery workers; latency percentiles per route and the error count.

Each client has its own API key and loops for the run's duration: upload a small CSV (one time in
ten), submit a job on its dataset (with an ``Idempotency-Key``), then poll the job, the job list
and the dataset. Latency is measured in the client from request to full response.

    python -m bench.load [--clients 50] [--seconds 60] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

import httpx
import numpy as np
import redis

from tests.datagen import planted_table
from tests.stack import REDIS_URL, pg_database, start_stack, stop_stack

RESULTS = Path(__file__).resolve().parent / "results"
CSV = planted_table(300, seed=11).to_csv(index=False)
SPEC = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"], "model": {"type": "linear"},
        "constraints": [{"type": "demographic_parity", "tolerance": 0.05}],
        "solver": {"name": "plada", "params": {"eta": 0.5}}, "max_iterations": 50, "device": "cpu"}


async def client_loop(url: str, key: str, until: float, seed: int, timings: dict, errors: dict) -> None:
    rng = random.Random(seed)
    async with httpx.AsyncClient(base_url=url, timeout=30, headers={"Authorization": f"Bearer {key}"}) as client:

        async def call(route: str, method: str, path: str, ok: tuple[int, ...] = (200,), **kw):
            t0 = time.perf_counter()
            try:
                resp = await client.request(method, path, **kw)
            except httpx.HTTPError as exc:
                errors[route].append(type(exc).__name__)
                return None
            timings[route].append(time.perf_counter() - t0)
            if resp.status_code not in ok:
                errors[route].append(resp.status_code)
                return None
            return resp.json() if resp.content else None

        dataset = await call("POST /datasets", "POST", "/api/v1/datasets", (201,),
                             files={"file": ("d.csv", CSV, "text/csv")})
        while time.monotonic() < until:
            if rng.random() < 0.1:
                dataset = await call("POST /datasets", "POST", "/api/v1/datasets", (201,),
                                     files={"file": ("d.csv", CSV, "text/csv")}) or dataset
            if dataset is None:
                continue
            job = await call("POST /jobs", "POST", "/api/v1/jobs", (202,),
                             json={**SPEC, "dataset_id": dataset["id"], "seed": rng.randrange(1000)},
                             headers={"Idempotency-Key": uuid.uuid4().hex})
            for _ in range(3):
                if job is not None:
                    await call("GET /jobs/{id}", "GET", f"/api/v1/jobs/{job['id']}")
                await call("GET /jobs", "GET", "/api/v1/jobs", params={"limit": 20})
                await call("GET /datasets/{id}", "GET", f"/api/v1/datasets/{dataset['id']}")
                await asyncio.sleep(rng.uniform(0.05, 0.15))


async def run_load(url: str, keys: list[str], seconds: float) -> tuple[dict, dict]:
    timings: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, list] = defaultdict(list)
    until = time.monotonic() + seconds
    await asyncio.gather(*(client_loop(url, key, until, i, timings, errors) for i, key in enumerate(keys)))
    return timings, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    redis.Redis.from_url(REDIS_URL).flushdb()
    url, drop = pg_database()
    with tempfile.TemporaryDirectory() as home:
        stack = start_stack("load-bench", Path(home), url, REDIS_URL, workers=args.workers,
                            extra_env={"FAIRSOLVE_MAX_ACTIVE_JOBS": "100000"})
        try:
            keys = [stack.new_key(f"load-{i}") for i in range(args.clients)]
            started = time.perf_counter()
            timings, errors = asyncio.run(run_load(stack.url, keys, args.seconds))
            wall = time.perf_counter() - started
            with stack.client() as admin:
                metrics_text = admin.get("/metrics").text
        finally:
            stop_stack(stack)
            drop()
    routes = {}
    for route, values in sorted(timings.items()):
        ms = np.asarray(values) * 1000
        routes[route] = {"requests": len(values), "errors": len(errors.get(route, [])),
                         "p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)),
                         "p99_ms": float(np.percentile(ms, 99))}
    total = sum(r["requests"] for r in routes.values())
    result = {"clients": args.clients, "seconds": args.seconds, "workers": args.workers, "wall_s": wall,
              "requests": total, "requests_per_s": total / wall,
              "errors": sum(r["errors"] for r in routes.values()),
              "error_samples": {k: v[:5] for k, v in errors.items()}, "routes": routes,
              "jobs_succeeded_metric": [line for line in metrics_text.splitlines()
                                        if line.startswith('fairsolve_jobs{status="succeeded"}')]}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "load.json").write_text(json.dumps(result, indent=2))
    md = [f"# Load: {args.clients} clients × {args.seconds:.0f} s, PostgreSQL + Redis, {args.workers} workers", "",
          f"{total} requests ({total / wall:.0f}/s), {result['errors']} errors.", "",
          "| route | requests | errors | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|---|---|"]
    md += [f"| {r} | {v['requests']} | {v['errors']} | {v['p50_ms']:.1f} | {v['p95_ms']:.1f} | {v['p99_ms']:.1f} |"
           for r, v in routes.items()]
    (RESULTS / "load.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()

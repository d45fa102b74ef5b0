"""Load: concurrent clients uploading, submitting and polling against a real API on PostgreSQL +
Redis with Celery workers; latency percentiles per route and the error count.

Each client has its own API key and loops for the run's duration: upload a small CSV (one time in
ten), submit a job on its dataset (with an ``Idempotency-Key``), then three poll ticks, each reading
the job, the job list and the dataset and then waiting ``poll_s`` seconds before the next, as the
dashboard does (``POLL_MS`` = 1 s after each response). Clients start at moments spread uniformly
over one loop (3 poll periods): started together, 50 clients stay nearly in lockstep and send their
150 reads of a tick in one burst. Latency is measured in the client from request to full response.

One invocation runs one fresh stack per ``--poll-s`` value. The default, 1 s, is the dashboard's
cadence: 50 such clients offer about 170 requests/s and queue a job every 3 s each. ``--poll-s 0``
is a closed loop with no think time: every client fires its next request as soon as the last one
answers, so the API is saturated by construction and the run measures its capacity (requests/s);
its latencies are queueing time (50 clients / throughput), not service time.

    pip install -r requirements-bench.txt   # aiohttp, the clients
    python -m bench.system.load [--clients 50] [--seconds 60] [--workers 2] [--api-workers 2] [--poll-s 1 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

import aiohttp
import numpy as np
import redis
from prometheus_client.parser import text_string_to_metric_families

from bench.common.datagen import planted_table
from bench.common.stack import REDIS_URL, descendants, pg_database, start_stack, stop_stack

RESULTS = Path(__file__).resolve().parent / "results"
CSV = planted_table(300, seed=11).to_csv(index=False)
SPEC = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"], "model": {"type": "linear"},
        "constraints": [{"type": "demographic_parity", "tolerance": 0.05}],
        "solver": {"name": "plada", "params": {"eta": 0.5}}, "max_iterations": 50, "device": "cpu"}


def upload_form() -> aiohttp.FormData:
    form = aiohttp.FormData()
    form.add_field("file", CSV, filename="d.csv", content_type="text/csv")
    return form


async def client_loop(url: str, key: str, until: float, seed: int, poll_s: float, timings: dict,
                      errors: dict) -> None:
    """One client (aiohttp: about a fifth of httpx's CPU per request, measured here — the generator
    shares the machine's two cores with the service it measures)."""
    rng = random.Random(seed)
    async with aiohttp.ClientSession(base_url=url, headers={"Authorization": f"Bearer {key}"},
                                     timeout=aiohttp.ClientTimeout(total=30)) as client:

        async def call(route: str, method: str, path: str, ok: tuple[int, ...] = (200,), **kw):
            t0 = time.perf_counter()
            try:
                async with client.request(method, path, **kw) as resp:
                    body = await resp.read()
            except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
                errors[route].append(type(exc).__name__)
                return None
            timings[route].append(time.perf_counter() - t0)
            if resp.status not in ok:
                errors[route].append(resp.status)
                return None
            return json.loads(body) if method == "POST" else None  # reads are timed, not parsed: less client CPU

        await asyncio.sleep(rng.uniform(0, 3 * poll_s))  # users start at different moments, not in lockstep
        dataset = await call("POST /datasets", "POST", "/api/v1/datasets", (201,), data=upload_form())
        while time.monotonic() < until:
            if rng.random() < 0.1:
                dataset = await call("POST /datasets", "POST", "/api/v1/datasets", (201,), data=upload_form()) or dataset
            if dataset is None:
                continue
            job = await call("POST /jobs", "POST", "/api/v1/jobs", (202,),
                             json={**SPEC, "dataset_id": dataset["id"], "seed": rng.randrange(1000)},
                             headers={"Idempotency-Key": uuid.uuid4().hex})
            for _ in range(3):
                if job is not None:
                    await call("GET /jobs/{id}", "GET", f"/api/v1/jobs/{job['id']}")
                await call("GET /jobs", "GET", "/api/v1/jobs", params={"limit": "20"})
                await call("GET /datasets/{id}", "GET", f"/api/v1/datasets/{dataset['id']}")
                await asyncio.sleep(poll_s)


async def loop_lag(until: float, lags: list[float], period: float = 0.01) -> None:
    """How late the client's own event loop wakes a 10 ms sleep: the part of a client-side latency
    that is the load generator's (it shares the machine's two cores with the service)."""
    while time.monotonic() < until:
        t0 = time.perf_counter()
        await asyncio.sleep(period)
        lags.append(time.perf_counter() - t0 - period)


async def run_load(url: str, keys: list[str], seconds: float, poll_s: float) -> tuple[dict, dict, list[float]]:
    timings: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, list] = defaultdict(list)
    lags: list[float] = []
    until = time.monotonic() + seconds
    await asyncio.gather(loop_lag(until, lags),
                         *(client_loop(url, key, until, i, poll_s, timings, errors) for i, key in enumerate(keys)))
    return timings, errors, lags


def server_latencies(metrics_text: str, prefixes: tuple[str, ...] = ("/api/v1/datasets", "/api/v1/jobs"),
                     target_s: float = 0.1) -> dict[str, dict]:
    """Per route, from the API's own latency histogram (time inside the app, from the first byte of the
    request to the last of the response): requests, share answered within ``target_s`` and the p95,
    interpolated linearly inside its bucket as Prometheus' ``histogram_quantile`` does."""
    buckets: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for family in text_string_to_metric_families(metrics_text):
        if family.name != "fairsolve_http_request_duration_seconds":
            continue
        for sample in family.samples:
            route = sample.labels.get("route", "")
            if sample.name.endswith("_bucket") and route.startswith(prefixes):
                buckets[f"{sample.labels['method']} {route}"].append((float(sample.labels["le"]), sample.value))
    out = {}
    for route, pairs in sorted(buckets.items()):
        pairs.sort()
        total = pairs[-1][1]
        if not total:
            continue
        within = next(count for le, count in pairs if le >= target_s) / total
        rank, lower, below = 0.95 * total, 0.0, 0.0
        for le, count in pairs:
            if count >= rank:
                p95 = le if math.isinf(le) else lower + (le - lower) * (rank - below) / max(count - below, 1e-12)
                break
            lower, below = le, count
        out[route] = {"requests": int(total), "within_target": within, "p95_ms": 1000 * p95}
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (``/proc/<pid>/stat`` fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def api_cpu_seconds(pid: int) -> float:
    """CPU time of the API server and the processes it started (``FAIRSOLVE_API_WORKERS`` > 1)."""
    return sum(cpu_seconds(p) for p in {pid, *descendants(pid)})


def one_run(clients: int, seconds: float, workers: int, poll_s: float, target_ms: float, api_workers: int) -> dict:
    """A fresh stack (new database, empty queue), ``clients`` clients for ``seconds``; figures per route."""
    redis.Redis.from_url(REDIS_URL).flushdb()
    url, drop = pg_database()
    with tempfile.TemporaryDirectory() as home:
        stack = start_stack("load-bench", Path(home), url, REDIS_URL, workers=workers,
                            # the production trajectory flush period (the test stacks write every 0.25 s)
                            extra_env={"FAIRSOLVE_MAX_ACTIVE_JOBS": "100000", "FAIRSOLVE_TRAJECTORY_FLUSH_S": "1.0",
                                       "FAIRSOLVE_API_WORKERS": str(api_workers)})
        try:
            keys = [stack.new_key(f"load-{i}") for i in range(clients)]
            api_pid, load_before = stack.procs["api"].pid, os.getloadavg()
            api_cpu, started = api_cpu_seconds(api_pid), time.perf_counter()
            timings, errors, lags = asyncio.run(run_load(stack.url, keys, seconds, poll_s))
            wall, api_cpu = time.perf_counter() - started, api_cpu_seconds(api_pid) - api_cpu
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
    return {"clients": clients, "seconds": seconds, "workers": workers, "api_workers": api_workers, "poll_s": poll_s,
            "wall_s": wall,
            "requests": total, "requests_per_s": total / wall, "api_cpu_ms_per_request": 1000 * api_cpu / total,
            "load_average_at_start": load_before, "errors": sum(r["errors"] for r in routes.values()),
            "error_samples": {k: v[:5] for k, v in errors.items()}, "routes": routes,
            "client_loop_lag_ms": {f"p{q}": float(np.percentile(np.asarray(lags) * 1000, q)) for q in (50, 95, 99)},
            "server": server_latencies(metrics_text, target_s=target_ms / 1000),
            "jobs_succeeded_metric": [line for line in metrics_text.splitlines()
                                      if line.startswith('fairsolve_jobs{status="succeeded"}')]}


def markdown(run: dict, target_ms: float) -> list[str]:
    paced = run["poll_s"] > 0
    title = (f"## Dashboard-paced clients: {run['poll_s']:g} s between poll ticks" if paced
             else "## Saturation: no think time (closed loop; latencies are queueing time)")
    la = ", ".join(f"{x:.1f}" for x in run["load_average_at_start"])
    lines = [title, "",
             f"{run['requests']} requests ({run['requests_per_s']:.0f}/s), {run['errors']} errors; API "
             f"CPU ({run['api_workers']} processes) {run['api_cpu_ms_per_request']:.2f} ms per request; load average at start {la}.", "",
             "| route | requests | errors | p50 ms | p95 ms | p99 ms |" + (" p95 < target |" if paced else ""),
             "|---|---|---|---|---|---|" + ("---|" if paced else "")]
    for route, v in run["routes"].items():
        cell = ""
        if paced:
            cell = " n/a (upload) |" if route == "POST /datasets" else f" {'yes' if v['p95_ms'] < target_ms else 'NO'} |"
        lines.append(f"| {route} | {v['requests']} | {v['errors']} | {v['p50_ms']:.1f} | {v['p95_ms']:.1f} "
                     f"| {v['p99_ms']:.1f} |{cell}")
    lag = run["client_loop_lag_ms"]
    lines += ["", f"Client-side latencies include the load generator's own delay: its event loop woke a 10 ms sleep "
              f"late by {lag['p50']:.1f} / {lag['p95']:.1f} / {lag['p99']:.1f} ms (p50 / p95 / p99). The API's own "
              "histogram (time inside the app; p95 interpolated within its buckets):", "",
              f"| route (server side) | requests | answered within {target_ms:g} ms | p95 ms |", "|---|---|---|---|"]
    lines += [f"| {route} | {v['requests']} | {100 * v['within_target']:.1f} % | {v['p95_ms']:.1f} |"
              for route, v in run["server"].items()]
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--api-workers", type=int, default=2, help="API server processes (FAIRSOLVE_API_WORKERS)")
    parser.add_argument("--poll-s", type=float, nargs="+", default=[1.0, 0.0],
                        help="seconds a client waits after each poll tick; one run per value (0 = saturation)")
    parser.add_argument("--target-ms", type=float, default=100.0, help="issue 8's p95 target for reads and submits")
    args = parser.parse_args()
    runs = [one_run(args.clients, args.seconds, args.workers, poll, args.target_ms, args.api_workers)
            for poll in args.poll_s]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "load.json").write_text(json.dumps({"target_p95_ms": args.target_ms, "runs": runs}, indent=2))
    md = [f"# Load: {args.clients} clients × {args.seconds:.0f} s, PostgreSQL + Redis, {args.api_workers} API "
          f"processes, {args.workers} workers",
          "", "Generated by `python -m bench.system.load` (see its docstring for the client loop). Target: p95 under "
          f"{args.target_ms:g} ms for reads and submits, zero errors.", ""]
    for run in runs:
        md += markdown(run, args.target_ms)
    (RESULTS / "load.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()

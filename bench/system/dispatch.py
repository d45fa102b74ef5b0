"""Dispatch: how soon an idle worker starts a queued job, a tiny job through the service against the same solve
in-process, and a burst of small jobs (issue 33, item 3).

The stack is ``make run``'s launcher (API, job worker, audits worker, housekeeping worker, beat) on the embedded
SQLite database, with the embedded SQLite broker or with Redis as the broker. Each round, interleaved:

* in-process: ``solvers.run`` of the job's spec on the same 1,000-row table in a process of the bench's own, warm
  (imports done, one run before), at a job process's niceness and torch threads (:class:`InProcess`);
* the service: ``POST /api/v1/jobs`` of that spec, then ``GET /api/v1/jobs/{id}?wait_s=`` until it ends.
  POST → started is the job's ``started_at`` (written by the worker as it takes the job) less the client's clock
  before the POST (one machine, one clock); POST → succeeded is the client's wall time to the answer that says so;
  between them, the POST's own answer, started → finished (``finished_at``) and finished → the client's answer.

Then ``--burst`` small jobs are posted at once for each worker concurrency in ``--concurrency``: jobs per minute
from the first POST to the last job's end.

    python -m bench.system.dispatch [--rounds 7] [--burst 40] [--brokers embedded,redis] [--concurrency 1,2]

Writes ``bench/results/dispatch.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path

import httpx

from bench.common.datagen import planted_table
from bench.common.stack import REDIS_URL, ROOT, free_port

RESULTS = Path(__file__).resolve().parent / "results"
ROWS = 1000
SPEC = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"], "model": {"type": "linear"},
        "constraints": [], "solver": {"name": "erm", "params": {}}, "max_iterations": 200, "device": "cpu"}


def ts(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def load() -> float:
    return os.getloadavg()[0]


class Launched:
    """``python -m app.launcher`` in a home of its own; ``broker_url`` None: the embedded SQLite broker."""

    def __init__(self, home: Path, broker_url: str | None, concurrency: int | None) -> None:
        self.key = f"fsk_bench_{uuid.uuid4().hex}"
        port = free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
        env.update({"FAIRSOLVE_HOME": str(home), "PORT": str(port), "FAIRSOLVE_BOOTSTRAP_API_KEY": self.key,
                    "FAIRSOLVE_BROKER_KEY_PREFIX": f"dispatch-{uuid.uuid4().hex[:8]}:"})
        if broker_url:
            env["CELERY_BROKER_URL"] = broker_url
        if concurrency:
            env["FAIRSOLVE_WORKER_CONCURRENCY"] = str(concurrency)
        self.log = open(home / "launcher.log", "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "app.launcher"], cwd=ROOT, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        self.home = home

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60, headers={"Authorization": f"Bearer {self.key}"})

    def wait_ready(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.home / "launcher.log").read_text()[-4000:]
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise RuntimeError("the launcher's API did not come up")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def upload(client: httpx.Client, rows: int) -> str:
    resp = client.post("/api/v1/datasets", files={"file": ("tiny.csv", planted_table(rows).to_csv(index=False),
                                                           "text/csv")})
    resp.raise_for_status()
    return resp.json()["id"]


def submit(client: httpx.Client, dataset_id: str, seed: int) -> tuple[str, float]:
    job_id, sent, _ = submit_timed(client, dataset_id, seed)
    return job_id, sent


def submit_timed(client: httpx.Client, dataset_id: str, seed: int) -> tuple[str, float, float]:
    """(job id, the client's clock before the POST, the POST's own seconds)."""
    sent = time.time()
    resp = client.post("/api/v1/jobs", json={**SPEC, "dataset_id": dataset_id, "seed": seed})
    assert resp.status_code in (201, 202), resp.text
    return resp.json()["id"], sent, time.time() - sent


def wait_end(client: httpx.Client, job_id: str, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/api/v1/jobs/{job_id}", params={"wait_s": 30}).json()
        if job["status"] in ("succeeded", "failed", "cancelled"):
            return job
    raise TimeoutError(job_id)


def service_job(client: httpx.Client, dataset_id: str, seed: int, timeout: float = 300) -> dict:
    job_id, sent, post_s = submit_timed(client, dataset_id, seed)
    job = wait_end(client, job_id, timeout)
    done = time.time()
    assert job["status"] == "succeeded", job
    started, finished = ts(job["started_at"]), ts(job["finished_at"])
    return {"post_s": post_s, "post_to_started_s": started - sent, "post_to_succeeded_s": done - sent,
            "started_to_finished_s": finished - started, "finished_to_answer_s": done - finished,
            "solver_time_s": job["result"]["solver_time_s"], "read_s": read_round_trip(client, job_id)}


def read_round_trip(client: httpx.Client, job_id: str, repeats: int = 5) -> float:
    """The fastest of ``repeats`` authenticated reads of the ended job (``GET /api/v1/jobs/{id}``): one HTTP
    exchange with the API, its key check and one database read — what a job's POST and its answer each cost at
    the least."""
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        client.get(f"/api/v1/jobs/{job_id}").raise_for_status()
        best = min(best, time.perf_counter() - t0)
    return best


class InProcess:
    """The same solve in a process of this bench's own, at the niceness of a job process
    (``FAIRSOLVE_WORKER_NICE``, as ``worker.celery_app`` sets it) and with its torch threads: the table read once,
    ``solvers.run`` per call, warm (one run before the first timed one)."""

    def __init__(self, concurrency: int) -> None:
        self.conn, child = mp.Pipe()
        self.proc = mp.get_context("spawn").Process(target=_solver_process, args=(child, concurrency), daemon=True)
        self.proc.start()
        assert self.conn.recv() == "ready"

    def solve(self) -> float:
        self.conn.send("solve")
        return self.conn.recv()


def _solver_process(conn, concurrency: int) -> None:
    import torch

    from solvers.formats.model_file import problem_spec
    from app.core.settings import get_settings
    from solvers import run

    os.nice(get_settings().worker_nice)
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // concurrency))
    table = planted_table(ROWS)
    spec = problem_spec({**SPEC, "dataset_id": "in-process", "seed": 0})
    run(table, spec)
    conn.send("ready")
    while conn.recv() == "solve":
        t0 = time.perf_counter()
        run(table, spec)
        conn.send(time.perf_counter() - t0)


def rounds(stack: Launched, peer: InProcess, n: int) -> dict:
    with stack.client() as client:
        dataset_id = upload(client, ROWS)
        service_job(client, dataset_id, 0, timeout=1200)  # warm: the worker has started, its pool process is warm
        time.sleep(2)  # idle: the worker waits for work, as a worker between jobs does
        rows = []
        for i in range(n):
            inproc = peer.solve()
            time.sleep(1.0)  # the worker is idle when the job arrives
            row = service_job(client, dataset_id, i + 1)
            row.update(in_process_s=inproc, ratio=row["post_to_succeeded_s"] / inproc, load=load())
            rows.append(row)
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    return {"rounds": rows, "median": med, "max_post_to_started_s": max(r["post_to_started_s"] for r in rows)}


def burst(stack: Launched, n: int) -> dict:
    with stack.client() as client:
        dataset_id = upload(client, ROWS)
        service_job(client, dataset_id, 0, timeout=1200)  # the worker has started
        load_before = load()
        t0 = time.time()
        ids = [submit(client, dataset_id, seed)[0] for seed in range(1, n + 1)]
        posted = time.time() - t0
        jobs = [wait_end(client, j, timeout=1200) for j in ids]
        wall = max(ts(j["finished_at"]) for j in jobs) - t0
    return {"jobs": n, "succeeded": sum(j["status"] == "succeeded" for j in jobs), "post_all_s": posted,
            "wall_s": wall, "jobs_per_minute": 60 * n / wall, "load_before": load_before, "load_after": load()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--burst", type=int, default=40)
    parser.add_argument("--brokers", default="embedded,redis")
    parser.add_argument("--concurrency", default="1,2", help="worker concurrencies of the burst (embedded broker)")
    parser.add_argument("--output", default="dispatch")
    parser.add_argument("--merge", action="store_true", help="keep the other parts of an earlier run's results")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    out = RESULTS / f"{args.output}.json"
    result: dict = {"cores": cores, "rows": ROWS, "spec": SPEC, "dispatch": {}, "burst": {}}
    if args.merge and out.exists():
        result.update(json.loads(out.read_text()))
    peer = InProcess(concurrency=cores) if args.brokers else None
    for broker in [b for b in args.brokers.split(",") if b]:
        with tempfile.TemporaryDirectory() as home:
            stack = Launched(Path(home), None if broker == "embedded" else REDIS_URL, None)
            try:
                stack.wait_ready()
                result["dispatch"][broker] = rounds(stack, peer, args.rounds)
            finally:
                stack.stop()
        print(broker, json.dumps(result["dispatch"][broker]["median"]), flush=True)
        write(result, args)
    for concurrency in [int(c) for c in args.concurrency.split(",") if c] if args.burst > 0 else []:
        with tempfile.TemporaryDirectory() as home:
            stack = Launched(Path(home), None, concurrency)
            try:
                stack.wait_ready()
                result["burst"][str(concurrency)] = burst(stack, args.burst)
            finally:
                stack.stop()
        print("burst", concurrency, json.dumps(result["burst"][str(concurrency)]), flush=True)
        write(result, args)
    print((RESULTS / f"{args.output}.md").read_text())


def write(result: dict, args) -> None:
    """The results so far (each part as it ends: a long run stopped midway keeps what it measured)."""
    cores = result["cores"]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.output}.json").write_text(json.dumps(result, indent=2))
    md = [f"# Dispatch: a tiny job ({ROWS:,} rows, linear erm) through the launcher's stack against in-process",
          "", f"`python -m bench.system.dispatch --rounds {args.rounds} --burst {args.burst}`; {cores} cores; medians of "
          "interleaved rounds (load = 1-minute load average).", "",
          "| broker | POST → started (median / max) | POST → succeeded | in-process solve | ratio (median) | load |",
          "|---|---|---|---|---|---|"]
    for broker, d in result["dispatch"].items():
        m = d["median"]
        md.append(f"| {broker} | {1000 * m['post_to_started_s']:.0f} / {1000 * d['max_post_to_started_s']:.0f} ms | "
                  f"{m['post_to_succeeded_s']:.3f} s | {m['in_process_s']:.3f} s | {m['ratio']:.2f}× | "
                  f"{m['load']:.2f} |")
    parts = [(broker, d["median"]) for broker, d in result["dispatch"].items() if "post_s" in d["median"]]
    if parts:
        md += ["", "Where the time goes (medians; the worker's `started_at` / `finished_at` on the client's clock, one "
               "machine): the POST's own answer, its commit to the worker's start, the worker's start to the "
               "job's end (the solve, its table read, its stored result), the end's commit to the client's answer.",
               "", "| broker | POST answered | POST → started | started → finished | finished → answer |",
               "|---|---|---|---|---|"]
        md += [f"| {broker} | {1000 * m['post_s']:.0f} ms | {1000 * m['post_to_started_s']:.0f} ms | "
               f"{1000 * m['started_to_finished_s']:.0f} ms | {1000 * m['finished_to_answer_s']:.0f} ms |"
               for broker, m in parts]
    floors = [(broker, m) for broker, m in parts if "read_s" in m]
    if floors:
        md += ["", "The least a job through the API can add to its solve: its POST and the answer that it ended are two "
               "HTTP exchanges, each at least one authenticated read's round trip (the fastest of 5 reads of the "
               "ended job, median over the rounds); the service's overhead is POST → succeeded less the in-process "
               "solve, and 1.3× allows 0.3 of the solve:", "",
               "| broker | one read's round trip | service overhead | two round trips | overhead 1.3× allows |",
               "|---|---|---|---|---|"]
        md += [f"| {broker} | {1000 * m['read_s']:.1f} ms | {1000 * (m['post_to_succeeded_s'] - m['in_process_s']):.0f} ms"
               f" | {2000 * m['read_s']:.1f} ms | {300 * m['in_process_s']:.0f} ms |" for broker, m in floors]
    if result["burst"]:
        md += ["", "Small jobs posted at once (embedded broker, the launcher's stack):", "",
               "| worker concurrency | succeeded | wall | jobs / minute | load before → after |", "|---|---|---|---|---|"]
        for c, b in result["burst"].items():
            md.append(f"| {c} | {b['succeeded']}/{b['jobs']} | {b['wall_s']:.1f} s | {b['jobs_per_minute']:.0f} | "
                      f"{b['load_before']:.2f} → {b['load_after']:.2f} |")
    (RESULTS / f"{args.output}.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()

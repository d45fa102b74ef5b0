"""Submitting a job and waiting on a job's, a baseline's and a sweep's state through the API; restarting a stack's
API."""

from __future__ import annotations

import signal
import subprocess

from bench.common.stack import ROOT, answers
from bench.common.wait import wait_until

FUZZ_RATE_LIMIT = 1000.0  # requests per second per key on the shared PostgreSQL stack (the fuzzer paces under it)


def succeeded_job(stack, client, spec: dict) -> dict:
    """The job of ``spec`` once it has ended: accepted (202) and succeeded, else the assertion names the answer or
    the job's error."""
    resp = client.post("/api/v1/jobs", json=spec)
    assert resp.status_code == 202, resp.text
    job = stack.wait_job(client, resp.json()["id"], {"succeeded", "failed"})
    assert job["status"] == "succeeded", job["error"]
    return job


def job_when(client, job_id: str, ready, timeout: float = 120) -> dict:
    """The job once ``ready(job)`` holds (read every 0.2 s)."""
    seen: list[dict] = []

    def read() -> dict | None:
        seen.append(client.get(f"/api/v1/jobs/{job_id}").json())
        return seen[-1] if ready(seen[-1]) else None
    return wait_until(read, timeout, 0.2, lambda: f"job {job_id} ready (last read: {seen[-1]})")


def wait_baseline(client, job_id: str, timeout: float = 120) -> dict:
    """The job's unconstrained baseline once it has ended."""
    def ended() -> dict | None:
        baseline = client.get(f"/api/v1/jobs/{job_id}").json()["baseline"]
        return baseline if baseline is not None and baseline["status"] in ("succeeded", "failed") else None
    return wait_until(ended, timeout, 0.2, f"the baseline of job {job_id} ended")


def wait_sweep(client, sweep_id: str, timeout: float = 240) -> dict:
    """The sweep once it is no longer running."""
    def done() -> dict | None:
        sweep = client.get(f"/api/v1/sweeps/{sweep_id}").json()
        return sweep if sweep["status"] != "running" else None
    return wait_until(done, timeout, 0.3, f"sweep {sweep_id} done")


def restart_api(stack) -> None:
    """SIGKILL the API (no graceful shutdown) and start it again on the same port and database."""
    old = stack.procs["api"]
    cmd = old.args
    old.send_signal(signal.SIGKILL)
    old.wait(timeout=10)
    log = open(stack.home / "api.log", "ab")
    stack.procs["api"] = subprocess.Popen(cmd, cwd=ROOT, env=stack.env, stdout=log,
                                          stderr=subprocess.STDOUT)
    wait_until(lambda: answers(f"{stack.url}/readyz"), 60, 0.2, lambda: f"the restarted API ready\n{stack.log('api')}")

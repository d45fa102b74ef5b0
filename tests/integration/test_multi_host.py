"""Two worker hosts that share nothing with the API but PostgreSQL, Redis and an S3 server
(``bench.common.objectstore``): each has a ``FAIRSOLVE_HOME`` of its own and, where ``ip netns`` works (root on Linux),
a network namespace of its own that reaches only those three services (``bench.common.netns``); elsewhere they are
plain processes (``bench.common.hosts``).
A sweep runs on them; one host is SIGKILLed (its Celery main process and its pool) while it runs a job past a
checkpoint, and the reaper re-queues that job, which the other host resumes from the checkpoint it reads from the
object store. Every job succeeds exactly once and its artifacts are read through the API."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from datetime import datetime

import pytest

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload
from bench.common.wait import wait_until
from tests.support.jobs import wait_sweep
from bench.common.hosts import worker_hosts
from bench.common.stack import alive, descendants

ITERATIONS, ROWS, MODEL = 600, 3000, {"type": "mlp", "hidden": [32, 32]}  # about 1 s a job on a quiet core
# the reaper re-queues a job whose heartbeat (4 a second while it runs) is this old: long enough that a live host's
# niced solver process, starved on a loaded machine, is not taken for a dead one
STALE_AFTER_S = 10


@pytest.fixture
def hosts(tmp_path):
    env = {"FAIRSOLVE_CHECKPOINT_EVERY_S": "0.3", "FAIRSOLVE_REAP_EVERY_S": "1",
           "FAIRSOLVE_STALE_AFTER_S": str(STALE_AFTER_S)}
    with worker_hosts(tmp_path, 2, env) as deployment:
        yield deployment


def start_sweep(client, dataset_id: str) -> str:
    base = job_spec(dataset_id, max_iterations=ITERATIONS, model=MODEL, exact_enforcement=False)
    resp = client.post("/api/v1/sweeps", json={"base": base, "grid": {"tolerances": [0.1, 0.05], "seeds": [0, 1]}})
    assert resp.status_code == 202, resp.text
    return resp.json()["id"]


def kill_host_mid_job(stack, client, host: str) -> str:
    """SIGKILL ``host`` (its Celery main process and pool) once it runs a job with a checkpoint at iteration 50 or
    later and 200 iterations to go; the job."""
    main = stack.procs[host]

    def running_here() -> tuple[dict, set[int]] | None:
        pool = descendants(main.pid)
        for job in client.get("/api/v1/jobs", params={"status": "running"}).json():
            pid = int((job["worker"] or ":0").rsplit(":", 1)[1])
            if pid in pool and (job["progress"].get("checkpoint_iteration") or 0) >= 50 \
                    and job["progress"].get("iteration", 0) < ITERATIONS - 200:
                return job, pool
        return None

    job, pool = wait_until(running_here, 120, 0.05,
                           lambda: f"{host} running a job past a checkpoint\n{stack.log(host)}")
    for victim in (main.pid, *pool):
        os.kill(victim, signal.SIGKILL)
    main.wait(timeout=10)
    wait_until(lambda: not any(alive(p) for p in pool), 10, 0.05, f"{host}'s killed pool {pool} gone")
    del stack.procs[host]  # dead on purpose: wait_job checks the others
    return job["id"]


def test_a_sweep_on_two_hosts_survives_losing_one(hosts, tmp_path):
    stack, s3, spaces = hosts.stack, hosts.s3, hosts.spaces
    if spaces:  # a host reaches the database, the broker and the object store, and nothing else: not the API
        probe = "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=2)"
        port = stack.url.rsplit(":", 1)[1]
        assert subprocess.run([*spaces["host-b"], sys.executable, "-c", probe, port], capture_output=True).returncode
        assert not subprocess.run([sys.executable, "-c", probe, port], capture_output=True).returncode
    with stack.client() as client:
        dataset = upload(client, planted_table(ROWS, seed=5))
        sweep_id = start_sweep(client, dataset["id"])
        killed = kill_host_mid_job(stack, client, "host-b")
        sweep = wait_sweep(client, sweep_id, timeout=180)
        assert sweep["status"] == "succeeded", sweep["failures"]
        ids = [j for p in sweep["points"] for j in p["job_ids"]]
        jobs = {j: client.get(f"/api/v1/jobs/{j}").json() for j in ids}
        assert len(jobs) == 6 and all(j["status"] == "succeeded" for j in jobs.values())
        survivor = descendants(stack.procs["host-c"].pid)
        for job_id, job in jobs.items():
            traj = client.get(f"/api/v1/jobs/{job_id}/trajectory", params={"max_points": 100_000}).json()
            assert [p["iteration"] for p in traj["points"]] == list(range(1, ITERATIONS + 1)), job_id  # once each
            for art in job["artifacts"]:  # read from the object store by the API, which never saw the files written
                body = client.get(f"/api/v1/jobs/{job_id}/artifacts/{art['kind']}")
                assert body.status_code == 200 and hashlib.sha256(body.content).hexdigest() == art["sha256"]
            assert sorted(a["kind"] for a in job["artifacts"]) == ["predictions", "weights"]
        moved = jobs[killed]
        assert moved["starts"] == 2 and 50 <= moved["result"]["resumed_from"] < ITERATIONS, moved
        assert int(moved["worker"].rsplit(":", 1)[1]) in survivor  # resumed on the other host
        assert all(j["starts"] == 1 for i, j in jobs.items() if i != killed), stack.log("housekeeping")
        # nothing went through a shared directory: the API's home holds no stored file, each host only its cache
        api_storage = tmp_path / "api" / "storage"
        assert not any(p.is_file() for sub in ("datasets", "artifacts", "checkpoints")
                       for p in (api_storage / sub).rglob("*"))
        cached = {p.name.split("-", 1)[0] for p in (tmp_path / "host-c" / "storage" / "cache").iterdir()}
        assert dataset["sha256"] in cached
        bucket = s3.client()
        keys = [o["Key"] for page in bucket.get_paginator("list_objects_v2").paginate(Bucket=hosts.bucket)
                for o in page.get("Contents", [])]
        assert not [k for k in keys if "/checkpoints/" in k]  # spent when their jobs ended
        assert sum("/artifacts/" in k for k in keys) >= 2 * len(jobs)
        started = [datetime.fromisoformat(j["started_at"]) for j in jobs.values()]
        finished = [datetime.fromisoformat(j["finished_at"]) for j in jobs.values()]
        busy = sum((f - s).total_seconds() for s, f in zip(started, finished))
        wall = (max(finished) - min(started)).total_seconds()
        print(f"\n{len(jobs)} jobs on 2 hosts: wall {wall:.1f} s, summed job time {busy:.1f} s, "
              f"parallel efficiency {busy / (2 * wall):.2f} (one host lost mid-job; "
              f"{'network namespaces' if spaces else 'plain processes'})")

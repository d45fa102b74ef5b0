"""Chaos: 8 jobs while the worker's pool process is SIGKILLed twice (the killed jobs and several still queued
behind them). Every job ends `succeeded`
exactly once (one trajectory row per iteration, one set of artifacts), and a killed job resumes
from its checkpoint instead of starting over."""

from __future__ import annotations

import os
import signal

import pytest

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload
from bench.common.stack import REDIS_URL, alive, descendants, pg_database, start_stack, stop_stack
from bench.common.wait import wait_until

N_JOBS, ITERATIONS = 8, 1000
# Each job must run long enough to be killed after its first checkpoint (0.3 s) and before its last
# 200 iterations: a linear PLADA solve does 1000 iterations in under 0.5 s, an MLP on 5000 rows in about 2 s.
ROWS, MODEL = 5000, {"type": "mlp", "hidden": [64, 64]}


@pytest.fixture
def chaos_stack(tmp_path):
    url, drop = pg_database()
    stack = start_stack("chaos", tmp_path, url, REDIS_URL, extra_env={"FAIRSOLVE_CHECKPOINT_EVERY_S": "0.3"})
    yield stack
    stop_stack(stack)
    drop()


def kill_pool_while_running(stack, client, ids: list[str], killed: list[str]) -> None:
    """Wait until a job is past a checkpoint, then SIGKILL the pool process running it."""
    def ready() -> list[dict]:
        jobs = client.get("/api/v1/jobs", params={"status": "running"}).json()
        return [j for j in jobs if j["id"] in ids and j["id"] not in killed
                and (j["progress"].get("checkpoint_iteration") or 0) > 0
                and j["progress"].get("iteration", 0) < ITERATIONS - 200]

    victim = wait_until(ready, 120, 0.05, "a job past a checkpoint")[0]
    pool = descendants(stack.procs["worker"].pid)
    assert pool, "the worker has no pool process"
    for pid in pool:
        os.kill(pid, signal.SIGKILL)
    killed.append(victim["id"])
    wait_until(lambda: not any(alive(pid) for pid in pool), 10, 0.05, f"the killed pool {pool} gone")


def test_queued_and_running_jobs_survive_two_sigkills(chaos_stack):
    stack = chaos_stack
    with stack.client() as client:
        dataset = upload(client, planted_table(ROWS, seed=5))
        ids = [client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=ITERATIONS, seed=i, model=MODEL,
                                                         exact_enforcement=False)).json()["id"]
               for i in range(N_JOBS)]  # exactly ITERATIONS iterates: no enforcement continuation
        killed: list[str] = []
        kill_pool_while_running(stack, client, ids, killed)
        kill_pool_while_running(stack, client, ids, killed)
        jobs = [stack.wait_job(client, job_id, {"succeeded", "failed", "cancelled"}, timeout=300) for job_id in ids]
        assert [j["status"] for j in jobs] == ["succeeded"] * N_JOBS, [j["error"] for j in jobs]
        for job in jobs:
            traj = client.get(f"/api/v1/jobs/{job['id']}/trajectory", params={"max_points": 100_000}).json()
            assert [p["iteration"] for p in traj["points"]] == list(range(1, ITERATIONS + 1)), job["id"]
            assert sorted(a["kind"] for a in job["artifacts"]) == ["predictions", "weights"]
            assert job["result"]["iterations"] == ITERATIONS
        by_id = {j["id"]: j for j in jobs}
        for job_id in killed:
            assert by_id[job_id]["starts"] == 2, by_id[job_id]
            assert 0 < by_id[job_id]["result"]["resumed_from"] < ITERATIONS
        assert all(by_id[i]["starts"] == 1 for i in ids if i not in killed)
        assert not list((stack.home / "storage" / "checkpoints").glob("*.safetensors"))  # spent when jobs end

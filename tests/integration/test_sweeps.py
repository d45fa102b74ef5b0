"""Sweeps through real processes: expansion, warm-start chains, summaries, charts, exports, SIGKILL."""

from __future__ import annotations

import csv
import os
import io
import signal

import pytest

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload
from bench.common.stack import alive, descendants
from bench.common.wait import wait_until
from tests.support.jobs import wait_sweep


def sweep_body(dataset_id: str, **grid) -> dict:
    base = job_spec(dataset_id, max_iterations=60)
    return {"base": base, "grid": {"tolerances": [0.1, 0.04], "seeds": [0, 1],
                                   "solvers": [{"name": "plada", "params": {"eta": 0.5}},
                                               {"name": "penalty", "params": {"penalty": 2.0}}], **grid},
            "warm_start": True}


def test_sweep_end_to_end(postgres_stack):
    stack = postgres_stack
    with stack.client() as client:
        ds = upload(client, planted_table(1500, seed=5))
        resp = client.post("/api/v1/sweeps", json=sweep_body(ds["id"]))
        assert resp.status_code == 202, resp.text
        assert resp.json()["n_jobs"] == 2 * 2 * 2 + 2  # solvers × tolerances × seeds + erm per seed
        sweep = wait_sweep(client, resp.json()["id"])
        assert sweep["status"] == "succeeded", sweep["failures"]
        assert sweep["progress"]["succeeded"] == 10 and not sweep["failures"]

        points = {(p["solver"], p["tolerance"]): p for p in sweep["points"]}
        assert set(points) == {("plada", 0.1), ("plada", 0.04), ("penalty", 0.1), ("penalty", 0.04), ("erm", None)}
        acc = points[("plada", 0.04)]["metrics"]["test"]["accuracy"]
        assert acc["n"] == 2 and acc["ci_low"] is None and acc["ci_note"].startswith("too few seeds")  # 2 seeds
        jobs = [client.get(f"/api/v1/jobs/{j}").json() for j in points[("plada", 0.04)]["job_ids"]]
        assert {j["spec"]["seed"] for j in jobs} == {0, 1}
        assert acc["mean"] == pytest.approx(sum(j["metrics"]["test"]["accuracy"] for j in jobs) / 2)

        # warm start: the tighter tolerance starts from the looser one's solution
        loose = {j: client.get(f"/api/v1/jobs/{j}").json() for j in points[("plada", 0.1)]["job_ids"]}
        assert all(not j["result"]["warm_started"] for j in loose.values())
        assert all(j["result"]["warm_started"] for j in jobs)

        front = sweep["pareto"]
        assert front["x"] == "demographic_parity" and front["y"] == "accuracy"
        means = [(p["metrics"]["test"]["demographic_parity"]["mean"], p["metrics"]["test"]["accuracy"]["mean"])
                 for p in front["points"]]
        for a in means:  # nobody on the front is dominated by any sweep point
            for p in sweep["points"]:
                b = (p["metrics"]["test"]["demographic_parity"]["mean"], p["metrics"]["test"]["accuracy"]["mean"])
                assert not (b[0] <= a[0] and b[1] >= a[1] and b != a)

        for kind, params in (("pareto", {}), ("trajectories", {"solver": "plada"}), ("radar", {}),
                             ("groups", {"metric": "demographic_parity"})):
            fig = client.get(f"/api/v1/sweeps/{sweep['id']}/charts/{kind}", params=params)
            assert fig.status_code == 200, (kind, fig.text)
            assert fig.json()["data"], kind
        pareto = client.get(f"/api/v1/sweeps/{sweep['id']}/charts/pareto").json()
        clicked = {d["customdata"][0][0] for d in pareto["data"]}
        assert clicked <= {j for p in sweep["points"] for j in p["job_ids"]}

        html = client.get(f"/api/v1/sweeps/{sweep['id']}/report", params={"format": "html"}).text
        assert "Plotly.newPlot" in html and "<script src=" not in html and ds["sha256"] in html
        rows = list(csv.DictReader(io.StringIO(client.get(f"/api/v1/sweeps/{sweep['id']}/report",
                                                          params={"format": "csv"}).text)))
        assert len(rows) == 10 and {r["status"] for r in rows} == {"succeeded"}
        report = client.get(f"/api/v1/sweeps/{sweep['id']}/report", params={"format": "json"}).json()
        assert report["dataset"]["sha256"] == ds["sha256"] and len(report["jobs"]) == 10


def test_sweep_validation(embedded_stack):
    with embedded_stack.client() as client:
        ds = upload(client, planted_table(300, seed=6))
        big = sweep_body(ds["id"], tolerances=[i / 1000 for i in range(1, 100)], seeds=list(range(6)))
        resp = client.post("/api/v1/sweeps", json=big)
        assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["body", "grid"]
        resp = client.post("/api/v1/sweeps", json=sweep_body(ds["id"], params={"no_such": [1, 2]}))
        assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["body", "grid", "params", "no_such"]
        resp = client.post("/api/v1/sweeps", json=sweep_body(ds["id"], solvers=[{"name": "nope"}]))
        assert resp.status_code == 422 and resp.json()["detail"][0]["loc"][:4] == ["body", "grid", "solvers", 0]
        resp = client.post("/api/v1/sweeps", json=sweep_body(ds["id"], params={"eta": ["fast"]}))
        assert resp.status_code == 422 and resp.json()["detail"][0]["loc"][:3] == ["body", "grid", "solvers"]


def test_sigkill_of_the_process_running_a_job_loses_nothing(postgres_stack):
    """The pool process running a job is killed: the task is redelivered and every job ends succeeded."""
    stack = postgres_stack
    with stack.client() as client:
        ds = upload(client, planted_table(3000, seed=7))
        body = sweep_body(ds["id"], tolerances=[0.05], seeds=[0, 1], include_unconstrained=False,
                          solvers=[{"name": "plada", "params": {"eta": 0.5}}])
        body["base"]["max_iterations"] = 8000
        body["base"]["exact_enforcement"] = False  # exactly 8000 iterates
        body["warm_start"] = False
        sweep_id = client.post("/api/v1/sweeps", json=body).json()["id"]
        def running() -> list[str]:
            sweep = client.get(f"/api/v1/sweeps/{sweep_id}").json()
            jobs = [client.get(f"/api/v1/jobs/{j}").json() for p in sweep["points"] for j in p["job_ids"]]
            return [j["id"] for j in jobs if j["status"] == "running" and j["progress"].get("iteration", 0) > 20
                    and j["progress"]["iteration"] < 4000]
        victim = wait_until(running, 60, 0.2, "a sweep job running between iterations 20 and 4000")[0]
        pool = descendants(stack.procs["worker"].pid)
        assert pool, "the worker has no pool process"
        for pid in pool:
            os.kill(pid, signal.SIGKILL)
        sweep = wait_sweep(client, sweep_id, timeout=300)
        assert sweep["status"] == "succeeded", sweep
        job = client.get(f"/api/v1/jobs/{victim}").json()
        assert job["status"] == "succeeded" and job["starts"] == 2 and job["attempts"] == 1
        assert job["result"]["iterations"] == 8000
        traj = client.get(f"/api/v1/jobs/{victim}/trajectory", params={"max_points": 100000}).json()
        assert traj["total_points"] == 8000  # the restart replaced the partial trajectory, no duplicates
        assert not any(alive(pid) for pid in pool)


def test_reaper_requeues_a_job_whose_worker_vanished(postgres_stack):
    """A job left `running` with a stale heartbeat (its worker died without redelivery) is re-queued
    by the beat task and completes as a new attempt."""
    from datetime import datetime, timedelta, timezone

    from celery import Celery
    from sqlalchemy import create_engine, text

    stack = postgres_stack
    with stack.client() as client:
        ds = upload(client, planted_table(500, seed=8))
        job_id = client.post("/api/v1/jobs", json=job_spec(ds["id"], max_iterations=30)).json()["id"]
        assert stack.wait_job(client, job_id, {"succeeded"})["starts"] == 1
        engine = create_engine(stack.env["DATABASE_URL"])
        with engine.begin() as conn:  # as if the worker had died in the middle of the run
            conn.execute(text("UPDATE jobs SET status='running', heartbeat_at=:t, finished_at=NULL WHERE id=:id"),
                         {"t": datetime.now(timezone.utc) - timedelta(hours=1), "id": job_id})
        engine.dispose()
        sender = Celery(broker=stack.env["CELERY_BROKER_URL"])
        sender.conf.broker_transport_options = {"global_keyprefix": stack.env["FAIRSOLVE_BROKER_KEY_PREFIX"]}
        sender.send_task("fairsolve.reap_stale_jobs", queue="cpu")
        def second_attempt_ended() -> dict | None:
            job = client.get(f"/api/v1/jobs/{job_id}").json()
            return job if job["status"] in ("succeeded", "failed") and job["attempts"] == 2 else None
        job = wait_until(second_attempt_ended, 60, 0.2, f"job {job_id} ended after its second attempt")
        assert job["status"] == "succeeded" and job["attempts"] == 2 and job["starts"] == 2, job
        traj = client.get(f"/api/v1/jobs/{job_id}/trajectory", params={"max_points": 1000}).json()
        assert traj["total_points"] == 30

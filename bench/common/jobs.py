"""Jobs through a running stack's API, as a user submits them: upload a table, a job spec with the suite's
defaults, resources for a fuzzer to hit, the jobs still active."""

from __future__ import annotations

import pandas as pd

from app.render.charts import CHARTS
from bench.common.datagen import planted_table
from bench.common.wait import wait_until


def upload(client, frame: pd.DataFrame, name: str = "planted") -> dict:
    resp = client.post("/api/v1/datasets", files={"file": (f"{name}.csv", frame.to_csv(index=False), "text/csv")},
                       data={"name": name})
    assert resp.status_code == 201, resp.text
    return resp.json()


def job_spec(dataset_id: str, **overrides) -> dict:
    spec = {"dataset_id": dataset_id, "target": "income", "positive_label": ">50K", "sensitive": ["sex"],
            "model": {"type": "linear"}, "objective": "logistic",
            "constraints": [{"type": "demographic_parity", "tolerance": 0.05}],
            "solver": {"name": "plada", "params": {"eta": 0.05}},
            "split": {"test": 0.2, "validation": 0.2, "seed": 0}, "max_iterations": 300, "device": "cpu"}
    spec.update(overrides)
    return spec


def seed(stack) -> dict[str, list]:
    """Resources for the fuzzer to hit: ids by path parameter name."""
    with stack.client() as client:
        main = upload(client, planted_table(300), name="fuzz")
        spare = upload(client, planted_table(50, seed=1), name="fuzz-spare")
        job = client.post("/api/v1/jobs", json=job_spec(main["id"], max_iterations=30)).json()
        sweep = client.post("/api/v1/sweeps", json={
            "base": job_spec(main["id"], max_iterations=20),
            "grid": {"tolerances": [0.1], "seeds": [0], "solvers": [{"name": "penalty", "params": {"penalty": 2.0}}],
                     "include_unconstrained": False}}).json()
        try:  # a finished job has artifacts and charts; a slow one is still a target
            job = stack.wait_job(client, job["id"], {"succeeded", "failed"}, timeout=90)
        except AssertionError:
            job = client.get(f"/api/v1/jobs/{job['id']}").json()
        key = client.post("/api/v1/keys", json={"owner": "fuzz-revocable"}).json()
    return {"dataset_id": [main["id"], spare["id"]], "job_id": [job["id"]], "sweep_id": [sweep["id"]],
            "key_id": [key["id"]], "kind": sorted(CHARTS) + [a["kind"] for a in job["artifacts"]] + ["pareto", "radar"]}


def active_jobs(stack) -> set[str]:
    with stack.client() as client:
        return {job["id"] for status in ("queued", "waiting", "running")
                for job in client.get("/api/v1/jobs", params={"status": status, "limit": 1000}).json()}


ACTIVE = ("queued", "waiting", "running")


def job_settled(client, job_id: str, timeout: float, baseline: bool = True, interval: float = 0.2) -> dict:
    """The job as last read once it has ended and (with ``baseline``) its unconstrained baseline, which runs next on
    the same worker, is no longer queued or running, so that the next job starts on an idle worker. A benchmark
    measures on after ``timeout`` s: the job is returned as read then, whatever its state."""
    seen: list[dict] = []

    def settled() -> bool:
        seen.append(client.get(f"/api/v1/jobs/{job_id}").json())
        job = seen[-1]
        return job["status"] not in ACTIVE and not (baseline and (job.get("baseline") or {}).get("status") in ACTIVE)
    try:
        wait_until(settled, timeout, interval, f"job {job_id} and its baseline ended")
    except AssertionError:
        pass
    return seen[-1]

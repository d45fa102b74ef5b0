"""Upload → submit → poll → trajectory, charts and artifacts, through real processes."""

from __future__ import annotations

import io
import math

import pandas as pd
import pytest
import torch
from safetensors.torch import load

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload
from bench.common.wait import wait_until


def test_upload_submit_trajectory_charts(stack):
    frame = planted_table(2000)
    with stack.client() as client:
        dataset = upload(client, frame)
        assert dataset["n_rows"] == 2000
        by_name = {c["name"]: c for c in dataset["columns"]}
        assert by_name["workclass"]["n_missing"] == 40 and by_name["sex"]["n_distinct"] == 2

        resp = client.post("/api/v1/jobs", json=job_spec(dataset["id"]))
        assert resp.status_code == 202, resp.text
        assert resp.json()["status"] == "queued"
        job = stack.wait_job(client, resp.json()["id"], {"succeeded", "failed"})
        assert job["status"] == "succeeded", job["error"]

        iterations = job["result"]["iterations"]  # 300, plus the exact enforcement's continuation if it ran
        assert iterations >= 300 and job["progress"]["iteration"] == iterations
        test = job["metrics"]["test"]
        assert 0.5 < test["accuracy"] <= 1 and 0 <= test["demographic_parity"] <= 1
        rates = test["demographic_parity_by_group"]
        assert set(rates) == {"Male", "Female"}
        assert test["demographic_parity"] == pytest.approx(max(rates.values()) - min(rates.values()), abs=1e-9)

        traj = client.get(f"/api/v1/jobs/{job['id']}/trajectory", params={"max_points": 100000}).json()
        assert traj["total_points"] == iterations == len(traj["points"])
        assert [p["iteration"] for p in traj["points"]] == list(range(1, iterations + 1))
        assert all("lambda" in p["duals"] for p in traj["points"])
        small = client.get(f"/api/v1/jobs/{job['id']}/trajectory", params={"max_points": 40}).json()["points"]
        step = math.ceil(iterations / 39)  # evenly spaced, first and last kept (issue 19 #14: it returned 2 points)
        assert [p["iteration"] for p in small] == sorted({*range(1, iterations + 1, step), iterations})
        assert len(small) <= 40
        assert small[-1] == traj["points"][-1]

        fig = client.get(f"/api/v1/jobs/{job['id']}/charts/trajectory").json()
        objective = next(t for t in fig["data"] if t["name"] == "objective")
        assert objective["x"][-1] == iterations
        assert objective["y"][-1] == pytest.approx(traj["points"][-1]["objective"])

        scores = client.get(f"/api/v1/jobs/{job['id']}/charts/scores").json()
        counts = {t["name"].split(" (")[0]: sum(_values(t["customdata"])) for t in scores["data"]}
        assert counts == test["group_sizes"]

        page = client.get(f"/api/v1/jobs/{job['id']}/charts/scores", params={"format": "html", "plotly": "link"})
        assert page.status_code == 200 and 'src="/static/plotly.min.js"' in page.text
        js = client.get("/static/plotly.min.js")
        assert js.status_code == 200 and len(js.content) > 1_000_000

        weights = load(client.get(f"/api/v1/jobs/{job['id']}/artifacts/weights").content)
        assert all(isinstance(t, torch.Tensor) and torch.isfinite(t).all() for t in weights.values())
        preds = pd.read_parquet(io.BytesIO(client.get(f"/api/v1/jobs/{job['id']}/artifacts/predictions").content))
        assert len(preds) == test["n"]
        assert ((preds["score"] > 0.5).astype(int) == preds["prediction"]).all()
        assert (preds["prediction"] == preds["label"]).mean() == pytest.approx(test["accuracy"])


def _values(customdata) -> list[int]:
    """Plotly may serialise arrays as typed buffers; decode either form."""
    if isinstance(customdata, dict):
        import base64

        import numpy as np
        return np.frombuffer(base64.b64decode(customdata["bdata"]), dtype=customdata["dtype"]).tolist()
    return customdata


def test_cancel_keeps_partial_trajectory(postgres_stack):
    stack = postgres_stack
    with stack.client() as client:
        dataset = upload(client, planted_table(4000, seed=1))
        resp = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=2_000_000))
        job_id = resp.json()["id"]
        job = stack.wait_job(client, job_id, {"running"})
        wait_until(lambda: client.get(f"/api/v1/jobs/{job_id}").json()["progress"].get("iteration", 0) >= 50, 120, 0.1,
                   "the job at iteration 50")
        assert client.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 202
        job = stack.wait_job(client, job_id, {"cancelled", "succeeded", "failed"}, timeout=60)
        assert job["status"] == "cancelled"
        traj = client.get(f"/api/v1/jobs/{job_id}/trajectory", params={"max_points": 10}).json()
        assert 50 <= traj["total_points"] < 2_000_000
        assert traj["points"][-1]["iteration"] == traj["total_points"] == job["result"]["iterations"]
        assert client.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 202  # idempotent


def test_solver_failure_is_reported_and_worker_keeps_serving(embedded_stack):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the failure is provoked by asking for a missing GPU")
    stack = embedded_stack
    with stack.client() as client:
        dataset = upload(client, planted_table(600, seed=2))
        bad = client.post("/api/v1/jobs", json=job_spec(dataset["id"], device="cuda")).json()
        assert bad["queue"] == "gpu"
        failed = stack.wait_job(client, bad["id"], {"succeeded", "failed"})
        assert failed["status"] == "failed" and "CUDA" in failed["error"] and "Traceback" not in failed["error"]
        good = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=20)).json()
        assert stack.wait_job(client, good["id"], {"succeeded", "failed"})["status"] == "succeeded"
        assert failed["finished_at"] is not None and failed["artifacts"] == []  # ended, nothing half-written

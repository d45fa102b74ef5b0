"""group_thresholds through the real API and worker on PostgreSQL + Redis: post-processing an existing job's
model (``base_job_id``), its exact-LP record, and the 422s that name ``base_job_id``."""

from __future__ import annotations

import io

import torch
from safetensors.torch import load

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload

LOC = ["body", "solver", "params", "base_job_id"]


def _weights(client, job_id: str) -> dict[str, torch.Tensor]:
    resp = client.get(f"/api/v1/jobs/{job_id}/artifacts/weights")
    assert resp.status_code == 200, resp.text
    return load(io.BytesIO(resp.content).getvalue())


def test_post_processing_an_existing_jobs_model(postgres_stack):
    stack = postgres_stack
    with stack.client() as client:
        dataset = upload(client, planted_table(1500, seed=3), name="thresholds")
        base = client.post("/api/v1/jobs", json=job_spec(dataset["id"], solver={"name": "erm"}, max_iterations=150))
        assert base.status_code == 202, base.text
        base_job = stack.wait_job(client, base.json()["id"], {"succeeded", "failed"})
        assert base_job["status"] == "succeeded", base_job["error"]

        params = {"base_job_id": base_job["id"]}
        spec = job_spec(dataset["id"], solver={"name": "group_thresholds", "params": params},
                        constraints=[{"type": "demographic_parity", "tolerance": 0.05}])
        resp = client.post("/api/v1/jobs", json=spec)
        assert resp.status_code == 202, resp.text
        job = stack.wait_job(client, resp.json()["id"], {"succeeded", "failed"})
        assert job["status"] == "succeeded", job["error"]
        assert job["result"]["iterations"] == 1                           # no training: the base model as it is
        record = job["result"]["enforcement"]
        assert record["method"] == "group_thresholds" and record["split"] == "validation"
        assert not record["randomized"] and record["status"] == "optimal"  # DP: deterministic, exact
        assert job["metrics"]["validation"]["demographic_parity"] == record["realised_gaps"]["demographic_parity"]
        assert job["metrics"]["validation"]["demographic_parity"] <= 0.05
        base_weights, weights = _weights(client, base_job["id"]), _weights(client, job["id"])
        for key, value in base_weights.items():                           # the base job's model, wrapped
            torch.testing.assert_close(weights[key.replace("net.", "net.base.", 1)], value, rtol=0, atol=0)
        assert client.get(f"/api/v1/jobs/{job['id']}/charts/roc").status_code == 200

        for override, words in [({"split": {"test": 0.2, "validation": 0.2, "seed": 1}}, "split"),
                                ({"model": {"type": "mlp", "hidden": [8]}}, "model"),
                                ({"solver": {"name": "group_thresholds", "params": {"base_job_id": "0" * 32}}},
                                 "not found")]:
            bad = client.post("/api/v1/jobs", json={**spec, **override})
            assert bad.status_code == 422, bad.text
            detail = bad.json()["detail"][0]
            assert detail["loc"] == LOC and words in detail["msg"]

"""A gbdt job through real API and worker processes: one trajectory point per boosting round, LightGBM's text model
as the weights, and the audit model file re-scoring the test rows exactly as the job predicted them."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from safetensors.torch import load

from fairsolve.model import FairModel
from tests.datagen import planted_table
from tests.integration.test_job_flow import job_spec, upload

GBDT = {"type": "gbdt", "n_estimators": 15, "num_leaves": 7}


def test_a_gbdt_job_boosts_and_its_audit_model_rescores_the_predictions(postgres_stack):
    frame = planted_table(1500, seed=3)
    with postgres_stack.client() as client:
        dataset = upload(client, frame, name="gbdt")
        refused = client.post("/api/v1/jobs", json=job_spec(dataset["id"], model=GBDT))  # plada steps on θ
        assert refused.status_code == 422 and "model" in refused.text and "gbdt" in refused.text

        resp = client.post("/api/v1/jobs", json=job_spec(dataset["id"], model=GBDT, solver={"name": "erm"}))
        assert resp.status_code == 202, resp.text
        job = postgres_stack.wait_job(client, resp.json()["id"], {"succeeded", "failed"})
        assert job["status"] == "succeeded", job["error"]
        assert job["result"]["iterations"] == GBDT["n_estimators"]
        traj = client.get(f"/api/v1/jobs/{job['id']}/trajectory", params={"max_points": 1000}).json()
        assert [p["iteration"] for p in traj["points"]] == list(range(1, GBDT["n_estimators"] + 1))

        weights = load(client.get(f"/api/v1/jobs/{job['id']}/artifacts/weights").content)
        assert list(weights) == ["booster"] and bytes(weights["booster"].numpy()).startswith(b"tree")
        preds = pd.read_parquet(io.BytesIO(client.get(f"/api/v1/jobs/{job['id']}/artifacts/predictions").content))
        assert (preds["prediction"] == preds["label"]).mean() == job["metrics"]["test"]["accuracy"] > 0.6

        audit_model = client.get(f"/api/v1/jobs/{job['id']}/audit-model")
        assert audit_model.status_code == 200
    model = FairModel.from_audit_bytes(audit_model.content)
    rows = frame.loc[preds["row"]]
    np.testing.assert_allclose(model.predict_proba(rows)[:, 1], preds["score"], rtol=1e-5)

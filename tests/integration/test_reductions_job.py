"""A ``reductions`` job through real API and worker processes: one trajectory point per oracle call, the
randomised classifier stored without pickle and served back by the audit model file, and a spec it cannot
run refused with a 422 naming the field."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from fairsolve import FairModel
from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload


def test_a_reductions_job_serves_its_randomised_classifier(stack):
    table = planted_table(1000, seed=4)
    with stack.client() as client:
        dataset = upload(client, table, name="reductions")
        spec = job_spec(dataset["id"], sensitive=["race"], solver={"name": "reductions"}, max_iterations=500,
                        constraints=[{"type": "demographic_parity", "tolerance": 0.1}])
        refused = client.post("/api/v1/jobs", json={**spec, "constraints": []})
        assert refused.status_code == 422 and "constraints" in refused.text, refused.text
        resp = client.post("/api/v1/jobs", json=spec)
        assert resp.status_code == 202, resp.text
        job = stack.wait_job(client, resp.json()["id"], {"succeeded", "failed"}, timeout=600)  # a shared machine
        assert job["status"] == "succeeded", job["error"]

        traj = client.get(f"/api/v1/jobs/{job['id']}/trajectory", params={"max_points": 100000}).json()
        points = traj["points"]
        assert [p["iteration"] for p in points] == list(range(1, job["result"]["iterations"] + 1))
        assert len(points) > 5 and all(len(p["duals"]["lambda"]) == 8 for p in points[:5])  # ±λ per race group

        exported = FairModel.from_audit_bytes(client.get(f"/api/v1/jobs/{job['id']}/audit-model").content)
        preds = pd.read_parquet(io.BytesIO(client.get(f"/api/v1/jobs/{job['id']}/artifacts/predictions").content))
    mix = exported.network.mix
    assert abs(float(mix.sum()) - 1.0) < 1e-9 and bool((mix > 0).all())
    rows = table.loc[preds["row"]]
    np.testing.assert_allclose(exported.predict_proba(rows)[:, 1], preds["score"].to_numpy(), rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(np.asarray(exported.predict(rows)).astype(np.int64), preds["prediction"].to_numpy())

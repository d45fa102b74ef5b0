"""Issue 30 item 4 through the service (API + worker on PostgreSQL + Redis): a file with ``?`` cells (read as
missing by default), an ONNX model trained elsewhere with ``?`` as a category audits to the model's own
demographic parity; a job's exported ``model.onnx`` scores the file's raw cells, ``?`` included, as the job did."""
from __future__ import annotations

import io

import numpy as np
import onnxruntime as ort
import pandas as pd
import pytest

from tests.support.onnx_graphs import census, external_model
from bench.common.jobs import upload
from tests.support.audits import finished_run


def test_onnx_models_see_the_files_own_values(postgres_stack):
    raw = census(1500, seed=4)  # the uploaded cells, "?" included
    with postgres_stack.client() as client:
        dataset = upload(client, raw, "census")
        assert next(c for c in dataset["columns"] if c["name"] == "workclass")["n_missing"] > 0  # "?" is missing
        model = external_model()
        uploaded = client.post("/api/v1/models", files={"file": ("m.onnx", model.SerializeToString())},
                               data={"target": "income", "positive_label": ">50K", "sensitive": "sex",
                                     "dataset_id": dataset["id"]})
        assert uploaded.status_code == 201, uploaded.text
        audit = client.post("/api/v1/audits", json={"model_artifact_id": uploaded.json()["id"],
                                                    "dataset_id": dataset["id"],
                                                    "metrics": [{"type": "demographic_parity", "threshold": 1.0}]})
        assert audit.status_code == 201, audit.text
        result = finished_run(client, audit.json()["id"])
        assert result["status"] == "succeeded", result

        job = client.post("/api/v1/jobs", json={"dataset_id": dataset["id"], "target": "income",
                                                "positive_label": ">50K", "sensitive": ["sex"],
                                                "solver": {"name": "erm"}, "device": "cpu"})
        assert job.status_code == 202, job.text
        done = postgres_stack.wait_job(client, job.json()["id"], {"succeeded", "failed"}, wait_s=20)
        assert done["status"] == "succeeded", done["error"]
        exported = client.get(f"/api/v1/jobs/{done['id']}/model.onnx").content
        stored = pd.read_parquet(io.BytesIO(client.get(f"/api/v1/jobs/{done['id']}/artifacts/predictions").content))

    logit = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        ["logit"], {"workclass": raw[["workclass"]].to_numpy(dtype=object)})[0][:, 0]
    positive = logit > 0
    true_dp = abs(positive[raw["sex"].to_numpy() == "Female"].mean() - positive[raw["sex"].to_numpy() == "Male"].mean())
    assert result["results"][0]["value"] == pytest.approx(true_dp, abs=1e-9)

    rows = raw.iloc[stored["row"].to_numpy()]
    assert (rows["workclass"] == "?").sum() > 20
    session = ort.InferenceSession(exported, providers=["CPUExecutionProvider"])
    feeds = {"age": rows[["age"]].to_numpy(dtype=np.float64), "sex": rows[["sex"]].to_numpy(dtype=object),
             "workclass": rows[["workclass"]].to_numpy(dtype=object)}  # the file's cells, "?" as it is
    np.testing.assert_allclose(session.run(["score"], feeds)[0], stored["score"].to_numpy(), atol=1e-5)


"""ONNX models in and out through the service (API + worker on PostgreSQL + Redis): a job's
``model.onnx`` run by onnxruntime on the test split gives the job's stored predictions (linear, MLP, gbdt,
group thresholds over an MLP); the Python client downloads the same file;
uploaded again, it audits to the same values as the job's own audit; bad ONNX uploads are refused with a
422 naming the field."""
from __future__ import annotations

import io

import httpx
import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import pytest
from onnx import TensorProto, helper

from app.onnx_models.check import graph_inputs
from app.core.settings import Settings
from fairsolve import Client
from app.onnx_models.scorer import _feed
from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload
from tests.support.audits import finished_run

METRICS = [{"type": "demographic_parity", "threshold": 1.0}, {"type": "accuracy"}, {"type": "auc"},
           {"type": "equalized_odds"}]


@pytest.fixture(scope="module")
def jobs(postgres_stack):
    frame = planted_table(600, seed=5)
    with postgres_stack.client() as client:
        dataset = upload(client, frame, "onnx")
        specs = {"linear": job_spec(dataset["id"], max_iterations=40),
                 "thresholds": job_spec(dataset["id"], model={"type": "mlp", "hidden": [8]}, max_iterations=40,
                                        solver={"name": "group_thresholds"}),
                 "mlp": job_spec(dataset["id"], model={"type": "mlp", "hidden": [8, 4]}, max_iterations=40),
                 "gbdt": job_spec(dataset["id"], model={"type": "gbdt", "n_estimators": 10, "num_leaves": 7},
                                  solver={"name": "erm"})}
        ids = {kind: client.post("/api/v1/jobs", json=spec).json()["id"] for kind, spec in specs.items()}
        for job_id in ids.values():
            assert postgres_stack.wait_job(client, job_id, {"succeeded", "failed"})["status"] == "succeeded"
    return frame, dataset, ids


@pytest.mark.parametrize("kind", ["linear", "mlp", "gbdt", "thresholds"])
def test_model_onnx_gives_the_jobs_stored_predictions(postgres_stack, jobs, kind):
    frame, _, ids = jobs
    with postgres_stack.client() as client:
        answer = client.get(f"/api/v1/jobs/{ids[kind]}/model.onnx")
        assert answer.status_code == 200, answer.text
        stored = pd.read_parquet(io.BytesIO(client.get(f"/api/v1/jobs/{ids[kind]}/artifacts/predictions").content))
    with Client(postgres_stack.url, postgres_stack.admin_key) as python_client:
        assert python_client.job(ids[kind]).onnx() == answer.content
    model = onnx.load_from_string(answer.content)
    rows = frame.iloc[stored["row"].to_numpy()]
    feeds = {i["name"]: _feed(rows[i["name"]], i) for i in graph_inputs(model)}
    session = ort.InferenceSession(answer.content, providers=["CPUExecutionProvider"])
    score, decision = session.run(["score", "decision"], feeds)
    np.testing.assert_allclose(score, stored["score"].to_numpy(), rtol=0, atol=1e-5)
    np.testing.assert_array_equal(decision, stored["prediction"].to_numpy())


def test_exported_onnx_uploaded_again_audits_like_the_job(postgres_stack, jobs):
    _, dataset, ids = jobs
    with postgres_stack.client() as client:
        exported = client.get(f"/api/v1/jobs/{ids['mlp']}/model.onnx").content
        uploaded = client.post("/api/v1/models", files={"file": ("m.onnx", exported)},
                               data={"name": "portable", "dataset_id": dataset["id"]})
        assert uploaded.status_code == 201, uploaded.text
        model = uploaded.json()
        assert model["spec"]["format"] == "onnx" and model["spec"]["target"] == "income"  # from the metadata
        assert model["spec"]["output"]["name"] == "logit"
        runs = []
        for source in ({"job_id": ids["mlp"]}, {"model_artifact_id": model["id"]}):
            audit = client.post("/api/v1/audits", json={**source, "dataset_id": dataset["id"], "metrics": METRICS})
            assert audit.status_code == 201, audit.text
            runs.append(finished_run(client, audit.json()["id"]))
    by_job, by_onnx = runs
    assert by_onnx["status"] == "succeeded", by_onnx
    assert [r["value"] for r in by_onnx["results"]] == pytest.approx([r["value"] for r in by_job["results"]], abs=1e-6)
    assert by_onnx["group_sizes"] == by_job["group_sizes"]


def custom_op_model() -> bytes:
    node = helper.make_node("Exec", ["age"], ["p"], domain="com.evil")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("age", TensorProto.DOUBLE, ["N", 1])],
                              [helper.make_tensor_value_info("p", TensorProto.DOUBLE, ["N", 1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19), helper.make_opsetid("com.evil", 1)],
                             ir_version=9).SerializeToString()


def test_bad_onnx_uploads_are_refused_naming_the_field(postgres_stack, jobs):
    frame, dataset, ids = jobs
    with postgres_stack.client() as client:
        exported = client.get(f"/api/v1/jobs/{ids['linear']}/model.onnx").content
        narrow = upload(client, frame.drop(columns="race"), "narrow")
        texts = upload(client, frame.assign(age=frame["age"].astype(str) + " years"), "texts")
        cases = [
            (b"\x08\x07 this is not a protobuf \xff\xff", {}, "file", "neither an audit model file"),
            (custom_op_model(), {}, "file", "custom operators"),
            (exported, {"dataset_id": narrow["id"]}, "file", "'race'"),
            (exported, {"dataset_id": texts["id"]}, "file", "input 'age' takes double numbers"),
            (exported, {"dataset_id": "nope"}, "dataset_id", "not found"),
            (exported, {"sensitive": "[1"}, "sensitive", "not valid JSON"),
            (exported, {"sensitive": '{"a": 1}'}, "sensitive", "sensitive"),
        ]
        for data, form, field, message in cases:
            answer = client.post("/api/v1/models", files={"file": ("m.onnx", data)}, data=form)
            assert answer.status_code == 422, (form, answer.text)
            detail = answer.json()["detail"][0]
            assert detail["loc"] == ["body", field] and message in detail["msg"], (form, answer.text)
        limit = Settings.model_fields["max_onnx_bytes"].default  # the stack runs with the default
        stored = len(client.get("/api/v1/models").json())
        oversized = client.post("/api/v1/models", files={"file": ("big.onnx", exported + b"\x00" * limit)})
        assert oversized.status_code == 422 and f"more than {limit}" in oversized.json()["detail"][0]["msg"]
        assert len(client.get("/api/v1/models").json()) == stored  # nothing refused was stored
        no_meta = onnx.load_from_string(exported)
        del no_meta.metadata_props[:]
        answer = client.post("/api/v1/models", files={"file": ("m.onnx", no_meta.SerializeToString())})
        assert answer.status_code == 422 and answer.json()["detail"][0]["loc"] == ["body", "target"], answer.text
        given = client.post("/api/v1/models", files={"file": ("m.onnx", no_meta.SerializeToString())},
                            data={"target": "income", "positive_label": ">50K", "sensitive": "sex"})
        assert given.status_code == 201 and given.json()["spec"]["sensitive"] == ["sex"], given.text
        assert client.get(f"/api/v1/jobs/{ids['linear']}/model.onnx",
                          headers={"Authorization": f"Bearer {postgres_stack.new_key('other')}"}).status_code == 404


def test_the_job_page_links_the_onnx_model(postgres_stack, jobs):
    """The dashboard's job page offers the ONNX model; the link answers the file to the signed-in browser."""
    _, _, ids = jobs
    with httpx.Client(base_url=postgres_stack.url, timeout=30) as browser:
        signed_in = browser.post("/signin", data={"api_key": postgres_stack.admin_key, "next": "/"},
                                 headers={"Origin": postgres_stack.url})
        assert signed_in.status_code == 303, signed_in.text
        page = browser.get(f"/jobs/{ids['linear']}").text
        link = f'href="/api/v1/jobs/{ids["linear"]}/model.onnx"'
        assert 'id="job-onnx"' in page and link in page
        downloaded = browser.get(f"/api/v1/jobs/{ids['linear']}/model.onnx")
    with postgres_stack.client() as client:
        assert downloaded.status_code == 200 and downloaded.content == client.get(
            f"/api/v1/jobs/{ids['linear']}/model.onnx").content

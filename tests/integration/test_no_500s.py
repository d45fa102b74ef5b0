"""Issue 19's causes of 500 answers, each reproduced against a real stack on PostgreSQL + Redis (where
JSONB refused the non-finite numbers) and answered 4xx: non-finite numbers in bodies, offsets past a
signed 64-bit integer, NUL characters in query parameters, malformed audit-model metadata, and a sign-in
form field over Starlette's 1 MiB part limit."""

from __future__ import annotations

import io
import json

import pytest
from safetensors.numpy import save as save_numpy

from app.core.strict_json import strict_loads
from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload

pytestmark = pytest.mark.integration

LIST_ROUTES = ["/api/v1/jobs", "/api/v1/datasets", "/api/v1/sweeps", "/api/v1/audits", "/api/v1/alerts",
               "/api/v1/models"]


@pytest.fixture(scope="module")
def dataset(postgres_stack):
    with postgres_stack.client() as client:
        return upload(client, planted_table(300, seed=3), name="finite")


def assert_refused_without_echo(response, loc: list) -> None:
    assert response.status_code == 422, response.text
    detail = strict_loads(response.text)["detail"]  # valid JSON: nothing non-finite in it
    assert detail[0]["loc"] == loc, detail
    assert "input" not in detail[0]  # the value is not echoed


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400", "1" + "0" * 60])
def test_non_finite_numbers_are_refused_naming_the_field(postgres_stack, dataset, literal):
    spec = job_spec(dataset["id"])
    spec["solver"]["params"]["eta"] = "@@"
    body = json.dumps(spec).replace('"@@"', literal)
    with postgres_stack.client() as client:
        headers = {"content-type": "application/json"}
        assert_refused_without_echo(client.post("/api/v1/jobs", content=body, headers=headers),
                                    ["body", "solver", "params", "eta"])
        tol = json.dumps(spec).replace('"@@"', "0.5").replace('"tolerance": 0.05', f'"tolerance": {literal}')
        assert_refused_without_echo(client.post("/api/v1/jobs", content=tol, headers=headers),
                                    ["body", "constraints", 0, "tolerance"])
        sweep = json.dumps({"base": {**spec, "solver": {"name": "plada"}}, "grid": {"tolerances": ["@@"]}})
        assert_refused_without_echo(client.post("/api/v1/sweeps", content=sweep.replace('"@@"', literal),
                                                headers=headers), ["body", "grid", "tolerances", 0])
        audit = json.dumps({"job_id": "x", "dataset_id": dataset["id"], "metrics": [{"type": "accuracy",
                                                                                     "threshold": "@@"}]})
        assert_refused_without_echo(client.post("/api/v1/audits", content=audit.replace('"@@"', literal),
                                                headers=headers), ["body", "metrics", 0, "threshold"])
        jobs = client.get("/api/v1/jobs").json()
        assert all(j["spec"]["solver"]["params"].get("eta") != "@@" for j in jobs)


def test_offsets_are_bounded_on_every_list_route(postgres_stack):
    with postgres_stack.client() as client:
        for route in LIST_ROUTES:
            assert client.get(route, params={"offset": 2**63 - 1}).json() == [], route
            too_far = client.get(route, params={"offset": 2**63})
            assert too_far.status_code == 422 and too_far.json()["detail"][0]["loc"] == ["query", "offset"], route
        audit_runs = client.get("/api/v1/audits/none/runs", params={"offset": 2**64})
        assert audit_runs.status_code == 422


@pytest.mark.parametrize("url, named", [
    ("/api/v1/alerts?audit_id=%00", "audit_id"), ("/api/v1/jobs?status=a%00b", "status"),
    ("/api/v1/jobs/abc/artifacts/%00weights", "path"), ("/jobs?status=%00", "status"),
    ("/api/v1/datasets?x%00=1", "x"),
])
def test_nul_characters_in_the_url_are_400(postgres_stack, url, named):
    with postgres_stack.client() as client:
        response = client.get(url)
    assert response.status_code == 400, response.text
    assert named in response.json()["detail"] and "NUL" in response.json()["detail"]


def model_file(metadata: dict[str, str]) -> bytes:
    import numpy as np

    return save_numpy({"net.weight": np.zeros((1, 2), np.float32), "net.bias": np.zeros(1, np.float32)},
                      metadata=metadata)


GOOD_ENCODER = {"columns": ["x1", "x2"], "plan": [{"column": "x1", "kind": "binary"},
                                                 {"column": "x2", "kind": "numeric", "median": 0.0, "mean": 0.0,
                                                  "std": 1.0, "missing_indicator": False}]}
GOOD_SPEC = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"], "model": {"type": "linear"},
             "constraints": [{"type": "demographic_parity", "tolerance": 0.05}], "solver": {"name": "plada"}}


def metadata(**changes: str) -> dict[str, str]:
    meta = {"fairsolve_audit_model": "1", "spec": json.dumps(GOOD_SPEC), "encoder": json.dumps(GOOD_ENCODER),
            "groups": '["Female", "Male"]', "job_id": ""}
    meta.update(changes)
    return meta


MALFORMED = {
    "spec not JSON": metadata(spec="{"),
    "spec a list": metadata(spec="[1, 2]"),
    "spec invalid": metadata(spec=json.dumps({**GOOD_SPEC, "model": {"type": "nope"}})),
    "encoder not JSON": metadata(encoder="nope"),
    "encoder without plan": metadata(encoder='{"columns": ["x1"]}'),
    "encoder plan of strings": metadata(encoder='{"columns": ["x1"], "plan": ["x1"]}'),
    "encoder columns a string": metadata(encoder='{"columns": "x1", "plan": []}'),
    "encoder NaN std": metadata(encoder=json.dumps(GOOD_ENCODER).replace('"std": 1.0', '"std": NaN')),
    "encoder plan for other columns": metadata(encoder=json.dumps({**GOOD_ENCODER, "columns": ["a", "b"]})),
    "groups a dict": metadata(groups='{"a": 1}'),
    "groups not JSON": metadata(groups="[Female"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_audit_model_metadata_is_422(postgres_stack, case):
    with postgres_stack.client() as client:
        response = client.post("/api/v1/models", files={"file": ("m.safetensors", io.BytesIO(model_file(MALFORMED[case])))})
    assert response.status_code == 422, (case, response.text)
    assert response.json()["detail"][0]["loc"] == ["body", "file"], response.text


def test_a_well_formed_model_file_is_accepted(postgres_stack):
    with postgres_stack.client() as client:
        response = client.post("/api/v1/models", files={"file": ("m.safetensors", io.BytesIO(model_file(metadata())))})
    assert response.status_code == 201, response.text


def test_a_sign_in_field_over_one_mib_is_400(postgres_stack):
    import httpx

    origin = {"origin": postgres_stack.url}
    for kwargs in ({"data": {"api_key": "x" * (1 << 20 | 1)}}, {"files": {"api_key": (None, "x" * (1 << 20 | 1))}}):
        response = httpx.post(postgres_stack.url + "/signin", headers=origin, timeout=30, **kwargs)
        assert response.status_code == 400, response.text
        assert "maximum size" in response.text

"""Keys and owners through a real API on PostgreSQL: 401 without a key, 404 for another owner's
resources on every route of the OpenAPI document, key revocation, idempotent submits, caps."""

from __future__ import annotations

import re
import uuid

import pytest

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload

PARAM = re.compile(r"\{(\w+)\}")
ADMIN_ONLY = ("/api/v1/keys",)  # key management: 403 for non-admin keys (tested below), not owner-scoped
OPEN = ("/healthz", "/readyz", "/metrics")
# routes whose query parameters are required: valid values for owner A's dataset, so that B's 404 is the owner check
QUERY = {"/api/v1/datasets/{dataset_id}/guarantee-check": {
    "target": "income", "positive_label": ">50K", "sensitive": "sex", "constraint": "demographic_parity:0.05"}}


@pytest.fixture(scope="module")
def owned(postgres_stack):
    """Owner A with a dataset, a finished job (artifacts, trajectory) and a sweep; owner B with nothing."""
    stack = postgres_stack
    key_a, key_b = stack.new_key(f"a-{uuid.uuid4().hex[:6]}"), stack.new_key(f"b-{uuid.uuid4().hex[:6]}")
    with stack.client(key_a) as a:
        dataset = upload(a, planted_table(600))
        job = a.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=30)).json()
        stack.wait_job(a, job["id"], {"succeeded"})
        sweep = a.post("/api/v1/sweeps", json={"base": job_spec(dataset["id"], max_iterations=10),
                                               "grid": {"tolerances": [0.1], "seeds": [0]}}).json()
        assert "id" in sweep, sweep
    with stack.client() as admin:
        key_id = next(k["id"] for k in admin.get("/api/v1/keys").json() if key_b.startswith(k["hint"]))
    ids = {"dataset_id": dataset["id"], "job_id": job["id"], "sweep_id": sweep["id"], "key_id": key_id,
           **audit_ids(stack, key_a, dataset["id"], job["id"])}
    return stack, key_a, key_b, ids


def audit_ids(stack, key: str, dataset_id: str, job_id: str) -> dict[str, str]:
    """An audit of the job with one finished, breached run (so it has an alert), and the job's model uploaded."""
    with stack.client(key) as a:
        audit = a.post("/api/v1/audits", json={"job_id": job_id, "dataset_id": dataset_id,
                                               "metrics": [{"type": "demographic_parity", "threshold": 0.0}]})
        assert audit.status_code == 201, audit.text
        audit_id = audit.json()["id"]
        run_id = a.post(f"/api/v1/audits/{audit_id}/run").json()["id"]
        stack.until(lambda: a.get(f"/api/v1/audits/{audit_id}/runs/{run_id}").json()["status"] == "succeeded", 180,
                    f"audit run {run_id} succeeded", interval=0.3)
        alert_id = a.get("/api/v1/alerts").json()[0]["id"]
        exported = a.get(f"/api/v1/jobs/{job_id}/audit-model").content
        model = a.post("/api/v1/models", files={"file": ("m.safetensors", exported)})
        assert model.status_code == 201, model.text
    return {"audit_id": audit_id, "run_id": run_id, "alert_id": alert_id, "model_id": model.json()["id"]}


def operations(client) -> list[tuple[str, str]]:
    spec = client.get("/openapi.json").json()
    return [(method.upper(), path) for path, item in spec["paths"].items() for method in item
            if method in ("get", "post", "put", "patch", "delete")]


def fill(path: str, ids: dict[str, str]) -> str:
    values = {**ids, "kind": "trajectory"}
    if path.endswith("/artifacts/{kind}"):
        values["kind"] = "weights"
    unknown = set(PARAM.findall(path)) - set(values)
    assert not unknown, f"{path}: add an existing resource for {unknown} to this test"
    return PARAM.sub(lambda m: values[m.group(1)], path)


def test_every_api_route_needs_a_key(owned):
    stack, key_a, _, ids = owned
    with stack.client(key_a) as a:
        ops = [(m, p) for m, p in operations(a) if p.startswith("/api/")]
    assert len(ops) >= 15
    with stack.client("fsk_not-a-key") as wrong:
        for method, path in ops:
            url = fill(path, ids)
            assert wrong.request(method, url).status_code == 401, (method, path)
            del wrong.headers["Authorization"]
            response = wrong.request(method, url)
            assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer", (method, path)
            wrong.headers["Authorization"] = "Bearer fsk_not-a-key"


def test_another_owners_resources_are_not_found_on_every_route(owned):
    stack, key_a, key_b, ids = owned
    with stack.client(key_a) as a, stack.client(key_b) as b:
        checked = 0
        for method, path in operations(a):
            if not PARAM.search(path) or path.startswith(ADMIN_ONLY) or path in OPEN:
                continue
            url = fill(path, ids)
            response = b.request(method, url, params=QUERY.get(path))
            assert response.status_code == 404, (method, path, response.status_code, response.text)
            assert not any(v in response.text for k, v in ids.items() if k not in path), (method, path)
            checked += 1
        assert checked >= 10
        # the owner still sees everything (the 404s above were not missing resources) and B's lists are empty
        assert a.get(f"/api/v1/jobs/{ids['job_id']}").status_code == 200
        for path, params in QUERY.items():
            assert a.get(fill(path, ids), params=params).status_code == 200, path
        assert a.get(f"/api/v1/jobs/{ids['job_id']}/artifacts/weights").status_code == 200
        assert a.get(f"/api/v1/audits/{ids['audit_id']}").status_code == 200  # B's DELETE did nothing
        for listing in ("datasets", "jobs", "sweeps", "audits", "alerts"):
            assert b.get(f"/api/v1/{listing}").json() == [], listing
            assert len(a.get(f"/api/v1/{listing}").json()) >= 1, listing
        # B cannot train on A's dataset: the body field is answered as not found
        resp = b.post("/api/v1/jobs", json=job_spec(ids["dataset_id"]))
        assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["body", "dataset_id"]
        assert a.get(f"/api/v1/jobs/{ids['job_id']}").json()["status"] == "succeeded"  # B's cancel did nothing


def test_keys_are_created_once_hashed_and_revocable(owned):
    stack, key_a, _, _ = owned
    with stack.client() as admin, stack.client(key_a) as a:
        assert a.post("/api/v1/keys", json={"owner": "x"}).status_code == 403
        assert admin.post("/api/v1/keys", json={"owner": "bad owner!"}).status_code == 422
        created = admin.post("/api/v1/keys", json={"owner": "carol"}).json()
        assert created["key"].startswith("fsk_") and created["owner"] == "carol"
        listed = admin.get("/api/v1/keys").json()
        assert created["id"] in {k["id"] for k in listed}
        assert created["key"] not in admin.get("/api/v1/keys").text
        with stack.client(created["key"]) as carol:
            assert carol.get("/api/v1/datasets").status_code == 200
            assert admin.delete(f"/api/v1/keys/{created['id']}").status_code == 204
            assert carol.get("/api/v1/datasets").status_code == 401
        assert admin.delete("/api/v1/keys/nope").status_code == 404


def test_idempotency_key_replays_the_first_response(owned):
    stack, key_a, _, ids = owned
    with stack.client(key_a) as a:
        before = len(a.get("/api/v1/jobs").json())
        spec = job_spec(ids["dataset_id"], max_iterations=20)
        headers = {"Idempotency-Key": uuid.uuid4().hex}
        first = a.post("/api/v1/jobs", json=spec, headers=headers)
        again = a.post("/api/v1/jobs", json=spec, headers=headers)
        assert first.status_code == again.status_code == 202
        assert first.json() == again.json() and again.headers["idempotent-replayed"] == "true"
        assert len(a.get("/api/v1/jobs").json()) == before + 1
        other = a.post("/api/v1/jobs", json={**spec, "seed": 7}, headers=headers)
        assert other.status_code == 422 and other.json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]

        sweep = {"base": spec, "grid": {"tolerances": [0.2, 0.1], "seeds": [0]}}
        headers = {"Idempotency-Key": uuid.uuid4().hex}
        s1, s2 = (a.post("/api/v1/sweeps", json=sweep, headers=headers) for _ in range(2))
        assert s1.status_code == s2.status_code == 202 and s1.json()["id"] == s2.json()["id"]
        assert len(a.get("/api/v1/sweeps").json()) == 2
        stack.wait_job(a, first.json()["id"], {"succeeded"})


def test_server_caps_name_the_field(owned):
    stack, key_a, _, ids = owned
    with stack.client(key_a) as a:
        resp = a.post("/api/v1/jobs", json=job_spec(ids["dataset_id"], max_iterations=10**9))
        assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["body", "max_iterations"]
        resp = a.post("/api/v1/jobs", json=job_spec(ids["dataset_id"], time_limit_s=10**9))
        assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["body", "time_limit_s"]

"""``Idempotency-Key`` on every creating POST (issue 31 item 7: it was silently ignored on ``POST /audits``,
``/audits/{id}/run``, ``/models`` and ``/datasets``, and three retries made three of each). Where a retry is not
replayed the key is refused with a 400 naming it, before anything is read or created; jobs and sweeps still replay
the first answer, and a cancel (idempotent by itself) takes it."""

from __future__ import annotations

import uuid

import pytest

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload

pytestmark = pytest.mark.integration


def test_the_key_is_honoured_or_refused_never_ignored(postgres_stack):
    key = postgres_stack.new_key(f"idem-{uuid.uuid4().hex[:6]}")
    with postgres_stack.client(key) as client:
        dataset = upload(client, planted_table(300, seed=4))
        csv = planted_table(50, seed=5).to_csv(index=False)
        refused = {
            "/api/v1/datasets": dict(files={"file": ("x.csv", csv, "text/csv")}),
            "/api/v1/models": dict(files={"file": ("m.onnx", b"\x08\x07", "application/octet-stream")}),
            "/api/v1/audits": dict(json={"dataset_id": dataset["id"], "metrics": []}),
            "/api/v1/audits/0123456789abcdef0123456789abcdef/run": {},
        }
        for path, body in refused.items():
            for _ in range(3):  # three retries create nothing
                answer = client.post(path, headers={"Idempotency-Key": "retry-1"}, **body)
                assert answer.status_code == 400, (path, answer.text)
                assert answer.json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]
        assert [d["id"] for d in client.get("/api/v1/datasets").json()] == [dataset["id"]]
        assert client.get("/api/v1/audits").json() == []

        headers = {"Idempotency-Key": "job-1"}
        first = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=20), headers=headers)
        again = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=20), headers=headers)
        assert first.status_code == again.status_code == 202 and first.json() == again.json()
        assert again.headers["idempotent-replayed"] == "true"
        cancel = client.post(f"/api/v1/jobs/{first.json()['id']}/cancel", headers={"Idempotency-Key": "c-1"})
        assert cancel.status_code in (202, 409), cancel.text  # 409: it already succeeded

"""What a careless uploader is told: a JSON file is refused as JSON (CSV or Parquet wanted), not as
"malformed CSV", and a body that is not multipart/form-data gets 415 saying what to send, not a form-field
size message."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.integration

RECORDS = [{"age": 30 + i, "sex": "F" if i % 2 else "M", "income": i % 2} for i in range(50)]


@pytest.mark.parametrize("content", [
    json.dumps(RECORDS), json.dumps(RECORDS, indent=2), "\n".join(json.dumps(r) for r in RECORDS),
    "\ufeff  " + json.dumps({"data": RECORDS}),
])
def test_a_json_file_is_called_json(postgres_stack, content):
    with postgres_stack.client() as client:
        response = client.post("/api/v1/datasets", files={"file": ("data.csv", content.encode(), "text/csv")})
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert "JSON, which is not accepted" in detail and "CSV" in detail and "Parquet" in detail
    assert "malformed" not in detail


@pytest.mark.parametrize("route", ["/api/v1/datasets", "/api/v1/models"])
@pytest.mark.parametrize("size", [100, 2 << 20])
@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "text/csv", None])
def test_a_body_that_is_not_multipart_is_415(postgres_stack, route, size, content_type):
    body = ("age,sex,income\n" + "31,F,1\n" * (size // 7)).encode()
    headers = {"content-type": content_type} if content_type else {}
    with postgres_stack.client() as client:
        if content_type is None:
            client.headers.pop("content-type", None)
        response = client.post(route, content=body, headers=headers)
    assert response.status_code == 415, response.text
    assert "multipart/form-data with a `file` field" in response.json()["detail"]
    assert "maximum size" not in response.text


def test_a_body_that_is_not_multipart_still_needs_a_key(postgres_stack):
    with postgres_stack.client("fsk_wrong") as client:
        response = client.post("/api/v1/datasets", content=b"a,b\n1,2\n", headers={"content-type": "text/csv"})
    assert response.status_code == 401

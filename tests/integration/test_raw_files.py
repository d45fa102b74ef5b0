"""Raw files through the API (issue 30, item 9): a headerless upload keeps its first row and gets generated names,
which PUT .../column-names renames (then a job uses them); repeated names are renamed; the separator can be given."""
from __future__ import annotations

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec

import pytest

pytestmark = pytest.mark.integration


def test_headerless_upload_then_rename_then_a_job(embedded_stack):
    frame = planted_table(400, seed=4)
    raw = frame.to_csv(index=False, header=False, sep=";")
    with embedded_stack.client() as client:
        resp = client.post("/api/v1/datasets", files={"file": ("raw.csv", raw, "text/csv")}, data={"delimiter": ";"})
        assert resp.status_code == 201, resp.text
        dataset = resp.json()
        assert dataset["n_rows"] == 400 and dataset["read_options"]["delimiter"] == ";"
        assert [c["name"] for c in dataset["columns"]] == [f"column_{j}" for j in range(1, frame.shape[1] + 1)]
        assert dataset["read_options"]["warnings"][0]["read_as"] == "data"

        url = f"/api/v1/datasets/{dataset['id']}/column-names"
        short = client.put(url, json={"column_names": ["a", "b"]})
        assert short.status_code == 422 and short.json()["detail"][0]["loc"] == ["body", "column_names"]
        dup = client.put(url, json={"column_names": ["a"] * frame.shape[1]})
        assert dup.status_code == 422 and "duplicate name 'a'" in dup.json()["detail"][0]["msg"]
        renamed = client.put(url, json={"column_names": list(frame.columns)})
        assert renamed.status_code == 200, renamed.text
        assert [c["name"] for c in renamed.json()["columns"]] == list(frame.columns)
        assert "warnings" not in renamed.json()["read_options"]
        detail = client.get(f"/api/v1/datasets/{dataset['id']}").json()
        assert set(detail["summary"]) == set(frame.columns)

        job = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=20))
        assert job.status_code == 202, job.text
        done = embedded_stack.wait_job(client, job.json()["id"], {"succeeded", "failed"})
        assert done["status"] == "succeeded", done
        assert client.put(url, json={"column_names": list(frame.columns)}).status_code == 409  # a job names them


def test_repeated_names_are_renamed_and_a_bad_separator_is_named(embedded_stack):
    with embedded_stack.client() as client:
        resp = client.post("/api/v1/datasets", files={"file": ("d.csv", b"a,b,a\n1,2,3\n4,5,6\n", "text/csv")})
        assert resp.status_code == 201, resp.text
        assert [c["name"] for c in resp.json()["columns"]] == ["a", "b", "a.1"]
        assert resp.json()["read_options"]["warnings"][0]["field"] == "column_names"
        bad = client.post("/api/v1/datasets", files={"file": ("d.csv", b"a,b\n1,2\n", "text/csv")},
                          data={"delimiter": "ab"})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "delimiter"]

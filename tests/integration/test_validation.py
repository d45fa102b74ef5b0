"""Bad input gets a 4xx naming what is wrong, and nothing half-written stays behind."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload


def leftovers(stack) -> list[str]:
    return sorted(p.name for p in (stack.home / "storage" / "tmp").iterdir())


@pytest.mark.parametrize("content, expected", [
    (b"", "empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200), "not a CSV or Parquet"),
    (b"a,b,c\n1,2,3\n4,5\n", "line 3 has 2 fields"),
    (b"a,b,c\n1,2,3\n4,5,6,7\n", "line 3 has 4 fields"),
    (b"a,b,c\n", "no data rows"),
    (b"PAR1 this is not really parquet", "cannot be read as PARQUET"),
])
def test_bad_uploads_are_refused(embedded_stack, content, expected):
    with embedded_stack.client() as client:
        before = client.get("/api/v1/datasets").json()
        resp = client.post("/api/v1/datasets", files={"file": ("data.csv", content, "text/csv")})
        assert resp.status_code == 422, resp.text
        assert expected in resp.json()["detail"]
        assert client.get("/api/v1/datasets").json() == before
    assert leftovers(embedded_stack) == []


def test_parquet_upload_is_sniffed_not_named(embedded_stack):
    buf = io.BytesIO()
    planted_table(300).to_parquet(buf, index=False)
    with embedded_stack.client() as client:
        resp = client.post("/api/v1/datasets", files={"file": ("data.csv", buf.getvalue(), "text/csv")})
        assert resp.status_code == 201, resp.text
        assert resp.json()["format"] == "parquet" and resp.json()["n_rows"] == 300


@pytest.fixture(scope="module")
def dataset_id(embedded_stack):
    frame = planted_table(500)
    frame["constant"] = "x"
    with embedded_stack.client() as client:
        return upload(client, frame)["id"]


@pytest.mark.parametrize("override, loc", [
    ({"target": "nope"}, ["body", "target"]),
    ({"sensitive": ["sex", "nope"]}, ["body", "sensitive", 1]),
    ({"features": ["age", "nope"]}, ["body", "features", 1]),
    ({"positive_label": "yes"}, ["body", "positive_label"]),
    ({"sensitive": ["constant"]}, ["body", "sensitive", 0]),
    ({"constraints": [{"type": "made_up", "tolerance": 0.1}]}, ["body", "constraints", 0]),
    ({"constraints": [{"type": "demographic_parity", "tolerance": -1}]}, ["body", "constraints", 0, "tolerance"]),
    ({"solver": {"name": "made_up"}}, ["body", "solver", "name"]),
    ({"solver": {"name": "plada", "params": {"alpha": "many"}}}, ["body", "solver", "params"]),
    ({"solver": {"name": "plada", "params": {"no_such_param": 1}}}, ["body", "solver", "params"]),
    ({"dataset_id": "0" * 32}, ["body", "dataset_id"]),
    ({"split": {"test": 1.5}}, ["body", "split", "test"]),
    ({"solver": {"name": "level_set"}}, ["body", "constraints", 0, "type"]),
    ({"solver": {"name": "level_set"}, "model": {"type": "mlp"},
      "constraints": [{"type": "auc_parity", "tolerance": 0.1}]}, ["body", "model", "type"]),
    # issue 19 #13: misspelled keys were ignored, sizes unbounded, the target accepted as sensitive, tolerance 5
    ({"max_iteration": 5}, ["body", "max_iteration"]),
    ({"model": {"type": "linear", "hiden": [8]}}, ["body", "model", "hiden"]),
    ({"split": {"test": 0.2, "sed": 1}}, ["body", "split", "sed"]),
    ({"solver": {"name": "plada", "parms": {}}}, ["body", "solver", "parms"]),
    ({"group_rules": {"sex": {"values": {"m": ["Male"]}, "others": "x"}}}, ["body", "group_rules", "sex", "others"]),
    ({"constraints": [{"type": "demographic_parity", "tolerance": 0.1, "tolerence": 0.2}]}, ["body", "constraints", 0]),
    ({"sensitive": ["sex", "income"]}, ["body", "sensitive", 1]),
    ({"constraints": [{"type": "demographic_parity", "tolerance": 5}]}, ["body", "constraints", 0]),
    ({"features": ["age"] * 10_001}, ["body", "features"]),
    ({"sensitive": ["sex"] * 17}, ["body", "sensitive"]),
    ({"constraints": [{"type": "demographic_parity", "tolerance": 0.1}] * 65}, ["body", "constraints"]),
    ({"group_rules": {"sex": {"values": {f"g{i}": ["x"] for i in range(1001)}}}}, ["body", "group_rules", "sex", "values"]),
    ({"group_rules": {"sex": {"values": {"m": ["Male"] * 100_001}}}}, ["body", "group_rules", "sex"]),
    ({"target": "x" * 256}, ["body", "target"]),
])
def test_bad_specs_name_the_field(embedded_stack, dataset_id, override, loc):
    with embedded_stack.client() as client:
        before = len(client.get("/api/v1/jobs").json())
        resp = client.post("/api/v1/jobs", json={**job_spec(dataset_id), **override})
        assert resp.status_code == 422, resp.text
        locs = [d["loc"][: len(loc)] for d in resp.json()["detail"]]
        assert loc in locs, resp.json()
        assert len(client.get("/api/v1/jobs").json()) == before


def test_unknown_ids_are_404(embedded_stack):
    with embedded_stack.client() as client:
        for path in ("/api/v1/jobs/abc", "/api/v1/jobs/abc/trajectory", "/api/v1/datasets/abc",
                     "/api/v1/jobs/abc/charts/trajectory"):
            resp = client.get(path)
            assert resp.status_code == 404 and "not found" in resp.json()["detail"]


def test_group_rules_and_intersections_are_accepted(embedded_stack, dataset_id):
    spec = job_spec(dataset_id, sensitive=["race", "age"], max_iterations=30,
                    group_rules={"race": {"values": {"White": ["White"]}, "other": "non-White"},
                                 "age": {"ranges": {"25-60": [25, 60]}, "other": "other age"}})
    with embedded_stack.client() as client:
        job = client.post("/api/v1/jobs", json=spec).json()
        done = embedded_stack.wait_job(client, job["id"], {"succeeded", "failed"})
        assert done["status"] == "succeeded", done["error"]
        groups = set(done["metrics"]["train"]["group_sizes"])
        assert groups == {f"{r} & {a}" for r in ("White", "non-White") for a in ("25-60", "other age")}


def test_solver_catalogue(embedded_stack):
    with embedded_stack.client() as client:
        solvers = {s["name"]: s for s in client.get("/api/v1/solvers").json()}
    assert {"erm", "penalty", "plada"} <= set(solvers)
    props = solvers["plada"]["config_schema"]["properties"]
    assert all("description" in field for field in props.values())
    assert solvers["plada"]["paper"]


def test_dataset_summary_and_delete(embedded_stack):
    """The worker's columnar copy of a table (app.datasets.columnar) is written by the first job that reads it, and
    a dataset's copies go with it."""
    copies = embedded_stack.home / "storage" / "columnar"
    with embedded_stack.client() as client:
        ds = upload(client, pd.DataFrame({"x": [1.0, 2.0, 3.0], "g": ["a", "b", "a"], "y": [0, 1, 1]}))
        detail = client.get(f"/api/v1/datasets/{ds['id']}").json()
        assert detail["summary"]["x"]["mean"] == pytest.approx(2.0)
        assert detail["summary"]["g"]["top"] == {"a": 2, "b": 1}
        ours = planted_table(400, seed=3)
        table = upload(client, ours)
        job = client.post("/api/v1/jobs", json=job_spec(table["id"], max_iterations=10)).json()
        assert embedded_stack.wait_job(client, job["id"], {"succeeded", "failed"})["status"] == "succeeded"
        sha = client.get(f"/api/v1/datasets/{table['id']}").json()["sha256"]
        assert list(copies.glob(f"{sha}-*.arrow"))      # (a dataset with jobs is never deleted)
        left = copies / f"{detail['sha256']}-{'0' * 24}.arrow"   # as an audit's read of the other leaves it
        left.write_bytes(b"copy")
        assert client.delete(f"/api/v1/datasets/{ds['id']}").status_code == 204
        assert not left.exists() and list(copies.glob(f"{sha}-*.arrow"))
        assert client.get(f"/api/v1/datasets/{ds['id']}").status_code == 404


def test_a_target_of_more_than_two_values_needs_binarize(embedded_stack, dataset_id):
    """Issue 30 item 3: ``target: "age", positive_label: 40`` was binarised silently (202, a model of "is 40")."""
    from fairsolve import Client, FairSolveError
    from solvers.data.spec import value_counts

    age = job_spec(dataset_id, target="age", positive_label=40, max_iterations=30)
    sweep = {"base": age, "grid": {"tolerances": [0.1]}}
    with embedded_stack.client() as client:
        top = value_counts(planted_table(500)["age"])  # normalised values, most frequent first
        for path, body, loc in (("jobs", age, ["body", "positive_label"]),
                                ("sweeps", sweep, ["body", "base", "positive_label"])):
            resp = client.post(f"/api/v1/{path}", json=body)
            assert resp.status_code == 422, resp.text
            [detail] = [d for d in resp.json()["detail"] if d["loc"] == loc]
            assert f"column 'age' has {len(top)} distinct values, not 2" in detail["msg"]
            assert '"binarize": true' in detail["msg"]
            assert f"(value counts: {top.index[0]}: {top.iloc[0]}, {top.index[1]}: {top.iloc[1]}," in detail["msg"]
        resp = client.post("/api/v1/sweeps", json={**sweep, "base": {**age, "binarize": True}})
        assert resp.status_code == 202, resp.text
        job = client.post("/api/v1/jobs", json={**age, "binarize": True}).json()
        done = embedded_stack.wait_job(client, job["id"], {"succeeded", "failed"})
        assert done["status"] == "succeeded", done["error"]
        assert done["spec"]["binarize"] is True
    with Client(embedded_stack.url, embedded_stack.admin_key, poll_s=0.2) as fs:  # the client passes binarize on
        with pytest.raises(FairSolveError, match=r"body\.positive_label: column 'age' has"):
            fs.submit(dataset_id, **{k: v for k, v in age.items() if k != "dataset_id"})
        assert fs.submit(dataset_id, **{k: v for k, v in age.items() if k != "dataset_id"}, binarize=True).id

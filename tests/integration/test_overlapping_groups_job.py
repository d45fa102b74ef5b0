"""A job on overlapping groups through the service: submitted over HTTP, solved by a real worker, its fairness
entries equal to the exact values recomputed here from its stored test predictions, the per-group chart a group
list; and the spec's refusals as 422s naming the field."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from solvers.membership import overlapping_membership
from solvers.metrics import loss_gap, rate_deviation
from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload

GROUPS = {"thresholds": {"age": [30, 45, 60], "hours-per-week": [35, 45]}, "columns": ["race"],
          "min_group_fraction": 0.03}
CONSTRAINTS = [{"type": "demographic_parity", "tolerance": 0.1, "reference": "overall"},
               {"type": "loss_gap", "tolerance": 0.15, "loss": "logistic"}]


def _spec(dataset_id: str, **overrides) -> dict:
    spec = job_spec(dataset_id, overlapping_groups=GROUPS, constraints=CONSTRAINTS,
                    solver={"name": "plada", "params": {"eta": 0.05}}, max_iterations=200)
    del spec["sensitive"]
    spec.update(overrides)
    return spec


def test_overlapping_groups_job_reports_the_exact_values(embedded_stack):
    stack = embedded_stack
    frame = planted_table(1500, seed=4)
    membership = overlapping_membership(frame, GROUPS)
    assert 6 < membership.n_groups <= 10 and (np.asarray(membership.csr().sum(1)) > 1).mean() > 0.5  # overlapping
    with stack.client() as client:
        dataset = upload(client, frame, name="overlapping")
        resp = client.post("/api/v1/jobs", json=_spec(dataset["id"]))
        assert resp.status_code == 202, resp.text
        job = stack.wait_job(client, resp.json()["id"], {"succeeded", "failed"})
        assert job["status"] == "succeeded", job["error"]
        result, test = job["result"], job["metrics"]["test"]
        assert result["groups"] == membership.names
        assert result["constraint_names"] == [f"{c['type']}[{g}]" for c in CONSTRAINTS for g in membership.names]
        assert [e["type"] for e in result["fairness"]] == ["demographic_parity", "loss_gap"]

        preds = pd.read_parquet(io.BytesIO(client.get(f"/api/v1/jobs/{job['id']}/artifacts/predictions").content))
        rows = frame.index.get_indexer(preds["row"])
        groups = membership.take(rows)
        y, p = preds["label"].to_numpy(), preds["score"].to_numpy()
        dp = rate_deviation(y, preds["prediction"].to_numpy(), groups, groups.names, "demographic_parity")
        gap = loss_gap(y, np.log(p) - np.log1p(-p), groups, groups.names, "logistic")
        dp_entry, gap_entry = result["fairness"]
        assert dp_entry["test"]["value"] == pytest.approx(dp["demographic_parity"], abs=1e-12)
        assert gap_entry["test"]["value"] == pytest.approx(gap["loss_gap"], rel=1e-6)
        for entry in (dp_entry, gap_entry):
            assert entry["kept_on_test"] == (entry["test"]["value"] <= entry["tolerance"])
            assert entry["method"] == "bootstrap" and entry["validation"] is not None
            lo, hi = entry["test"]["ci"]
            assert lo <= hi
        assert test["demographic_parity_overall"] == pytest.approx(dp["demographic_parity"], abs=1e-12)
        assert test["group_sizes"] == {g: int(n) for g, n in zip(groups.names, groups.counts) if n}

        table = client.get(f"/api/v1/jobs/{job['id']}/charts/scores").json()["data"][0]
        assert table["type"] == "table"
        names, sizes = table["cells"]["values"][:2]
        assert dict(zip(names, sizes)) == test["group_sizes"] and sizes == sorted(sizes, reverse=True)
        assert client.get(f"/api/v1/jobs/{job['id']}/charts/roc").status_code == 200


@pytest.mark.parametrize("overrides, loc", [
    ({"sensitive": ["sex"]}, ["body", "sensitive"]),
    ({"overlapping_groups": {"thresholds": {"nope": [1.0]}}}, ["body", "overlapping_groups", "thresholds", "nope"]),
    ({"overlapping_groups": {"thresholds": {"race": [1.0]}}}, ["body", "overlapping_groups", "thresholds", "race"]),
    ({"overlapping_groups": {"thresholds": {"age": [75, 78]}, "min_group_fraction": 0.2}},
     ["body", "overlapping_groups", "min_group_fraction"]),
    ({"overlapping_groups": {"thresholds": {"age": list(range(1, 41)), "hours-per-week": list(range(1, 41))}}},
     ["body", "overlapping_groups", "thresholds"]),
    ({"solver": {"name": "reductions"}}, ["body", "solver"]),
    ({"constraints": [{"type": "equalized_odds", "tolerance": 0.1}]}, ["body", "constraints", 0, "type"]),
])
def test_overlapping_groups_refusals_name_the_field(embedded_stack, overrides, loc):
    with embedded_stack.client() as client:
        dataset = upload(client, planted_table(300, seed=5), name="overlapping-refusals")
        resp = client.post("/api/v1/jobs", json=_spec(dataset["id"], **overrides))
        assert resp.status_code == 422, resp.text
        assert resp.json()["detail"][0]["loc"] == loc, resp.text
        sweep = client.post("/api/v1/sweeps", json={"base": _spec(dataset["id"], **overrides),
                                                     "grid": {"tolerances": [0.1, 0.2]}})
        assert sweep.status_code == 422 and sweep.json()["detail"][0]["loc"][:2] == ["body", "base"], sweep.text

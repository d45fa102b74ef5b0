"""What a job promised and what it kept, through real processes: the exact-metric traces beside the
surrogate in the trajectory and its chart, the promise fields of the result, and the unconstrained
baseline computed once per data and split."""

from __future__ import annotations

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload
from tests.support.jobs import wait_baseline


def test_exact_traces_promise_fields_and_shared_baseline(stack):
    with stack.client() as client:
        dataset = upload(client, planted_table(1500, seed=4), name="promise")
        spec = job_spec(dataset["id"], max_iterations=200, exact_enforcement=False,  # returns the last iterate
                        constraints=[{"type": "demographic_parity", "tolerance": 0.05},
                                     {"type": "equalized_odds", "tolerance": 0.1}])
        resp = client.post("/api/v1/jobs", json=spec)
        assert resp.status_code == 202, resp.text
        job = stack.wait_job(client, resp.json()["id"], {"succeeded", "failed"})
        assert job["status"] == "succeeded", job["error"]
        result = job["result"]
        for key in ("fairness", "warnings", "enforcement", "guarantee", "tried"):
            assert key in result, key
        assert [e["type"] for e in result["fairness"]] == ["demographic_parity", "equalized_odds"]

        traj = client.get(f"/api/v1/jobs/{job['id']}/trajectory", params={"max_points": 100000}).json()
        exact = traj["exact"]
        assert traj["exact_names"] == ["demographic_parity", "equalized_odds"]
        assert traj["exact_tolerances"] == [0.05, 0.1]
        its = [p["iteration"] for p in exact]
        last = result["iterations"]  # 200, plus the exact enforcement's continuation when it ran
        assert its[0] == 1 and its[-1] == last >= 200 and 2 < len(its) < last  # every few iterations, not every one
        assert all(len(p["train"]) == 2 and len(p["validation"]) == 2 for p in exact)
        assert all(0 <= v <= 1 for p in exact for v in p["train"] + p["validation"])
        metrics = job["metrics"]
        assert exact[-1]["train"][0] == metrics["train"]["demographic_parity"]  # the same exact metric
        assert exact[-1]["validation"][1] == metrics["validation"]["equalized_odds"]
        assert exact[-1]["train"][1] == result["fairness"][1]["train"]["value"]  # and the report's
        few = client.get(f"/api/v1/jobs/{job['id']}/trajectory", params={"max_points": 5}).json()["exact"]
        step = -(-len(its) // 4)  # every step-th traced iteration by rank, and the last
        assert [p["iteration"] for p in few] == sorted(set(its[::step]) | {its[-1]})

        fig = client.get(f"/api/v1/jobs/{job['id']}/charts/trajectory").json()
        names = {t["name"] for t in fig["data"]}
        assert {"demographic_parity surrogate", "demographic_parity exact (train)",
                "demographic_parity exact (validation)", "equalized_odds exact (train)"} <= names
        trace = next(t for t in fig["data"] if t["name"] == "demographic_parity exact (validation)"
                     and t["xaxis"] in ("x3", "x"))  # the iteration column
        assert trace["x"] == its and trace["y"] == [p["validation"][0] for p in exact]
        marker = next(t for t in fig["data"] if t["name"] == "equalized_odds final model (train)"
                      and t["xaxis"] in ("x3", "x"))
        assert marker["x"] == [200] and marker["y"] == [result["fairness"][1]["train"]["value"]]

        baseline = wait_baseline(client, job["id"])
        assert baseline["status"] == "succeeded", baseline["error"]
        assert 0.5 < baseline["result"]["metrics"]["test"]["accuracy"] <= 1
        erm_gap = baseline["result"]["fairness"][0]["test"]["value"]
        assert erm_gap > result["fairness"][0]["test"]["value"]  # the constrained job is fairer than ERM

        looser = client.post("/api/v1/jobs", json=dict(spec, constraints=[
            {"type": "demographic_parity", "tolerance": 0.2}, {"type": "equalized_odds", "tolerance": 0.3}],
            max_iterations=5))
        other = stack.wait_job(client, looser.json()["id"], {"succeeded", "failed"})
        assert other["baseline"]["id"] == baseline["id"]  # same data and split: computed once
        moved = client.post("/api/v1/jobs", json=dict(spec, split={"test": 0.3, "validation": 0.2, "seed": 1},
                                                      max_iterations=5))
        third = stack.wait_job(client, moved.json()["id"], {"succeeded", "failed"})
        assert wait_baseline(client, third["id"])["id"] != baseline["id"]

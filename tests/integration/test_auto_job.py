"""A job without a solver runs ``auto`` through real API and worker processes: one continuous trajectory,
the portfolio's rows in the result, the selected model keeping the tolerance on validation."""

from __future__ import annotations

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload


def test_a_job_without_a_solver_runs_auto_and_records_what_it_tried(stack):
    with stack.client() as client:
        dataset = upload(client, planted_table(1500, seed=6), name="auto")
        # max_iterations bounds the whole portfolio (issue 30 item 5): room for a first solve (500) and refinements
        spec = job_spec(dataset["id"], max_iterations=800, constraints=[{"type": "demographic_parity",
                                                                         "tolerance": 0.1}])
        del spec["solver"]
        resp = client.post("/api/v1/jobs", json=spec)
        assert resp.status_code == 202, resp.text
        job = stack.wait_job(client, resp.json()["id"], {"succeeded", "failed"})
        assert job["status"] == "succeeded", job["error"]
        assert job["spec"]["solver"]["name"] == "auto"
        tried = job["result"]["tried"]
        # in portfolio order (ssg, plada, lagrangian, penalty, then DP's dedicated reductions and group_thresholds),
        # stopping once a candidate satisfies the spec (auto is not exhaustive by default)
        portfolio = ["ssg", "plada", "lagrangian", "penalty", "reductions", "group_thresholds"]
        solvers = list(dict.fromkeys(t["solver"] for t in tried))
        assert solvers == portfolio[:len(solvers)]
        chosen = [t for t in tried if t.get("selected")]
        assert len(chosen) == 1 and chosen[0]["outcome"] == "meets" and chosen[0]["judged_on"] == "validation"
        assert job["metrics"]["validation"]["demographic_parity"] <= 0.1
        traj = client.get(f"/api/v1/jobs/{job['id']}/trajectory", params={"max_points": 100000}).json()
        its = [p["iteration"] for p in traj["points"]]
        assert its == list(range(1, len(its) + 1)) and len(its) >= sum(t["iterations"] for t in tried)

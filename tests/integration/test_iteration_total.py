"""A job's progress reads against the run's iteration total and never exceeds it, through the real API and worker
(issue 30 item 5: 2,000 asked, 3,000-5,000 run, progress "3000 / 2000")."""

from __future__ import annotations

from bench.common.wait import wait_until
from solvers import ProblemSpec
from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload


def test_progress_of_an_auto_job_with_enforcement_stays_within_its_total(embedded_stack):
    with embedded_stack.client() as client:
        dataset = upload(client, planted_table(2000, seed=5), name="budget")
        spec = job_spec(dataset["id"], max_iterations=400, enforcement_iterations=60,
                        solver={"name": "auto", "params": {"exhaustive": True, "iterations": 150}},
                        constraints=[{"type": "demographic_parity", "tolerance": 0.01}])
        total = ProblemSpec.model_validate({k: v for k, v in spec.items() if k != "dataset_id"}).iteration_total()
        assert total == 460
        resp = client.post("/api/v1/jobs", json=spec)
        assert resp.status_code == 202, resp.text
        job_id, seen = resp.json()["id"], []
        def ended() -> dict | None:  # progress as a user reads it while the job runs
            job = client.get(f"/api/v1/jobs/{job_id}").json()
            seen.append((job["progress"]["iteration"], job["progress"]["max_iterations"]))
            return job if job["status"] in ("succeeded", "failed") else None

        job = wait_until(ended, 180, 0.1, lambda: f"job {job_id} ended (progress seen: {seen[-3:]})")
        assert job["status"] == "succeeded", job["error"]
        assert all(done <= of == total for done, of in seen), seen
        tried = job["result"]["tried"]
        assert sum(t["iterations"] for t in tried) <= 400 < len(tried) * 150  # auto's candidates were cut to 400
        assert job["result"]["iterations"] <= total and job["progress"]["iteration"] == job["result"]["iterations"]
        traj = client.get(f"/api/v1/jobs/{job_id}/trajectory", params={"max_points": 100000}).json()
        its = [p["iteration"] for p in traj["points"]]
        assert its == list(range(1, len(its) + 1)) and its[-1] <= total

"""How a job ends when its solve does not run to max_iterations: the time limit (a usable model: succeeded)
and divergence (failed at the first non-finite iterate, its finite trajectory kept, the step size named)."""

from __future__ import annotations

import math
import re

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload


def test_time_limit_ends_succeeded_with_a_model(postgres_stack):
    stack = postgres_stack
    with stack.client() as client:
        dataset = upload(client, planted_table(1000, seed=3))
        job_id = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=5_000_000,
                                                           time_limit_s=1.0)).json()["id"]
        job = stack.wait_job(client, job_id, {"succeeded", "failed", "cancelled"}, timeout=120)
        assert job["status"] == "succeeded" and job["error"] is None, job
        result = job["result"]
        assert result["stop_reason"] == "time_limit" and 0 < result["iterations"] < 5_000_000
        assert result["message"].startswith("time limit of 1 s reached after")
        assert sorted(a["kind"] for a in job["artifacts"]) == ["predictions", "weights"]
        assert job["metrics"]["test"]  # audited and charted like any finished job


def test_divergence_fails_at_the_first_non_finite_iterate(postgres_stack):
    stack = postgres_stack
    with stack.client() as client:
        dataset = upload(client, planted_table(400, seed=4))
        spec = job_spec(dataset["id"], max_iterations=200, solver={"name": "erm", "params": {"optimizer": "gd",
                                                                                             "lr": 1e37}})
        job_id = client.post("/api/v1/jobs", json=spec).json()["id"]
        job = stack.wait_job(client, job_id, {"succeeded", "failed", "cancelled"}, timeout=120)
        assert job["status"] == "failed", job
        found = re.search(r"diverged at iteration (\d+): the objective is", job["error"])
        assert found and "params.lr = 1e+37" in job["error"], job["error"]
        assert "Traceback" not in job["error"] and job["artifacts"] == []
        first_bad = int(found.group(1))
        assert 1 < first_bad < 200
        traj = client.get(f"/api/v1/jobs/{job_id}/trajectory").json()
        # up to the last finite iterate, nothing after it
        assert [p["iteration"] for p in traj["points"]] == list(range(1, first_bad))
        for point in traj["points"]:
            assert all(math.isfinite(v) for v in (point["objective"], point["max_violation"], *point["constraints"]))

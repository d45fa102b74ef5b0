"""An ``erm`` job is its own baseline (app.jobs.baselines.solves_as_baseline): through real API and worker processes its
result is stored as the baseline in the job's final transaction, and no ``compute_baseline`` fits the same model
again; a job of another solver still has its baseline computed by that task."""

from __future__ import annotations

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload
from tests.support.jobs import wait_baseline

GBDT = {"type": "gbdt", "n_estimators": 12, "num_leaves": 7}


def test_an_erm_job_stores_its_own_result_as_the_baseline(postgres_stack):
    with postgres_stack.client() as client:
        dataset = upload(client, planted_table(1500, seed=8), name="ermbaseline")
        erm = client.post("/api/v1/jobs", json=job_spec(dataset["id"], model=GBDT, solver={"name": "erm"},
                                                        split={"test": 0.2, "validation": 0.2, "seed": 11}))
        assert erm.status_code == 202, erm.text
        job = postgres_stack.wait_job(client, erm.json()["id"], {"succeeded", "failed"}, wait_s=20)
        assert job["status"] == "succeeded", job["error"]
        baseline = job["baseline"]  # read with the job's end: stored in the same transaction
        assert baseline["status"] == "succeeded", baseline
        for split, metrics in job["metrics"].items():
            assert baseline["result"]["metrics"][split]["accuracy"] == metrics["accuracy"]
        assert baseline["result"]["fairness"] == job["result"]["fairness"]

        fair = client.post("/api/v1/jobs", json=job_spec(dataset["id"], model=GBDT, solver={"name": "fair_boosting"},
                                                         split={"test": 0.2, "validation": 0.2, "seed": 12}))
        assert fair.status_code == 202, fair.text
        other = wait_baseline(client, fair.json()["id"])
        assert other["status"] == "succeeded", other
    worker_log = (postgres_stack.home / "worker.log").read_text()
    assert f"baseline-{other['id']}" in worker_log      # computed by the task
    assert f"baseline-{baseline['id']}" not in worker_log  # never sent: the erm job was it

"""Submit vs delete on PostgreSQL: concurrent ``POST /jobs`` and ``DELETE /datasets/{id}`` never answer 202 for a
job that was not stored, never 500; the delete answers 409 once a job refers to the dataset."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload

ROUNDS, SUBMITS = 10, 6


def test_concurrent_submit_and_delete(postgres_stack):
    stack = postgres_stack
    answers: list[tuple[str, int]] = []
    csv_frame = planted_table(200, seed=11)
    with stack.client() as client, ThreadPoolExecutor(SUBMITS + 1) as pool:
        for round_ in range(ROUNDS):
            dataset_id = upload(client, csv_frame, name=f"race{round_}")["id"]
            barrier = threading.Barrier(SUBMITS + 1)

            def submit(i: int):
                headers = {"Idempotency-Key": f"race-{dataset_id}-{i}"} if i % 2 else {}
                barrier.wait()
                return client.post("/api/v1/jobs", json=job_spec(dataset_id, max_iterations=3), headers=headers)

            def delete():
                barrier.wait()
                return client.delete(f"/api/v1/datasets/{dataset_id}")

            futures = [pool.submit(submit, i) for i in range(SUBMITS)] + [pool.submit(delete)]
            *submits, deleted = [f.result() for f in futures]
            answers += [("submit", r.status_code) for r in submits] + [("delete", deleted.status_code)]
            for response in submits:
                assert response.status_code in (202, 409, 422), response.text
                if response.status_code == 202:  # a 202 names a stored job
                    job = client.get(f"/api/v1/jobs/{response.json()['id']}")
                    assert job.status_code == 200 and job.json()["dataset_id"] == dataset_id, job.text
                if response.status_code == 422:
                    assert response.json()["detail"][0]["loc"] == ["body", "dataset_id"], response.text
            accepted = sum(r.status_code == 202 for r in submits)
            assert deleted.status_code in (204, 409), deleted.text
            if deleted.status_code == 204:
                assert accepted == 0
                assert client.get(f"/api/v1/datasets/{dataset_id}").status_code == 404
            else:
                assert accepted > 0 and "jobs refer to this dataset" in deleted.text
            for i in range(1, SUBMITS, 2):  # a retry replays only what was answered and stored
                retry = client.post("/api/v1/jobs", json=job_spec(dataset_id, max_iterations=3),
                                    headers={"Idempotency-Key": f"race-{dataset_id}-{i}"})
                first = submits[i]
                if first.status_code == 202:
                    assert retry.status_code == 202 and retry.json() == first.json()
                else:
                    assert retry.status_code != 202 or deleted.status_code == 409
    assert {code for what, code in answers if what == "delete"} <= {204, 409}
    assert 500 not in {code for _, code in answers}

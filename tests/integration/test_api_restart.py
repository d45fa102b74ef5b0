"""The API process is killed and started again while jobs are queued and running: nothing is lost."""

from __future__ import annotations

import os
import time

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload
from tests.support.jobs import restart_api


def test_killing_the_api_loses_no_queued_or_finished_job(postgres_stack):
    stack = postgres_stack
    with stack.client() as client:
        dataset = upload(client, planted_table(800))
        done = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=20)).json()["id"]
        stack.wait_job(client, done, {"succeeded"})
        pending = [client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=400, seed=i)).json()["id"]
                   for i in range(4)]
    restart_api(stack)
    with stack.client() as client:
        assert client.get(f"/api/v1/jobs/{done}").json()["status"] == "succeeded"
        assert client.get(f"/api/v1/jobs/{done}/artifacts/weights").status_code == 200
        for job_id in pending:
            assert stack.wait_job(client, job_id, {"succeeded", "failed"})["status"] == "succeeded"
        listed = {j["id"] for j in client.get("/api/v1/jobs", params={"limit": 1000}).json()}
        assert {done, *pending} <= listed


def test_a_start_removes_partial_uploads_of_a_crashed_process(embedded_stack):
    """Issue 19 #13: a process killed mid-upload leaves ``<id>.upload`` in storage/tmp for good. The API
    deletes, when it starts, the files there unchanged for FAIRSOLVE_TMP_STALE_S (1 h); a file written
    meanwhile (another process' live upload) stays."""
    tmp = embedded_stack.home / "storage" / "tmp"
    crashed, live = tmp / "0123456789abcdef0123456789abcdef.upload", tmp / "fedcba9876543210fedcba9876543210.upload"
    crashed.write_bytes(b"age,sex,income\n" * 1000)
    live.write_bytes(b"age,sex,")
    two_hours_ago = time.time() - 7200
    os.utime(crashed, (two_hours_ago, two_hours_ago))
    restart_api(embedded_stack)
    assert not crashed.exists()
    assert live.exists()
    assert f"removed 1 stale file(s) from storage/tmp: {crashed.name}" in embedded_stack.log("api")
    live.unlink()

"""``GET /api/v1/jobs/{id}?wait_s=`` (app.jobs.wait) through real API and worker processes, on PostgreSQL + Redis and
on the embedded defaults: it answers as soon as the job ends, or once the wait is over while the job still runs;
it refuses a wait outside [0, 30] naming ``wait_s``; another owner's job is a 404 at once, not after the wait."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timezone

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload


def _at(stamp: str) -> float:
    moment = datetime.fromisoformat(stamp)
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def test_long_poll_answers_at_the_end_or_after_the_wait(stack):
    with stack.client() as client:
        dataset = upload(client, planted_table(1500, seed=5), name="longpoll")
        for bad in (-1, 30.5, "soon"):
            refused = client.get("/api/v1/jobs/any", params={"wait_s": bad})
            assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["query", "wait_s"], \
                refused.text

        long = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=1_000_000, time_limit_s=120))
        assert long.status_code == 202, long.text
        started = time.monotonic()
        still = client.get(f"/api/v1/jobs/{long.json()['id']}", params={"wait_s": 1.5}).json()
        waited = time.monotonic() - started
        assert still["status"] in ("queued", "running") and 1.5 <= waited < 10, (still["status"], waited)

        other = stack.new_key(f"other-{uuid.uuid4().hex[:6]}")
        with stack.client(other) as stranger:
            started = time.monotonic()
            assert stranger.get(f"/api/v1/jobs/{long.json()['id']}", params={"wait_s": 20}).status_code == 404
            assert time.monotonic() - started < 10
        assert client.post(f"/api/v1/jobs/{long.json()['id']}/cancel").status_code == 202

        short = client.post("/api/v1/jobs", json=job_spec(dataset["id"], model={"type": "gbdt", "n_estimators": 10},
                                                          solver={"name": "erm"}))
        assert short.status_code == 202, short.text
        started = time.monotonic()
        job = client.get(f"/api/v1/jobs/{short.json()['id']}", params={"wait_s": 30}).json()
        seen = time.time()
        # the long job is cancelled within about a second; the short one then runs: well within the 30 s wait
        assert job["status"] == "succeeded", job
        assert time.monotonic() - started < 25
        assert seen - _at(job["finished_at"]) < 5  # answered at the end, not at the end of the wait
        assert client.get(f"/api/v1/jobs/{long.json()['id']}", params={"wait_s": 30}).json()["status"] == "cancelled"

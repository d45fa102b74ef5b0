"""Broker outage on a real Redis of the test's own, stopped and started again without its data: a job whose
message was waiting in Redis is lost with it, a job and a sweep are submitted while Redis is down. The
submits are stored and answered 202 (an idempotent retry replays exactly that), and once Redis is back beat's
reconciler sends every queued job with no message again: all of them run, each once."""

from __future__ import annotations

import subprocess

import httpx
import pytest
import redis

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload
from bench.common.stack import free_port, pg_database, start_stack, stop_stack
from bench.common.wait import wait_until

ENDED = {"succeeded", "failed", "cancelled"}


class RedisServer:
    """A redis-server on ``port`` that keeps nothing on disk (a restart loses every message)."""

    def __init__(self, port: int, home) -> None:
        self.port, self.home, self.proc = port, home, None

    def start(self) -> None:
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.home)], stdout=subprocess.DEVNULL)
        client = redis.Redis(port=self.port)
        wait_until(lambda: self.answers(client), 30, 0.05, f"redis-server on port {self.port} answering PING")

    def answers(self, client: redis.Redis) -> bool:
        try:
            return client.ping()
        except redis.ConnectionError:
            assert self.proc.poll() is None, "redis-server exited"
            return False

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)


@pytest.fixture
def outage(tmp_path):
    server = RedisServer(free_port(), tmp_path)
    server.start()
    url, drop = pg_database()
    stack = start_stack("outage", tmp_path, url, f"redis://127.0.0.1:{server.port}/0", beat=True, extra_env={
        "FAIRSOLVE_RESEND_GRACE_S": "1", "FAIRSOLVE_RESEND_EVERY_S": "0.5"})
    yield stack, server
    stop_stack(stack)
    if server.proc.poll() is None:
        server.stop()
    drop()


def test_nothing_stays_queued_without_a_message(outage):
    stack, server = outage
    with stack.client() as client:
        dataset = upload(client, planted_table(400, seed=9))
        busy = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=10_000_000,
                                                         time_limit_s=4)).json()["id"]
        stack.wait_job(client, busy, {"running"})  # the one worker is busy: the next message waits in Redis
        waiting = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=20)).json()["id"]
        queued = redis.Redis(port=server.port).lrange(stack.env["FAIRSOLVE_BROKER_KEY_PREFIX"] + "cpu", 0, -1)
        assert any(f'"id": "{waiting}-1"'.encode() in message for message in queued), queued

        server.stop()  # the waiting job's message is gone with it
        key = {"Idempotency-Key": "during-the-outage"}
        submitted = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=20), headers=key)
        assert submitted.status_code == 202, submitted.text
        assert submitted.json()["status"] == "queued"
        sweep = client.post("/api/v1/sweeps", json={"base": job_spec(dataset["id"], max_iterations=20),
                                                    "grid": {"tolerances": [0.05, 0.1]}})
        assert sweep.status_code == 202, sweep.text
        retry = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=20), headers=key)
        assert retry.status_code == 202 and retry.json() == submitted.json()  # the answer given, and honoured
        assert retry.headers["Idempotent-Replayed"] == "true"
        assert client.get(f"/api/v1/jobs/{submitted.json()['id']}").json()["status"] == "queued"

        server.start()  # empty: nothing of what was sent before survives
        ids = [j["id"] for j in client.get("/api/v1/jobs").json()]
        assert len(ids) == 3 + sweep.json()["n_jobs"] and {busy, waiting, submitted.json()["id"]} <= set(ids)
        jobs = {job_id: stack.wait_job(client, job_id, ENDED, timeout=240) for job_id in ids}
        assert {j["status"] for j in jobs.values()} == {"succeeded"}, {i: j["error"] for i, j in jobs.items()}
        assert all(j["starts"] == 1 for j in jobs.values()), [j["starts"] for j in jobs.values()]
        assert jobs[busy]["result"]["stop_reason"] == "time_limit"
        assert "sending attempt 1 again" in (stack.home / "housekeeping.log").read_text()  # beat's reconciler
        again = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=20), headers=key)
        assert again.json() == submitted.json()
    with httpx.Client(base_url=stack.url) as anonymous:
        assert anonymous.get("/healthz").status_code == 200

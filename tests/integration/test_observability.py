"""``/metrics``, ``/readyz`` and structured logs on a real stack."""

from __future__ import annotations

import json
import re

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload


def sample(text: str, name: str, **labels: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            found = dict(re.findall(r'(\w+)="([^"]*)"', line.split(" ")[0]))
            if all(found.get(k) == v for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
    return None


def test_metrics_readiness_and_json_logs(postgres_stack):
    stack = postgres_stack
    with stack.client() as client:
        ready = client.get("/readyz")
        assert ready.status_code == 200 and ready.json() == {"status": "ok", "database": "ok", "broker": "ok"}
        dataset = upload(client, planted_table(500))
        job = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=20),
                          headers={"X-Request-ID": "req-observability-1"})
        assert job.headers["x-request-id"] == "req-observability-1"
        stack.wait_job(client, job.json()["id"], {"succeeded"})
        assert len(client.get("/api/v1/jobs/nope").headers["x-request-id"]) == 32  # generated when absent

        text = client.get("/metrics").text
    assert sample(text, "fairsolve_http_requests_total", method="POST", route="/api/v1/jobs", status="202") >= 1
    assert sample(text, "fairsolve_http_requests_total", method="GET", route="/api/v1/jobs/{job_id}",
                  status="404") >= 1
    assert sample(text, "fairsolve_http_request_duration_seconds_count", method="POST",
                  route="/api/v1/datasets") >= 1
    assert sample(text, "fairsolve_jobs", status="succeeded") >= 1
    assert "fairsolve_queue_depth" in text and "fairsolve_solver_iterations_per_second" in text

    api_lines = [json.loads(line) for line in (stack.home / "api.log").read_text().splitlines()
                 if line.startswith("{")]
    submit = [r for r in api_lines if r.get("request_id") == "req-observability-1"]
    assert submit and submit[-1]["path"] == "/api/v1/jobs" and submit[-1]["status"] == 202
    assert submit[-1]["owner"] == "admin" and submit[-1]["duration_ms"] > 0
    worker_lines = [json.loads(line) for line in (stack.home / "worker.log").read_text().splitlines()
                    if line.startswith("{")]
    assert any(r.get("job_id") == job.json()["id"] for r in worker_lines)


def test_several_api_processes_share_one_metrics_view(tmp_path):
    """``FAIRSOLVE_API_WORKERS=2``: two uvicorn processes answer, and /metrics (from either) adds up both."""
    import httpx

    from bench.common.stack import REDIS_URL, descendants, pg_database, start_stack, stop_stack

    database_url, drop = pg_database()
    stack = start_stack("multi-api", tmp_path, database_url, REDIS_URL, workers=0,
                        extra_env={"FAIRSOLVE_API_WORKERS": "2"})
    try:
        headers = {"Authorization": f"Bearer {stack.admin_key}"}
        for _ in range(40):  # a new connection each: the kernel spreads them over the processes
            assert httpx.get(f"{stack.url}/api/v1/solvers", headers=headers).status_code == 200
        servers = [pid for pid in descendants(stack.procs["api"].pid)  # uvicorn's spawned server processes
                   if b"spawn_main" in open(f"/proc/{pid}/cmdline", "rb").read()]
        assert len(servers) == 2
        recorded = {path.stem.rsplit("_", 1)[1] for path in (tmp_path / "prometheus").glob("counter_*.db")}
        assert recorded <= {str(pid) for pid in servers} and len(recorded) == 2  # both answered requests
        text = httpx.get(f"{stack.url}/metrics").text
        assert sample(text, "fairsolve_http_requests_total", method="GET", route="/api/v1/solvers",
                      status="200") == 40
        assert sample(text, "fairsolve_jobs", status="queued") is None and "fairsolve_queue_depth" in text
    finally:
        stop_stack(stack)
        drop()

"""Audits: the spec of a small audited job and its audit model files; through a running stack, a local webhook
receiver and waiting on runs."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from safetensors.torch import save_file

from app.audits.model import AuditModel
from bench.common.datagen import planted_table
from bench.common.wait import wait_until
from solvers import ProblemSpec, run
from solvers.encoding import TableEncoder


SPEC = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"], "model": {"type": "linear"},
        "constraints": [{"type": "demographic_parity", "tolerance": 0.05}],
        "solver": {"name": "plada", "params": {"eta": 0.05}}, "max_iterations": 30, "device": "cpu"}


def audit_files(folder):
    """``folder`` with a job's audit model file (``model.safetensors``), its bare weights (``plain.safetensors``) and
    fresh rows (``fresh.csv``), for :data:`SPEC` trained on a planted table."""
    spec = ProblemSpec.model_validate(SPEC)
    out = run(planted_table(500), spec)
    model = AuditModel(spec, TableEncoder.from_dict(out.encoder), out.state_dict, out.groups, "job-1")
    (folder / "model.safetensors").write_bytes(model.to_bytes())
    save_file(out.state_dict, str(folder / "plain.safetensors"), metadata={"job_id": "job-1"})
    planted_table(300, seed=1).to_csv(folder / "fresh.csv", index=False)
    return folder


class Hook(BaseHTTPRequestHandler):
    received: list[dict] = []
    answers: list[int] = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        code = Hook.answers.pop(0) if Hook.answers else 200
        Hook.received.append({"code": code, "body": body})
        self.send_response(code)
        self.end_headers()

    def log_message(self, *args):
        pass


@contextmanager
def local_server(handler: type[BaseHTTPRequestHandler], path: str) -> Iterator[str]:
    """``handler`` served on a free loopback port in a thread, for the ``with`` block; the URL of ``path``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{path}"
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def hook():
    with local_server(Hook, "/hook") as url:
        yield url


def wait_for(check, timeout: float, stack, what: str):
    """``check()``'s first truthy value, polled every 0.1 s while every process of ``stack`` lives."""
    return stack.until(check, timeout, what, interval=0.1, logs=("worker", "beat"))


def finished_runs(client, audit_id: str, trigger: str | None = None) -> list[dict]:
    runs = client.get(f"/api/v1/audits/{audit_id}/runs").json()
    return [r for r in runs if r["status"] in ("succeeded", "failed") and trigger in (None, r["trigger"])]


def finished_run(client, audit_id: str, timeout: float = 90) -> dict:
    """Run the audit now and return its first finished run."""
    client.post(f"/api/v1/audits/{audit_id}/run")
    return wait_until(lambda: finished_runs(client, audit_id), timeout, 0.3, f"audit {audit_id} finished")[0]

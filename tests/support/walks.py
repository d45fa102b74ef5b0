"""The two walks of the house: a job from ``POST /api/v1/jobs`` to its stored result, and an audit from its schedule
to its alert, traced in one process and read the way a newcomer reads them.

Both flows run for real on a fresh SQLite database (the API in process through Starlette's test client; the worker's
tasks called as functions; the audit's child computation in process), under :func:`sys.setprofile`. A call from a
function of one service file (``app/``, ``worker/``) into another service file is a step of the walk, the first time
that file calls into that one (reading a file, one opens each file it calls into once, however many of its names it
uses and wherever; a loop reads its call once). Not steps:

* calls into the vocabulary every flow uses, read once and known by name: ``app/core`` (settings, database,
  queue, blob store, sandbox, observability), ``app/models.py``, ``app/schemas.py``, ``app/auth``, the HTTP
  plumbing (``app/api/deps.py``, ``app/api/middleware``) and the library ``solvers``, which is read on its own
  (``solvers.run`` is one call of the job walk);
* the library's calls back into the service (an observer's methods called by ``solvers``): the observer is read
  once, where it is made.

A **return** is a step into a file the walk has already entered and left (it is not on the current stack): the
reader goes back to a file they have closed. ``python -m tests.support.walks job|audit`` prints a walk and its
returns (``--json``: the steps of both, which ``tests/test_walks.py`` bounds, tracing in a process of its own so
that no other test sees this one's settings).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ("app/", "worker/")
VOCABULARY = ("app/core/", "app/models.py", "app/schemas.py", "app/auth/", "app/api/deps.py", "app/api/middleware/")
LIBRARY = "solvers/"
MARK = "walks: "   # the line of ``--json``'s answer among whatever else the process prints


@dataclass
class Walk:
    """The steps of one flow, in call order: (depth, caller file, caller function, callee file, callee function,
    a return?)."""

    steps: list[tuple[int, str, str, str, str, bool]] = field(default_factory=list)

    @property
    def returns(self) -> list[tuple[str, str, str, str]]:
        return [(cf, cfn, f, fn) for _, cf, cfn, f, fn, back in self.steps if back]

    @property
    def files(self) -> list[str]:
        return list(dict.fromkeys(f for _, _, _, f, _, _ in self.steps))

    def text(self) -> str:
        lines = [f"{'  ' * depth}{f}:{fn}{'   <- return' if back else ''}"
                 for depth, _, _, f, fn, back in self.steps]
        return "\n".join(lines + [f"{len(self.steps)} steps through {len(self.files)} files, "
                                  f"{len(self.returns)} returns to a file already left"])


def _box(path: str | None) -> str | None:
    """The walk's name of a first-party file: itself for a service file, ``solvers`` for the library (whose calls
    back are not steps), None for the vocabulary."""
    if path is None or path.startswith(VOCABULARY):
        return None
    if path.startswith(SERVICE):
        return path
    if path.startswith(LIBRARY):
        return "solvers"
    return None


class _Tracer:
    """Records the walk's steps of every thread (a thread's stack of first-party frames is its own)."""

    def __init__(self) -> None:
        self.root = str(ROOT) + os.sep
        self.walk = Walk()
        self.entered: set[str] = set()
        self.edges: set[tuple[str, str, str, str]] = set()
        self.lock = threading.Lock()
        self.recording = False

    @contextmanager
    def record(self) -> Iterator[Walk]:
        """Record the steps of the calls made within (in every thread), as a fresh walk."""
        self.walk, self.entered, self.edges = Walk(), set(), set()
        self.recording = True
        try:
            yield self.walk
        finally:
            self.recording = False

    def _rel(self, frame) -> str | None:
        name = frame.f_code.co_filename
        return name[len(self.root):] if name.startswith(self.root) else None

    def __call__(self, frame, event, _arg) -> None:
        if event != "call" or (callee := self._rel(frame)) is None:
            return
        box = _box(callee)
        if box in (None, "solvers"):   # never a step, whoever calls (below): no stack to walk
            return
        chain, up = [], frame.f_back   # the first-party frames below this call, innermost first
        while up is not None:
            if (rel := self._rel(up)) is not None:
                chain.append((rel, _function(up.f_code)))
            up = up.f_back
        if not chain:
            return
        caller, caller_fn = chain[0]
        caller_box = _box(caller)
        if caller_box in (None, "solvers") or box == caller_box:
            return
        edge = (caller, callee)
        with self.lock:
            if not self.recording:
                return
            if edge in self.edges:
                return
            self.edges.add(edge)
            open_boxes = {_box(rel) for rel, _ in chain} - {None}
            back = box in self.entered and box not in open_boxes
            self.entered.add(box)
            depth = len(open_boxes)
            self.walk.steps.append((depth, caller_box, caller_fn, box, _function(frame.f_code), back))


def _function(code) -> str:
    """The function a reader reads: a nested function, lambda or comprehension is part of the one enclosing it."""
    return code.co_qualname.split(".<locals>")[0].replace(".<lambda>", "").replace("<genexpr>", "?")


@contextmanager
def tracing() -> Iterator[_Tracer]:
    """A tracer of this thread and of every thread started within (the test client's), recording on request."""
    tracer = _Tracer()
    threading.setprofile(tracer)
    sys.setprofile(tracer)
    try:
        yield tracer
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


@contextmanager
def service(home: Path) -> Iterator[tuple[Callable, object]]:
    """A fresh SQLite service in this process: (the test client's ``request``, the app's settings)."""
    key = "fsk_walk_" + uuid.uuid4().hex + uuid.uuid4().hex
    env = {"FAIRSOLVE_HOME": str(home), "DATABASE_URL": f"sqlite:///{home / 'walk.db'}",
           "CELERY_BROKER_URL": "memory://", "FAIRSOLVE_BOOTSTRAP_API_KEY": key,
           "FAIRSOLVE_WEBHOOK_ALLOW_PRIVATE": "1", "FAIRSOLVE_AUDIT_WEBHOOK_RETRIES": "0"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        subprocess.run([sys.executable, "-m", "alembic", "upgrade", "head"], cwd=ROOT, check=True,
                       capture_output=True)
        from fastapi.testclient import TestClient

        from app.core.settings import get_settings

        get_settings.cache_clear()
        from app.main import app

        yield lambda: TestClient(app, headers={"Authorization": f"Bearer {key}"}), get_settings()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _table_csv() -> str:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2))
    sex = rng.choice(["a", "b"], 400)
    y = np.where(x[:, 0] + 0.8 * (sex == "a") + rng.normal(size=400) > 0.4, "yes", "no")
    return pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "sex": sex, "y": y}).to_csv(index=False)


JOB_SPEC = {"target": "y", "positive_label": "yes", "sensitive": ["sex"], "max_iterations": 20,
            "constraints": [{"type": "demographic_parity", "tolerance": 0.1}], "solver": {"name": "ssg"}}


def walks() -> dict[str, Walk]:
    """The job walk and the audit walk of a fresh service (module docstring)."""
    with tempfile.TemporaryDirectory() as home, service(Path(home)) as (client_of, _settings), tracing() as tracer:
        import worker.audits as audit_tasks
        import worker.tasks as job_tasks
        from app.audits import lifecycle as audit_lifecycle

        out = {}
        with client_of() as client:
            dataset = client.post("/api/v1/datasets", files={"file": ("t.csv", _table_csv(), "text/csv")})
            assert dataset.status_code == 201, dataset.text
            with tracer.record() as job:
                answer = client.post("/api/v1/jobs", json={**JOB_SPEC, "dataset_id": dataset.json()["id"]})
                assert answer.status_code == 202, answer.text
                job_tasks.run_job(answer.json()["id"])
            state = client.get(f"/api/v1/jobs/{answer.json()['id']}").json()
            assert state["status"] == "succeeded", state
            out["job"] = job
            audit = client.post("/api/v1/audits", json={
                "job_id": state["id"], "dataset_id": dataset.json()["id"], "schedule": "* * * * *",
                "metrics": [{"type": "demographic_parity", "threshold": 0.0001}],
                "webhook_url": "http://127.0.0.1:9/alerts"})
            assert audit.status_code == 201, audit.text
            _make_due(audit.json()["id"])
            sent = []
            real_send, real_alert = audit_lifecycle.send_run, audit_lifecycle.send_alert
            audit_lifecycle.send_run, audit_lifecycle.send_alert = sent.append, sent.append   # Celery's messages
            real_limited = audit_lifecycle.run_limited
            audit_lifecycle.run_limited = lambda fn, **_: fn()   # the child's computation, in this process
            try:
                with tracer.record() as audit_walk:
                    runs = audit_tasks.trigger_due_audits()
                    assert runs, "the due audit was not triggered"
                    assert audit_tasks.run_audit(runs[0]) == "breached"
                    try:
                        audit_lifecycle.deliver(sent[-1], final=True)   # Celery's deliver_alert, its last try
                    except audit_lifecycle.WebhookFailed:
                        pass   # nothing listens there: the failure is recorded on the alert
            finally:
                audit_lifecycle.send_run, audit_lifecycle.send_alert = real_send, real_alert
                audit_lifecycle.run_limited = real_limited
            out["audit"] = audit_walk
        return out


def _make_due(audit_id: str) -> None:
    from datetime import timedelta

    from sqlalchemy import update

    from app.core.db import session_scope
    from app.models import Audit, utcnow

    with session_scope() as s:
        s.execute(update(Audit).where(Audit.id == audit_id).values(next_run_at=utcnow() - timedelta(seconds=1)))


def walks_in_a_process() -> dict[str, Walk]:
    """:func:`walks` traced in a fresh interpreter (``--json``)."""
    import json

    done = subprocess.run([sys.executable, "-m", "tests.support.walks", "--json"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"tracing the walks failed:\n{done.stderr[-4000:]}")
    line = next(line for line in reversed(done.stdout.splitlines()) if line.startswith(MARK))
    steps = json.loads(line[len(MARK):])
    return {name: Walk([tuple(step) for step in found]) for name, found in steps.items()}


if __name__ == "__main__":   # python -m tests.support.walks [job|audit|--json]
    found = walks()
    if sys.argv[1:] == ["--json"]:
        import json

        print(MARK + json.dumps({name: walk.steps for name, walk in found.items()}))
    else:
        for name in sys.argv[1:] or ["job", "audit"]:
            print(f"# {name}\n{found[name].text()}\n")

"""``POST /jobs/{id}/cancel`` on SQLite (PostgreSQL's is in tests/integration/test_cancel_storm.py): a queued job is
cancelled at once and a repeat answers the same, a running one is flagged, a finished one is a 409, and another
owner's job or a missing one is a 404, each from the guarded UPDATEs alone."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.auth.keys import Caller
from app.api.deps import current_caller, get_db
from app.models import Job
from app.api.routes import jobs


def test_cancel_answers_from_its_updates(dataset_db):
    with dataset_db() as s, s.begin():
        for job_id, status, owner in (("q", "queued", "t"), ("w", "waiting", "t"), ("r", "running", "t"),
                                      ("s", "succeeded", "t"), ("x", "queued", "someone-else")):
            s.add(Job(id=job_id, owner=owner, dataset_id="d", spec={}, status=status, queue="cpu", progress={}))
    app = FastAPI()
    app.include_router(jobs.router)

    def db():
        with dataset_db() as session:
            yield session

    app.dependency_overrides[get_db] = db
    app.dependency_overrides[current_caller] = lambda: Caller(owner="t", key_id="k", admin=False)
    client = TestClient(app)
    answers = {job_id: client.post(f"/api/v1/jobs/{job_id}/cancel")
               for job_id in ("q", "q", "w", "r", "s", "x", "none")}
    assert answers["q"].status_code == 202 and answers["q"].json()["status"] == "cancelled"
    assert answers["w"].json()["status"] == "cancelled" and answers["r"].json()["status"] == "running"
    assert answers["s"].status_code == 409 and answers["x"].status_code == answers["none"].status_code == 404
    with dataset_db() as s:
        rows = {j.id: (j.status, j.cancel_requested, j.finished_at is not None) for j in s.query(Job)}
    assert rows == {"q": ("cancelled", True, True), "w": ("cancelled", True, True), "r": ("running", True, False),
                    "s": ("succeeded", True, False), "x": ("queued", False, False)}

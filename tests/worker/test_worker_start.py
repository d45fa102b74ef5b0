"""The start of a job (:func:`app.jobs.lifecycle.start`, the worker's first step) against a real SQLite database: a stored spec it cannot read fails the job."""
from __future__ import annotations

from contextlib import contextmanager

from app.models import Job
from app.jobs import lifecycle


def test_a_stored_spec_the_worker_cannot_read_fails_the_job_instead_of_leaving_it_queued(dataset_db, monkeypatch):
    """Seen when a worker's spec rules refused a stored spec: the task raised, the row rolled back to ``queued``
    and nothing ever marked it. Now the start marks it ``failed`` with the reason."""
    with dataset_db() as s, s.begin():
        s.add(Job(id="j", owner="t", dataset_id="d", status="queued", attempts=0, progress={},
                  spec={"target": "y", "positive_label": 1, "sensitive": ["s"], "model": {"type": "no-such-model"}}))

    @contextmanager
    def scope():
        with dataset_db() as session, session.begin():
            yield session

    monkeypatch.setattr(lifecycle, "session_scope", scope)
    assert lifecycle.start("j", 1) is None
    with dataset_db() as s:
        job = s.get(Job, "j")
        assert job.status == "failed" and job.finished_at is not None
        assert "spec cannot be read" in job.error and "model" in job.error

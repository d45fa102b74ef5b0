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


@contextmanager
def _scope(dataset_db):
    with dataset_db() as session, session.begin():
        yield session


def test_a_base_model_no_longer_stored_is_named_by_the_start_and_its_failure_ended_by_end(dataset_db, monkeypatch):
    """A job post-processing another job's model (``base_job_id``) whose weights are gone starts with
    ``missing_base`` (the solve fails naming it); :func:`~app.jobs.lifecycle.end` stores a failure as this start,
    and a superseded start's ending writes nothing and says ``stale``."""
    gone = "0" * 32
    spec = {"target": "y", "positive_label": 1, "sensitive": ["s"],
            "solver": {"name": "group_thresholds", "params": {"base_job_id": gone}}}
    with dataset_db() as s, s.begin():
        s.add(Job(id=gone, owner="t", dataset_id="d", status="succeeded", attempts=1, progress={}, spec=spec))
        s.add(Job(id="j", owner="t", dataset_id="d", status="queued", attempts=0, progress={}, spec=spec))
    monkeypatch.setattr(lifecycle, "session_scope", lambda: _scope(dataset_db))
    monkeypatch.setattr(lifecycle, "request_baseline", lambda job_id, warm_started: None)
    abandoned = []
    monkeypatch.setattr(lifecycle, "abandon", lambda job_id, fence: abandoned.append((job_id, fence)))
    monkeypatch.setattr(lifecycle, "remove_checkpoints", lambda job_id: None)
    started = lifecycle.start("j", 1)
    assert started is not None and started.missing_base == gone and started.initial_state is None
    assert lifecycle.end("j", started._replace(fence=started.fence + 1), lifecycle.Failure("failed", "x")) == "stale"
    assert abandoned == [("j", started.fence + 1)]
    assert lifecycle.end("j", started, lifecycle.Failure("failed", "solver.params.base_job_id: gone")) == "failed"
    with dataset_db() as s:
        job = s.get(Job, "j")
        assert job.status == "failed" and job.error == "solver.params.base_job_id: gone" and job.finished_at

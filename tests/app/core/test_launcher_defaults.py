"""``make run``'s defaults (issue 30, item 7): a long job never holds the only job process."""
from __future__ import annotations

from app.launcher import worker_concurrency


def test_the_embedded_worker_runs_two_job_processes_by_default(monkeypatch):
    monkeypatch.delenv("FAIRSOLVE_WORKER_CONCURRENCY", raising=False)
    assert worker_concurrency() == 2
    monkeypatch.setenv("FAIRSOLVE_WORKER_CONCURRENCY", "4")
    assert worker_concurrency() == 4

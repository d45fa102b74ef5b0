"""``make run``'s defaults (issue 30, item 7; issue 33, item 3): the embedded worker runs a job process per usable
core, bounded by memory, and never fewer than two, so a long job never holds the only job process."""
from __future__ import annotations

from app import launcher
from app.launcher import MEMORY_PER_PROCESS, worker_concurrency


def test_the_embedded_worker_runs_a_job_process_per_core_bounded_by_memory(monkeypatch):
    monkeypatch.delenv("FAIRSOLVE_WORKER_CONCURRENCY", raising=False)
    monkeypatch.setattr(launcher, "usable_cores", lambda: 8)
    monkeypatch.setattr(launcher, "available_memory", lambda: 64 * MEMORY_PER_PROCESS)
    assert worker_concurrency() == 8  # the cores
    monkeypatch.setattr(launcher, "available_memory", lambda: 3 * MEMORY_PER_PROCESS + 1)
    assert worker_concurrency() == 3  # the memory
    monkeypatch.setattr(launcher, "usable_cores", lambda: 1)
    assert worker_concurrency() == 2  # never one: a long job must not hold the queue
    monkeypatch.setenv("FAIRSOLVE_WORKER_CONCURRENCY", "4")
    assert worker_concurrency() == 4


def test_the_usable_cores_and_memory_are_read_from_this_machine():
    import os

    assert 1 <= launcher.usable_cores() <= (os.cpu_count() or 1)
    memory = launcher.available_memory()
    assert memory is None or memory > 0

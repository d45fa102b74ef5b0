"""The worker's trajectory writer against a real SQLite database (the PostgreSQL path runs in integration)."""
from __future__ import annotations

import time

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import sessionmaker

from app.db import make_engine
from app.models import Base, Dataset, Job, TrajectoryPoint
from solvers.observer import IterationRecord
from worker.persistence import PersistingObserver


@pytest.fixture
def sessions(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'p.db'}")
    Base.metadata.create_all(engine)
    factory = sessionmaker(bind=engine)
    with factory() as s, s.begin():
        s.add(Dataset(id="d", owner="t", name="d", format="csv", stored_name="-", size_bytes=0, sha256="-", n_rows=1,
                      n_columns=1, columns=[]))
        s.add(Job(id="j", owner="t", dataset_id="d", spec={}, progress={}))
    yield factory
    engine.dispose()


def record(k: int) -> IterationRecord:
    return IterationRecord(k, 0.001 * k, 10 * k, 1.0 / k, [0.1 / k], 0.1 / k, {"lambda": [0.5]})


def rows(sessions) -> int:
    with sessions() as s:
        return s.scalar(select(func.count()).select_from(TrajectoryPoint))


def test_rows_are_written_by_the_writer_thread_in_batches(sessions):
    obs = PersistingObserver("j", sessions, flush_s=0.05, flush_rows=10_000)
    obs.on_start({"max_iterations": 500, "constraint_names": ["dp"]})
    for k in range(1, 301):
        obs.on_iteration(record(k))
    deadline = time.monotonic() + 5
    while rows(sessions) < 300 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert rows(sessions) == 300  # written without the solver ever calling flush
    for k in range(301, 401):
        obs.on_iteration(record(k))
    obs.close()
    assert rows(sessions) == 400 == obs.rows_written
    with sessions() as s:
        job = s.get(Job, "j")
        assert job.progress["iteration"] == 400 and job.heartbeat_at is not None
    assert obs.iterations_to_target(vtol=1e-3, rtol=1e-2) is not None


def test_a_cancel_request_is_seen_and_a_write_error_surfaces(sessions):
    obs = PersistingObserver("j", sessions, flush_s=0.02)
    obs.on_start({"max_iterations": 10})
    with sessions() as s, s.begin():
        s.execute(update(Job).values(cancel_requested=True))
    obs.on_iteration(record(1))
    deadline = time.monotonic() + 5
    while obs.should_stop() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert obs.should_stop() == "cancelled"
    obs.close()

    broken = PersistingObserver("j", sessions, flush_s=0.02)
    broken.on_start({"max_iterations": 10})
    broken.on_iteration(record(1))  # iteration 1 again: the primary key refuses the duplicate row
    deadline = time.monotonic() + 5
    while broken._error is None and time.monotonic() < deadline:
        time.sleep(0.02)
    with pytest.raises(Exception, match="UNIQUE|IntegrityError|unique"):
        broken.on_iteration(record(2))


def test_a_superseded_start_writes_nothing(sessions, tmp_path):
    """Fencing: once another start holds the job (``starts`` moved on), this start's next write — rows,
    heartbeat, checkpoint reference — is refused as a whole and its own checkpoint file is removed."""
    from solvers import checkpoint as ckpt
    from worker.persistence import StaleAttempt

    with sessions() as s, s.begin():
        s.execute(update(Job).values(status="running", starts=1, attempts=1))
    path = tmp_path / "j.1.safetensors"
    obs = PersistingObserver("j", sessions, flush_s=60, fence=1, checkpoint_path=path)
    obs.on_start({"max_iterations": 10})
    obs.on_iteration(record(1))
    obs.on_checkpoint(ckpt.Checkpoint(iteration=1, samples_seen=10, elapsed_s=0.1))
    with sessions() as s:
        assert s.get(Job, "j").progress["checkpoint_start"] == 1 and rows(sessions) == 1
    with sessions() as s, s.begin():  # the reaper re-queued it and a second start began
        s.execute(update(Job).values(starts=2))
    obs.on_iteration(record(2))
    with pytest.raises(StaleAttempt):
        obs.on_checkpoint(ckpt.Checkpoint(iteration=2, samples_seen=20, elapsed_s=0.2))
    assert not path.exists() and rows(sessions) == 1
    with sessions() as s:
        assert s.get(Job, "j").progress["checkpoint_iteration"] == 1
    with pytest.raises(StaleAttempt):
        obs.close()

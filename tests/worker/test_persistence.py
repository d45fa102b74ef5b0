"""The worker's trajectory writer against a real SQLite database (the PostgreSQL path runs in integration)."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select, update

from app.models import Job, TrajectoryPoint
from bench.common.wait import wait_until
from solvers.observer import IterationRecord
from worker.persistence import PersistingObserver


@pytest.fixture
def sessions(dataset_db):
    with dataset_db() as s, s.begin():
        s.add(Job(id="j", owner="t", dataset_id="d", spec={}, progress={}))
    return dataset_db


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
    wait_until(lambda: rows(sessions) >= 300, 5, 0.02, lambda: f"300 rows written ({rows(sessions)})")
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
    assert wait_until(obs.should_stop, 5, 0.02, "the cancel request seen") == "cancelled"
    obs.close()

    broken = PersistingObserver("j", sessions, flush_s=0.02)
    broken.on_start({"max_iterations": 10})
    broken.on_iteration(record(1))  # iteration 1 again: the primary key refuses the duplicate row
    wait_until(lambda: broken._error is not None, 5, 0.02, "the writer thread's error")
    with pytest.raises(Exception, match="UNIQUE|IntegrityError|unique"):
        broken.on_iteration(record(2))


def test_a_superseded_start_writes_nothing(sessions, tmp_path):
    """Fencing: once another start holds the job (``starts`` moved on), this start's next write — rows,
    heartbeat, checkpoint reference — is refused as a whole and the checkpoint file it could not name is removed;
    the one the job still names stays (a later start may resume from it)."""
    from solvers import checkpoint as ckpt
    from worker.persistence import StaleAttempt

    with sessions() as s, s.begin():
        s.execute(update(Job).values(status="running", starts=1, attempts=1))
    from app.core.blobstore.local import LocalStore

    obs = PersistingObserver("j", sessions, flush_s=60, fence=1, checkpoint_key=lambda i: f"j.1.{i}.safetensors",
                             store=LocalStore(tmp_path))
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
    assert not (tmp_path / "j.1.2.safetensors").exists() and rows(sessions) == 1
    assert (tmp_path / "j.1.1.safetensors").exists()  # still named by the job
    with sessions() as s:
        assert s.get(Job, "j").progress["checkpoint_iteration"] == 1
    with pytest.raises(StaleAttempt):
        obs.close()
    setup = PersistingObserver("j", sessions, fence=1)  # in set-up too: the heartbeat poll is fenced
    with pytest.raises(StaleAttempt):
        setup.should_stop()


def test_a_cancel_request_is_seen_during_set_up_before_the_writer_starts(sessions):
    """Set-up (before ``on_start``) has no writer thread: ``should_stop`` reads the flag and beats the heartbeat."""
    obs = PersistingObserver("j", sessions)
    assert obs.should_stop() is None
    with sessions() as s, s.begin():
        s.execute(update(Job).where(Job.id == "j").values(cancel_requested=True))
    obs._polled_at = float("-inf")  # the next poll is due (polls are at most once a second)
    assert obs.should_stop() == "cancelled"
    with sessions() as s:
        assert s.get(Job, "j").heartbeat_at is not None


def test_a_start_stopped_between_storing_and_naming_a_checkpoint_leaves_the_named_one(sessions, tmp_path,
                                                                                      monkeypatch):
    """A start paused or killed after storing checkpoint 2 but before the job names it: the job still names
    checkpoint 1, and that file is still there with iteration 1, so the next start resumes from it instead of
    starting over (one key per checkpoint; the named one is removed only after its successor is named)."""
    from app.core.blobstore.local import LocalStore
    from solvers import checkpoint as ckpt
    from app.jobs import lifecycle

    store = LocalStore(tmp_path)
    monkeypatch.setattr(lifecycle, "blobs", lambda: store)
    with sessions() as s, s.begin():
        s.execute(update(Job).values(status="running", starts=1, attempts=1))
    obs = PersistingObserver("j", sessions, flush_s=60, fence=1,
                             checkpoint_key=lambda i: lifecycle.checkpoint_key("j", 1, i), store=store)
    obs.on_start({"max_iterations": 10})
    obs.on_iteration(record(1))
    obs.on_checkpoint(ckpt.Checkpoint(iteration=1, samples_seen=10, elapsed_s=0.1))
    obs.on_iteration(record(2))

    def killed() -> None:
        raise KeyboardInterrupt("the process stopped here")
    monkeypatch.setattr(obs, "flush", killed)
    with pytest.raises(KeyboardInterrupt):
        obs.on_checkpoint(ckpt.Checkpoint(iteration=2, samples_seen=20, elapsed_s=0.2))
    with sessions() as s:
        job = s.get(Job, "j")
        assert job.progress["checkpoint_iteration"] == 1
        saved = lifecycle.saved_checkpoint(job)
    assert saved is not None and saved.iteration == 1


def test_a_named_checkpoint_replaces_the_one_before(sessions, tmp_path):
    """Once checkpoint 2 is named, checkpoint 1's file is removed: a start keeps one named file (plus at most
    one being written)."""
    from app.core.blobstore.local import LocalStore
    from solvers import checkpoint as ckpt

    with sessions() as s, s.begin():
        s.execute(update(Job).values(status="running", starts=1, attempts=1))
    obs = PersistingObserver("j", sessions, flush_s=60, fence=1, checkpoint_key=lambda i: f"j.1.{i}.safetensors",
                             store=LocalStore(tmp_path))
    obs.on_start({"max_iterations": 10})
    for i in (1, 2):
        obs.on_iteration(record(i))
        obs.on_checkpoint(ckpt.Checkpoint(iteration=i, samples_seen=10 * i, elapsed_s=0.1 * i))
    assert sorted(p.name for p in tmp_path.glob("j.1.*")) == ["j.1.2.safetensors"]
    with sessions() as s:
        assert s.get(Job, "j").progress["checkpoint_iteration"] == 2
    obs.close()

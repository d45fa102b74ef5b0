"""Turns solver callbacks into batched trajectory writes, progress and cancellation.

The solver calls :meth:`on_iteration` for every iterate, which only appends a row
to a buffer. A writer thread takes the buffer every ``flush_s`` seconds (sooner
when ``flush_rows`` rows wait) and writes it with one multi-row INSERT, together
with the job's progress and heartbeat, and reads the job's cancel flag at the same
moment. The hot loop therefore never waits on the database. :meth:`close` stops
the thread and writes what is left; a write error is raised in the solver's
thread at its next iteration (the job then fails with it).

Every ``checkpoint_every_s`` seconds the solver hands over its whole state
(:mod:`solvers.checkpoint`); the observer stores it as a new object (``checkpoint_key(iteration)`` in ``store``,
:mod:`app.core.blobstore`: a file written atomically, or an object any host can read), then names it in the job's
progress together with every buffered row up to it (one write), and only then removes the checkpoint it named
before. A start paused or killed between the two steps leaves the job naming the previous checkpoint, which is
still there. A redelivered job resumes from the named one (``worker.tasks``), on this host or another.

Fencing: an observer made with ``fence`` = the job's ``starts`` when this start began writes only while the
job is still ``running`` under that start (``UPDATE jobs ... WHERE starts = :fence AND status = 'running'``,
first statement of every write transaction, so the rows of a fenced write are never inserted). A start that
lost the job (re-queued by the reaper and started again elsewhere) gets :class:`StaleAttempt` at its next
write and in the solver's thread at its next iteration. Its checkpoints go to a file of its own start, named
in the job's progress (``checkpoint_start``, ``checkpoint_iteration``) by the same guarded write: a stale
start can neither replace nor remove the checkpoint another start resumes from.

``exact_every`` (``FAIRSOLVE_EXACT_TRACE_EVERY``) asks the solver for the exact constraint values every
that many iterations; they are stored in the row's ``exact`` column (None on other rows).
"""

from __future__ import annotations

import threading
import time
from array import array
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session, sessionmaker

from app.jobs.lifecycle import StaleAttempt
from app.models import Job, TrajectoryPoint, utcnow
from solvers import checkpoint as ckpt
from solvers.observer import IterationRecord, Observer

if TYPE_CHECKING:
    from app.core.blobstore import BlobStore


class PersistingObserver(Observer):
    def __init__(self, job_id: str, sessions: sessionmaker[Session], *, flush_s: float = 1.0,
                 flush_rows: int = 1000, checkpoint_key: Callable[[int], str] | None = None,
                 store: BlobStore | None = None,
                 checkpoint_every_s: float = 30.0,
                 resumed_from: int = 0, exact_every: int = 0, fence: int | None = None,
                 checkpoint_start: int | None = None) -> None:
        self.job_id = job_id
        self.sessions = sessions
        self.flush_s = flush_s
        self.flush_rows = flush_rows
        self.exact_every = exact_every
        self.max_iterations = 0
        self.constraint_names: list[str] = []
        self.device: str | None = None
        self.buffer: list[dict[str, Any]] = []
        self.last: IterationRecord | None = None
        self._stop: str | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = False
        self._error: BaseException | None = None
        self._writer: threading.Thread | None = None
        self.rows_written = 0
        self.busy_s = 0.0  # time the solver spent inside this observer (the persistence overhead)
        self.objectives, self.violations = array("d"), array("d")
        self.first_iteration_at: float | None = None  # wall clock (epoch s) of the first and last iterate
        self.last_iteration_at: float | None = None
        # checkpoint_key(iteration): where this start stores the checkpoint it takes after that iteration
        self.checkpoint_key, self.store, self.checkpoint_every_s = checkpoint_key, store, checkpoint_every_s
        self._named_key: str | None = None  # this start's checkpoint the job names (removed when superseded)
        self.checkpoint_iteration = self.resumed_from = resumed_from
        self.fence, self.checkpoint_start = fence, checkpoint_start  # the start writing; the start whose file
        self._flush_lock = threading.Lock()  # one write at a time: progress and rows committed in order
        self._last_checkpoint = time.monotonic()
        self._polled_at = -float("inf")

    def on_start(self, info: dict) -> None:
        self.max_iterations = int(info.get("max_iterations", 0))
        self.constraint_names = list(info.get("constraint_names", []))
        self.device = info.get("device")
        self._writer = threading.Thread(target=self._write_loop, name=f"trajectory-{self.job_id}", daemon=True)
        self._writer.start()

    def on_iteration(self, record: IterationRecord) -> None:
        entered = time.perf_counter()
        if self._error is not None:
            raise self._error
        row = {"job_id": self.job_id, "iteration": record.iteration, "elapsed_s": record.elapsed_s,
               "samples_seen": record.samples_seen, "objective": record.objective,
               "max_violation": record.max_violation, "constraints": list(record.constraints),
               "duals": record.duals, "exact": record.exact}
        with self._lock:
            self.buffer.append(row)
            self.last = record
            waiting = len(self.buffer)
        self.objectives.append(record.objective)
        self.violations.append(record.max_violation)
        self.last_iteration_at = time.time()
        if self.first_iteration_at is None:
            self.first_iteration_at = self.last_iteration_at
        if waiting >= self.flush_rows:
            self._wake.set()
        self.busy_s += time.perf_counter() - entered

    def exact_trace_every(self) -> int:
        return self.exact_every

    def should_stop(self) -> str | None:
        if self._writer is None:  # set-up (no writer thread yet): read the cancel flag ourselves
            self._poll_in_setup()
        return self._stop

    def _poll_in_setup(self, every_s: float = 1.0) -> None:
        """Before the first iteration: beat the heartbeat and read the cancel flag, at most every ``every_s``."""
        now = time.monotonic()
        if now - self._polled_at < every_s:
            return
        self._polled_at = now
        with self.sessions() as session, session.begin():
            self._write_job(session, heartbeat_at=utcnow())
            if session.scalar(select(Job.cancel_requested).where(Job.id == self.job_id)):
                self._stop = "cancelled"

    def _write_job(self, session: Session, **values) -> None:
        """The fenced UPDATE of the job row (the first statement of every write); :class:`StaleAttempt` when
        another start holds the job."""
        owned = Job.id == self.job_id
        if self.fence is not None:
            owned &= (Job.starts == self.fence) & (Job.status == "running")
        written = session.execute(update(Job).where(owned).values(**values))
        if self.fence is not None and written.rowcount != 1:
            raise StaleAttempt(f"job {self.job_id}: start {self.fence} was superseded")

    def checkpoint_due(self) -> bool:
        return self.checkpoint_key is not None and time.monotonic() - self._last_checkpoint >= self.checkpoint_every_s

    def on_checkpoint(self, checkpoint: ckpt.Checkpoint) -> None:
        """Save this start's file, then name it in the job with every iterate up to it (one guarded write)."""
        key = self.checkpoint_key(checkpoint.iteration)
        staged = self.store.staging(key)
        ckpt.save(staged, checkpoint)
        self.store.put(key, staged)
        with self._lock:
            self.checkpoint_iteration, self.checkpoint_start = checkpoint.iteration, self.fence
        try:
            self.flush()
        except StaleAttempt:
            self.store.delete(key)  # never named: nobody resumes from it
            raise
        if self._named_key is not None and self._named_key != key:
            self.store.delete(self._named_key)  # no longer named: the job resumes from ``key`` now
        self._named_key = key
        self._last_checkpoint = time.monotonic()

    def _write_loop(self) -> None:
        while not self._closing:
            self._wake.wait(self.flush_s)
            self._wake.clear()
            if self._closing:
                break
            try:
                self.flush()
            except BaseException as exc:  # surfaced in the solver's thread
                self._error = exc
                return

    def close(self) -> None:
        """Stop the writer thread and write every remaining row (call once the solve has ended)."""
        self._closing = True
        self._wake.set()
        if self._writer is not None:
            self._writer.join()
        self.flush()

    def flush(self) -> None:
        """Write buffered rows and progress in one transaction; pick up a cancel request."""
        with self._flush_lock:
            with self._lock:
                rows, self.buffer = self.buffer, []
                progress = self.progress()
            with self.sessions() as session, session.begin():
                self._write_job(session, progress=progress, heartbeat_at=utcnow())
                if rows:
                    session.execute(insert(TrajectoryPoint), rows)
                if session.scalar(select(Job.cancel_requested).where(Job.id == self.job_id)):
                    self._stop = "cancelled"
            self.rows_written += len(rows)

    def progress(self) -> dict[str, Any]:
        last = self.last
        return {"iteration": last.iteration if last else 0, "max_iterations": self.max_iterations,
                "elapsed_s": round(last.elapsed_s, 4) if last else 0.0,
                "samples_seen": last.samples_seen if last else 0,
                "constraint_names": self.constraint_names, "device": self.device,
                "first_iteration_at": self.first_iteration_at, "last_iteration_at": self.last_iteration_at,
                "checkpoint_iteration": self.checkpoint_iteration, "checkpoint_start": self.checkpoint_start,
                "resumed_from": self.resumed_from}

    def iterations_to_target(self, vtol: float = 1e-3, rtol: float = 1e-3) -> int | None:
        """First iteration k from which on max_violation ≤ vtol and |F_k − F_final| ≤ rtol·max(1, |F_final|):
        the iterations a run needed to settle (compares cold and warm starts); None after a resume."""
        if not self.objectives or self.resumed_from:
            return None
        obj, viol = np.frombuffer(self.objectives), np.frombuffer(self.violations)
        ok = (viol <= vtol) & (np.abs(obj - obj[-1]) <= rtol * max(1.0, abs(obj[-1])))
        bad = np.flatnonzero(~ok)
        if bad.size == 0:
            return 1
        return int(bad[-1]) + 2 if bad[-1] + 1 < ok.size else None

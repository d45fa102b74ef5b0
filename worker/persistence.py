"""Turns solver callbacks into batched trajectory writes, progress and cancellation.

The solver calls :meth:`on_iteration` for every iterate; rows are buffered and
written with one multi-row INSERT every ``flush_s`` seconds (or ``flush_rows``
rows), together with the job's progress, and the job's cancel flag is read at the
same moment. The hot loop therefore never waits on the database.
"""

from __future__ import annotations

import time
from array import array
from typing import Any

import numpy as np

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session, sessionmaker

from app.models import Job, TrajectoryPoint, utcnow
from solvers.observer import IterationRecord, Observer


class PersistingObserver(Observer):
    def __init__(self, job_id: str, sessions: sessionmaker[Session], *, flush_s: float = 1.0,
                 flush_rows: int = 1000) -> None:
        self.job_id = job_id
        self.sessions = sessions
        self.flush_s = flush_s
        self.flush_rows = flush_rows
        self.max_iterations = 0
        self.constraint_names: list[str] = []
        self.device: str | None = None
        self.buffer: list[dict[str, Any]] = []
        self.last: IterationRecord | None = None
        self._last_flush = time.monotonic()
        self._stop: str | None = None
        self.rows_written = 0
        self.busy_s = 0.0  # time the solver spent inside this observer (the persistence overhead)
        self.objectives, self.violations = array("d"), array("d")
        self.first_iteration_at: float | None = None  # wall clock (epoch s) of the first and last iterate
        self.last_iteration_at: float | None = None

    def on_start(self, info: dict) -> None:
        self.max_iterations = int(info.get("max_iterations", 0))
        self.constraint_names = list(info.get("constraint_names", []))
        self.device = info.get("device")

    def on_iteration(self, record: IterationRecord) -> None:
        entered = time.perf_counter()
        self.buffer.append({
            "job_id": self.job_id, "iteration": record.iteration, "elapsed_s": record.elapsed_s,
            "samples_seen": record.samples_seen, "objective": record.objective,
            "max_violation": record.max_violation, "constraints": list(record.constraints),
            "duals": record.duals,
        })
        self.last = record
        self.objectives.append(record.objective)
        self.violations.append(record.max_violation)
        self.last_iteration_at = time.time()
        if self.first_iteration_at is None:
            self.first_iteration_at = self.last_iteration_at
        if len(self.buffer) >= self.flush_rows or time.monotonic() - self._last_flush >= self.flush_s:
            self.flush()
        self.busy_s += time.perf_counter() - entered

    def should_stop(self) -> str | None:
        return self._stop

    def flush(self) -> None:
        """Write buffered rows and progress in one transaction; pick up a cancel request."""
        self._last_flush = time.monotonic()
        with self.sessions() as session, session.begin():
            if self.buffer:
                session.execute(insert(TrajectoryPoint), self.buffer)
                self.rows_written += len(self.buffer)
                self.buffer = []
            session.execute(update(Job).where(Job.id == self.job_id)
                            .values(progress=self.progress(), heartbeat_at=utcnow()))
            if session.scalar(select(Job.cancel_requested).where(Job.id == self.job_id)):
                self._stop = "cancelled"

    def progress(self) -> dict[str, Any]:
        last = self.last
        return {"iteration": last.iteration if last else 0, "max_iterations": self.max_iterations,
                "elapsed_s": round(last.elapsed_s, 4) if last else 0.0,
                "samples_seen": last.samples_seen if last else 0,
                "constraint_names": self.constraint_names, "device": self.device,
                "first_iteration_at": self.first_iteration_at, "last_iteration_at": self.last_iteration_at}

    def iterations_to_target(self, vtol: float = 1e-3, rtol: float = 1e-3) -> int | None:
        """First iteration k from which on max_violation ≤ vtol and |F_k − F_final| ≤ rtol·max(1, |F_final|):
        the iterations a run needed to settle (compares cold and warm starts)."""
        if not self.objectives:
            return None
        obj, viol = np.frombuffer(self.objectives), np.frombuffer(self.violations)
        ok = (viol <= vtol) & (np.abs(obj - obj[-1]) <= rtol * max(1.0, abs(obj[-1])))
        bad = np.flatnonzero(~ok)
        if bad.size == 0:
            return 1
        return int(bad[-1]) + 2 if bad[-1] + 1 < ok.size else None

"""The heartbeat of a running audit run.

While ``run_audit`` works (reading the data, scoring, the metrics), a daemon thread writes
``audit_runs.heartbeat_at = now`` every ``every_s`` seconds, guarded by ``status = 'running'`` so a finished or
failed run is never touched. The lost-run sweep (``worker.audits.fail_lost_runs``) fails a run only when its
last sign of life, the heartbeat or else its start, is older than ``FAIRSOLVE_STALE_AFTER_S``: a live run of any
length is never "worker lost", and a run whose worker died is found one stale period after its last beat.
The beat interval is a quarter of the stale period (at most 15 s), so three beats in a row must be missed.
A failed beat (database briefly away) is logged and retried at the next interval, never raised into the run.
"""
from __future__ import annotations

import logging
import threading

from sqlalchemy import update

from app.db import session_scope
from app.models import AuditRun, utcnow

log = logging.getLogger(__name__)


def beat_interval(stale_after_s: float) -> float:
    """Seconds between beats: a quarter of the stale period, at most 15 s."""
    return min(stale_after_s / 4, 15.0)


def beat(run_id: str) -> bool:
    """One beat; False when the run is no longer running."""
    with session_scope() as s:
        return s.execute(update(AuditRun).where(AuditRun.id == run_id, AuditRun.status == "running")
                         .values(heartbeat_at=utcnow())).rowcount == 1


class Heartbeat:
    """``with Heartbeat(run_id, every_s):`` beats on a daemon thread until the block ends (module docstring)."""

    def __init__(self, run_id: str, every_s: float) -> None:
        self.run_id, self.every_s = run_id, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"audit-heartbeat-{run_id}", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                if not beat(self.run_id):
                    return
            except Exception as exc:  # the next beat retries; the run itself goes on
                log.warning("audit run %s: heartbeat failed: %s", self.run_id, exc)

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

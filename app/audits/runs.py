"""Audit runs and their delivery to the worker (shared by the API's "run now" and the beat trigger)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from app.models import Audit, AuditRun, new_id, utcnow

from .schedule import next_run

RUN_AUDIT = "fairsolve.run_audit"
DELIVER_ALERT = "fairsolve.deliver_alert"


def new_run(audit: Audit | None = None, *, audit_id: str | None = None, owner: str | None = None,
            trigger: str = "manual") -> AuditRun:
    """A queued run of ``audit`` (or of ``audit_id`` / ``owner``), not yet sent."""
    return AuditRun(id=new_id(), owner=owner or audit.owner, audit_id=audit_id or audit.id, trigger=trigger,
                    status="queued", created_at=utcnow())


def next_run_at(schedule: str | None, enabled: bool, after: datetime | None = None) -> datetime | None:
    """When a scheduled, enabled audit runs next (None: never by itself)."""
    return next_run(schedule, after or utcnow()) if schedule and enabled else None


def send_run(run_id: str) -> None:
    from worker.celery_app import celery_app

    celery_app.send_task(RUN_AUDIT, args=[run_id], queue="cpu", task_id=f"audit-run-{run_id}")


def send_alert(alert_id: str) -> None:
    from worker.celery_app import celery_app

    celery_app.send_task(DELIVER_ALERT, args=[alert_id], queue="cpu")


def start_run(db: Session, run: AuditRun) -> None:
    """Commit ``run`` and send it; a broker failure fails the run and is raised."""
    db.add(run)
    db.commit()
    try:
        send_run(run.id)
    except Exception as exc:
        run.status, run.error, run.finished_at = "failed", f"broker unavailable: {exc}", utcnow()
        db.commit()
        raise

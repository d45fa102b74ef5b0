"""Audit runs and their delivery to the worker (shared by the API's "run now" and the beat trigger).

Runs and their alerts' webhooks go to the ``audits`` queue (:data:`AUDIT_QUEUE`), consumed by workers of their
own, so audits never hold a job's worker slot nor wait behind jobs; one owner has at most
``FAIRSOLVE_MAX_ACTIVE_AUDIT_RUNS`` runs queued or running at once (:func:`active_runs`)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import Audit, AuditRun, new_id, utcnow

from .schedule import next_run

RUN_AUDIT = "fairsolve.run_audit"
AUDIT_QUEUE = "audits"
ACTIVE = ("queued", "running")
DELIVER_ALERT = "fairsolve.deliver_alert"


def new_run(audit: Audit | None = None, *, audit_id: str | None = None, owner: str | None = None,
            trigger: str = "manual") -> AuditRun:
    """A queued run of ``audit`` (or of ``audit_id`` / ``owner``), not yet sent."""
    return AuditRun(id=new_id(), owner=owner or audit.owner, audit_id=audit_id or audit.id, trigger=trigger,
                    status="queued", created_at=utcnow())


def next_run_at(schedule: str | None, enabled: bool, after: datetime | None = None) -> datetime | None:
    """When a scheduled, enabled audit runs next (None: never by itself)."""
    return next_run(schedule, after or utcnow()) if schedule and enabled else None


def active_runs(db: Session, owner: str) -> int:
    """The owner's audit runs queued or running."""
    return db.scalar(select(func.count()).select_from(AuditRun).where(AuditRun.owner == owner,
                                                                      AuditRun.status.in_(ACTIVE)))


def send_run(run_id: str) -> None:
    from app.core.celery import celery_app

    celery_app.send_task(RUN_AUDIT, args=[run_id], queue=AUDIT_QUEUE, task_id=f"audit-run-{run_id}")


def send_alert(alert_id: str) -> None:
    from app.core.celery import celery_app

    celery_app.send_task(DELIVER_ALERT, args=[alert_id], queue=AUDIT_QUEUE)


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

"""Celery tasks of scheduled audits: each calls :mod:`app.audits.lifecycle`, where an audit reads top-down from
its schedule to its alert (the computation in the run's child process is :mod:`app.audits.compute`).

* ``trigger_due_audits`` (Celery beat) is :func:`~app.audits.lifecycle.trigger_due` (with the lost-run sweep,
  :func:`~app.audits.lifecycle.requeue_lost_runs`);
* ``run_audit(run_id)`` (queue ``audits``) is :func:`~app.audits.lifecycle.run`; Celery's ``time_limit`` is the last
  resort should the worker itself hang;
* ``deliver_alert(alert_id)`` is :func:`~app.audits.lifecycle.deliver` under Celery's autoretry (exponential
  back-off from ``FAIRSOLVE_AUDIT_WEBHOOK_BACKOFF_S``, capped at 600 s, at most ``FAIRSOLVE_AUDIT_WEBHOOK_RETRIES``).
"""

from __future__ import annotations

from app.audits.lifecycle import WebhookFailed, deliver, run, trigger_due
from app.core.settings import get_settings
from worker.celery_app import celery_app

settings = get_settings()


@celery_app.task(name="fairsolve.trigger_due_audits")
def trigger_due_audits() -> list[str]:
    """Claim every due audit once and send its run (:func:`app.audits.lifecycle.trigger_due`)."""
    return trigger_due()


@celery_app.task(name="fairsolve.run_audit", time_limit=settings.audit_time_limit_s + 120)
def run_audit(run_id: str) -> str:
    """Claim, compute and store the run as one start (:func:`app.audits.lifecycle.run`)."""
    return run(run_id)


@celery_app.task(name="fairsolve.deliver_alert", bind=True, autoretry_for=(WebhookFailed,),
                 retry_backoff=settings.audit_webhook_backoff_s, retry_backoff_max=600, retry_jitter=False,
                 max_retries=settings.audit_webhook_retries)
def deliver_alert(self, alert_id: str) -> str:
    """POST the alert to its webhook (:func:`app.audits.lifecycle.deliver`); this retry is the last one when
    Celery's retries are spent."""
    return deliver(alert_id, final=self.request.retries >= self.max_retries)

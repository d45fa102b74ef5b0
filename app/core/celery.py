"""The Celery application, as the API and the CLI see it: a sender of tasks by name.

Everything that decides where and how a task is delivered lives here, so ``app`` sends without importing
``worker`` (and the training stack behind it). ``worker.celery_app`` is the same object with the task modules
registered and the worker-process signals connected: ``celery -A worker.celery_app`` runs it.

Delivery is at-least-once: tasks are acknowledged after they finish
(``task_acks_late``) and given back to the broker when the worker process dies
(``task_reject_on_worker_lost``); a worker takes one task at a time. Job state
lives in the database, not in Celery's result backend, so no backend is configured.
Queues: ``cpu`` (default) and ``gpu`` (jobs with ``device: "cuda"``), ``audits`` (audit runs and their webhooks,
:mod:`app.audits.runs`), and ``housekeeping`` for beat's periodic
tasks (the reaper of stale jobs, the re-sender of lost jobs, the audit trigger): a worker of its own consumes it, so a long job never
holds them up (``make run``'s launcher and docker-compose start one).
"""

from __future__ import annotations

from celery import Celery

from app.core import broker_bell  # noqa: F401  (registers the embedded broker's transport, ``sqlabell+sqlite``)
from app.core.settings import get_settings

settings = get_settings()
HOUSEKEEPING_QUEUE = "housekeeping"

BEAT_SCHEDULE = {
    "reap-stale-jobs": {"task": "fairsolve.reap_stale_jobs", "schedule": settings.reap_every_s},
    "resend-lost-jobs": {"task": "fairsolve.resend_lost_jobs", "schedule": settings.resend_every_s},
    "trigger-due-audits": {"task": "fairsolve.trigger_due_audits", "schedule": settings.audit_trigger_every_s},
}

celery_app = Celery("fairsolve", broker=settings.broker_url)
celery_app.conf.update(
    task_default_queue="cpu",
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    task_ignore_result=True,
    worker_prefetch_multiplier=1,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
    broker_transport_options=settings.broker_transport_options,  # visibility timeout, key prefix
    timezone="UTC",
    enable_utc=True,
    beat_schedule=BEAT_SCHEDULE,
    task_routes={entry["task"]: {"queue": HOUSEKEEPING_QUEUE} for entry in BEAT_SCHEDULE.values()},  # every beat task
)

QUEUE_FOR_DEVICE = {"cuda": "gpu", "cpu": "cpu", "auto": "cpu"}

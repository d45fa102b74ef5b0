"""The Celery application.

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

import os

from celery import Celery
from celery.signals import setup_logging, worker_process_init

from app.settings import get_settings
from worker import broker_bell  # noqa: F401  (registers the embedded broker's transport, ``sqlabell+sqlite``)

settings = get_settings()
HOUSEKEEPING_QUEUE = "housekeeping"

BEAT_SCHEDULE = {
    "reap-stale-jobs": {"task": "fairsolve.reap_stale_jobs", "schedule": settings.reap_every_s},
    "resend-lost-jobs": {"task": "fairsolve.resend_lost_jobs", "schedule": settings.resend_every_s},
    "trigger-due-audits": {"task": "fairsolve.trigger_due_audits", "schedule": settings.audit_trigger_every_s},
}

celery_app = Celery("fairsolve", broker=settings.broker_url,
                    include=["worker.tasks", "worker.audits", "worker.baselines"])
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


@setup_logging.connect
def _structured_logs(**_) -> None:
    """Workers and beat log like the API (JSON lines with the job id; see ``app.observability``)."""
    from app.observability import configure_logging

    configure_logging(settings.log_format, settings.log_level)


@worker_process_init.connect
def _bounded_heap(**_) -> None:
    """Large temporaries are mapped and unmapped, so a job's peak does not keep its freed blocks (``worker.heap``)."""
    from worker.heap import fix_mmap_threshold

    fix_mmap_threshold()


@worker_process_init.connect
def _share_cores(**_) -> None:
    """Each pool process gets cores / concurrency torch threads: oversubscribed threads thrash. Solver
    processes also lower their priority by ``FAIRSOLVE_WORKER_NICE``: where the API and workers share
    cores, requests are answered first and training takes the rest (no effect on a dedicated machine)."""
    import torch

    if settings.worker_nice:
        os.nice(settings.worker_nice)
    concurrency = celery_app.conf.worker_concurrency or os.cpu_count() or 1
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // concurrency))

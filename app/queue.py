"""Sending work to Celery by task name, so the API process never imports the training stack."""

from __future__ import annotations

from app.models import Job
from worker.celery_app import QUEUE_FOR_DEVICE, celery_app

RUN_JOB = "fairsolve.run_job"


def queue_for(device: str) -> str:
    return QUEUE_FOR_DEVICE[device]


def send_job(job_id: str, queue: str, attempt: int = 1) -> None:
    """Send attempt ``attempt`` of a job (see ``worker.tasks`` for the delivery rules)."""
    celery_app.send_task(RUN_JOB, args=[job_id, attempt], queue=queue, task_id=f"{job_id}-{attempt}")


def enqueue_job(job: Job) -> None:
    send_job(job.id, job.queue)

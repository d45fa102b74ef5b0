"""Sending work to Celery by task name, so the API process never imports the training stack."""

from __future__ import annotations

from app.models import Job
from worker.celery_app import QUEUE_FOR_DEVICE, celery_app

RUN_JOB = "fairsolve.run_job"


def queue_for(device: str) -> str:
    return QUEUE_FOR_DEVICE[device]


def enqueue_job(job: Job) -> None:
    """The Celery task id is the job id, so a job is never queued under two ids."""
    celery_app.send_task(RUN_JOB, args=[job.id], queue=job.queue, task_id=job.id)

"""Sending work to Celery by task name, so the API process never imports the training stack.

The job row is the outbox: a route commits the job ``queued`` (its ``dispatched_at`` set), then sends its
message. A send that fails leaves the job queued and the request answered as stored (202: the job will run);
beat's ``resend_lost_jobs`` (``worker.tasks``) sends again every queued job whose message is in no queue of
the broker once ``FAIRSOLVE_RESEND_GRACE_S`` has passed since it was committed for sending.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from app.models import Job
from app.core.celery import QUEUE_FOR_DEVICE, celery_app

RUN_JOB = "fairsolve.run_job"
log = logging.getLogger(__name__)


def queue_for(device: str) -> str:
    return QUEUE_FOR_DEVICE[device]


def task_id(job_id: str, attempt: int) -> str:
    """The Celery task id of a job's attempt (how the reconciler finds its message in the broker)."""
    return f"{job_id}-{attempt}"


def send_job(job_id: str, queue: str, attempt: int = 1) -> None:
    """Send attempt ``attempt`` of a job (see ``worker.tasks`` for the delivery rules)."""
    celery_app.send_task(RUN_JOB, args=[job_id, attempt], queue=queue, task_id=task_id(job_id, attempt))


def dispatch(jobs: Iterable[Job]) -> bool:
    """Send the first attempt of committed ``queued`` jobs; stop at the first failure (the broker is unreachable:
    each further send would wait for its retries too) and leave the rest to the reconciler. True when all sent."""
    for job in jobs:
        try:
            send_job(job.id, job.queue)
        except Exception as exc:  # kombu raises its own and socket errors alike
            log.warning("broker unavailable (%s): job %s and the rest stay queued until it is back", exc, job.id)
            return False
    return True

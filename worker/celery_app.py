"""The Celery application of the worker processes: ``app.core.celery``'s, with the tasks and process signals.

``celery -A worker.celery_app worker|beat`` loads this module: it registers the task modules (``worker.tasks``,
``worker.audits``, ``worker.baselines``) and connects the signals that set up a pool process (logs, heap, threads).
The API sends through ``app.core.celery`` and never imports this module. Beat sends its schedule's tasks by name
and runs none, so under ``celery beat`` the task modules (torch, pandas, the solvers) are not imported: beat starts
in about a second with a fraction of a worker's memory.
"""

from __future__ import annotations

import os
import sys

from celery.signals import setup_logging, worker_process_init

from app.core.celery import BEAT_SCHEDULE, HOUSEKEEPING_QUEUE, QUEUE_FOR_DEVICE, celery_app, settings

__all__ = ["BEAT_SCHEDULE", "HOUSEKEEPING_QUEUE", "QUEUE_FOR_DEVICE", "celery_app"]

TASK_MODULES = ["worker.tasks", "worker.audits", "worker.baselines"]
#: celery's subcommands; the first argument that is one of them is the one this process runs
SUBCOMMANDS = {"worker", "beat", "events", "inspect", "control", "call", "purge", "result", "shell", "status",
               "multi", "amqp", "migrate", "graph", "upgrade", "list", "report", "logtool"}


def celery_subcommand(argv: list[str]) -> str | None:
    """The celery subcommand of a command line (``celery -A worker.celery_app beat -s f`` → ``beat``), or None."""
    return next((arg for arg in argv[1:] if arg in SUBCOMMANDS), None)


if celery_subcommand(sys.argv) != "beat":
    celery_app.conf.include = TASK_MODULES


@setup_logging.connect
def _structured_logs(**_) -> None:
    """Workers and beat log like the API (JSON lines with the job id; see ``app.core.observability``)."""
    from app.core.observability import configure_logging

    configure_logging(settings.log_format, settings.log_level)


@worker_process_init.connect
def _bounded_heap(**_) -> None:
    """Large temporaries are mapped and unmapped, so a job's peak does not keep its freed blocks (``worker.heap``)."""
    from worker.heap import fix_mmap_threshold

    fix_mmap_threshold()


@worker_process_init.connect
def _share_cores(**_) -> None:
    """Each pool process gets cores / concurrency torch threads, and as many LightGBM fits at once
    (``solvers.models.gbdt.model.parallel_fits``): oversubscribed threads thrash. Solver
    processes also lower their priority by ``FAIRSOLVE_WORKER_NICE``: where the API and workers share
    cores, requests are answered first and training takes the rest (no effect on a dedicated machine)."""
    import torch

    if settings.worker_nice:
        os.nice(settings.worker_nice)
    concurrency = celery_app.conf.worker_concurrency or os.cpu_count() or 1
    share = max(1, (os.cpu_count() or 1) // concurrency)
    torch.set_num_threads(share)
    os.environ.setdefault("FAIRSOLVE_GBDT_PARALLEL_FITS", str(share))  # independent LightGBM fits of one job

"""The Celery application of the worker processes: ``app.core.celery``'s, with the tasks and process signals.

``celery -A worker.celery_app worker|beat`` loads this module: it registers the task modules (``worker.tasks``,
``worker.audits``, ``worker.baselines``) and connects the signals that set up a pool process (logs, heap, threads).
The API sends through ``app.core.celery`` and never imports this module. Beat sends its schedule's tasks by name
and runs none, so under ``celery beat`` the task modules (torch, pandas, the solvers) are not imported: beat starts
in about a second with a fraction of a worker's memory.
"""

from __future__ import annotations

import importlib
import os
import sys

from celery.signals import setup_logging, worker_process_init

from app.core.celery import BEAT_SCHEDULE, HOUSEKEEPING_QUEUE, QUEUE_FOR_DEVICE, celery_app, settings

__all__ = ["BEAT_SCHEDULE", "HOUSEKEEPING_QUEUE", "QUEUE_FOR_DEVICE", "celery_app"]

TASK_MODULES = ["worker.tasks", "worker.audits", "worker.baselines"]
#: celery's subcommands; the first argument that is one of them is the one this process runs
SUBCOMMANDS = {"worker", "beat", "events", "inspect", "control", "call", "purge", "result", "shell", "status",
               "multi", "amqp", "migrate", "graph", "upgrade", "list", "report", "logtool"}


#: what a job's first solve imports on first use (LightGBM; the gbdt, thresholds and auto solvers): imported by a
#: job worker's pool process as it starts (``_warm_for_jobs``)
WARM_MODULES = ("lightgbm", "solvers.auto", "solvers.algorithms.erm", "solvers.algorithms.boosting",
                "solvers.algorithms.group_thresholds", "solvers.models.gbdt.cross_fit",
                "solvers.fairness.threshold_margin", "solvers.constraints.demographic_parity")


def celery_subcommand(argv: list[str]) -> str | None:
    """The celery subcommand of a command line (``celery -A worker.celery_app beat -s f`` → ``beat``), or None."""
    return next((arg for arg in argv[1:] if arg in SUBCOMMANDS), None)


def consumed_queues(argv: list[str]) -> set[str] | None:
    """The queues a ``celery worker`` command line consumes (``-Q a,b``, ``-Qa``, ``--queues a``,
    ``--queues=a``), or None when it names none (then it consumes every queue)."""
    for i, arg in enumerate(argv):
        if arg in ("-Q", "--queues") and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--queues="):
            value = arg.split("=", 1)[1]
        elif arg.startswith("-Q") and len(arg) > 2:
            value = arg[2:]
        else:
            continue
        return {q.strip() for q in value.split(",") if q.strip()}
    return None


def serves_jobs(argv: list[str]) -> bool:
    """Whether a worker of this command line takes jobs (the ``cpu`` or ``gpu`` queue, or every queue)."""
    queues = consumed_queues(argv)
    return queues is None or bool(queues & set(QUEUE_FOR_DEVICE.values()))


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


@worker_process_init.connect
def _warm_for_jobs(**_) -> None:
    """A job worker's pool process does as it starts what its first job would otherwise do first: import
    :data:`WARM_MODULES`, make the database engine (the driver's import) and boost two trees on a few rows
    (LightGBM's threads), so that the first job takes about as long as the next. Audit and housekeeping
    workers skip it. Three fresh stacks each way (Adult, 20,000 rows, gbdt DP, POST → succeeded): the first job
    0.80 / 0.74 / 0.68 s against 0.88 / 0.79 / 0.85 s without, the next ones 0.53–0.67 s either way (the rest of
    the first job's extra is the API's and the worker's own first requests)."""
    if not serves_jobs(sys.argv):
        return
    import lightgbm
    import numpy as np

    from app.core.db import session_factory

    for name in WARM_MODULES:
        importlib.import_module(name)
    session_factory()
    rows = np.arange(64, dtype=np.float64).reshape(32, 2)
    lightgbm.train({"objective": "binary", "verbosity": -1, "min_data_in_leaf": 1, "min_data_in_bin": 1},
                   lightgbm.Dataset(rows, label=np.arange(32) % 2), num_boost_round=2)

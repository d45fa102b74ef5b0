"""Celery tasks. ``run_job`` is idempotent: a redelivered job restarts from a clean trajectory."""

from __future__ import annotations

import json
import logging
import socket
import traceback

import torch
from sqlalchemy import delete

from app.artifacts import write_artifacts
from app.db import session_factory, session_scope
from app.models import Artifact, Dataset, Job, TrajectoryPoint, utcnow
from app.settings import get_settings
from app.storage import load_table
from solvers import ProblemSpec, SpecError, run
from worker.celery_app import celery_app
from worker.persistence import PersistingObserver

log = logging.getLogger(__name__)
TERMINAL = {"succeeded", "failed", "cancelled"}


def problem_spec(job_spec: dict) -> ProblemSpec:
    return ProblemSpec.model_validate({k: v for k, v in job_spec.items() if k != "dataset_id"})


def _start(job_id: str) -> tuple[ProblemSpec, Dataset] | None:
    """Mark the job running (or cancelled if asked before start); None when there is nothing to do."""
    with session_scope() as s:
        job = s.get(Job, job_id, with_for_update=True)
        if job is None or job.status in TERMINAL:
            return None
        if job.cancel_requested:
            job.status, job.finished_at = "cancelled", utcnow()
            return None
        # A redelivery after a worker died: start again from a clean slate.
        s.execute(delete(TrajectoryPoint).where(TrajectoryPoint.job_id == job_id))
        s.execute(delete(Artifact).where(Artifact.job_id == job_id))
        job.status, job.started_at, job.attempts = "running", utcnow(), job.attempts + 1
        job.worker = f"{socket.gethostname()}"
        job.error = None
        dataset = s.get(Dataset, job.dataset_id)
        s.expunge(dataset)
        return problem_spec(job.spec), dataset


def _finish(job_id: str, **values) -> None:
    with session_scope() as s:
        job = s.get(Job, job_id)
        for key, value in values.items():
            setattr(job, key, value)
        job.finished_at = utcnow()


@celery_app.task(name="fairsolve.run_job", bind=True)
def run_job(self, job_id: str) -> str:
    started = _start(job_id)
    if started is None:
        return "skipped"
    spec, dataset = started
    settings = get_settings()
    observer = PersistingObserver(job_id, session_factory(), flush_s=settings.trajectory_flush_s,
                                  flush_rows=settings.trajectory_flush_rows)
    try:
        if spec.device == "cuda" and not torch.cuda.is_available():
            raise SpecError(("device",), f"CUDA was requested but worker {socket.gethostname()} has no GPU")
        path = settings.storage_dir / "datasets" / dataset.stored_name
        table = load_table(path, dataset.format, dataset.read_options, dataset.sha256)
        out = run(table, spec, observer)
        observer.flush()
    except SpecError as exc:
        observer.flush()
        _finish(job_id, status="failed", error=f"{'.'.join(map(str, exc.loc))}: {exc.msg}")
        return "failed"
    except Exception as exc:  # a solver error fails the job, never the worker
        log.error("job %s failed:\n%s", job_id, traceback.format_exc())
        try:
            observer.flush()
        except Exception:  # pragma: no cover - the original error matters more
            pass
        _finish(job_id, status="failed", error=f"{type(exc).__name__}: {exc}")
        return "failed"

    artifacts = write_artifacts(job_id, out.state_dict, out.predictions, metadata={
        "job_id": job_id, "model": json.dumps(spec.model.model_dump()),
        "feature_names": json.dumps(out.feature_names), "groups": json.dumps(out.groups)})
    status, error = "succeeded", None
    if out.stop_reason == "cancelled":
        status = "cancelled"
    elif out.stop_reason == "time_limit":
        status, error = "failed", f"time limit of {spec.time_limit_s} s reached after {out.iterations} iterations"
    result = {"iterations": out.iterations, "solver_time_s": out.solver_time_s, "stop_reason": out.stop_reason,
              "constraint_names": out.constraint_names, "tolerances": out.tolerances, "groups": out.groups,
              "n_features": len(out.feature_names), "trajectory_rows": observer.rows_written}
    with session_scope() as s:
        s.add_all(artifacts)
        job = s.get(Job, job_id)
        job.status, job.error, job.metrics, job.result = status, error, out.metrics, result
        job.device, job.finished_at, job.progress = out.device, utcnow(), observer.progress()
    return status

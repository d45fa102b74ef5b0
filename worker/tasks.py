"""Celery tasks.

Delivery rules of ``run_job(job_id, attempt)`` (at-least-once delivery made safe):

* a message carries the attempt it starts; a ``queued`` job accepts attempt n+1
  (n = starts so far), a ``running`` job accepts only its current attempt n again —
  the broker's redelivery after the worker running it died — and resumes from the
  job's last checkpoint (its trajectory cut back to the checkpoint's iteration), or from
  the start when it has none; any other message is a stale duplicate and is dropped;
* jobs waiting on a warm start (status ``waiting``) are released by their
  predecessor when it ends, with an atomic ``waiting → queued`` update, so each is
  sent once, whatever the redeliveries;
* ``reap_stale_jobs`` (Celery beat) re-queues ``running`` jobs whose heartbeat
  stopped (a worker killed without redelivery) as a new attempt.
"""

from __future__ import annotations

import json
import logging
import math
import socket
import traceback
from datetime import timedelta
from pathlib import Path

import torch
from safetensors.torch import load_file
from sqlalchemy import delete, select, update

from app.artifacts import artifact_path, write_artifacts
from app.baselines import ensure_baseline, send_baseline
from app.db import session_factory, session_scope
from app.models import Artifact, Dataset, Job, TrajectoryPoint, utcnow
from app.observability import job_id_var
from app.queue import send_job
from app.settings import get_settings
from app.storage import load_table
from solvers import ProblemSpec, SolverDiverged, SpecError, StoppedInSetup, run
from solvers import checkpoint as ckpt
from solvers.spec import job_problem_spec
from worker.celery_app import celery_app
from worker.persistence import PersistingObserver

log = logging.getLogger(__name__)
TERMINAL = {"succeeded", "failed", "cancelled"}


def problem_spec(job_spec: dict) -> ProblemSpec:
    return job_problem_spec(job_spec)


def checkpoint_path(job_id: str) -> Path:
    return get_settings().storage_dir / "checkpoints" / f"{job_id}.safetensors"


def _saved_checkpoint(job_id: str) -> ckpt.Checkpoint | None:
    path = checkpoint_path(job_id)
    if not path.exists():
        return None
    try:
        return ckpt.load(path)
    except Exception:  # a damaged file: start over rather than fail the job
        log.warning("job %s: unreadable checkpoint; restarting from iteration 0", job_id)
        return None


def _start(job_id: str, attempt: int) -> tuple[ProblemSpec, Dataset, dict | None, ckpt.Checkpoint | None] | None:
    """Mark the job running (or cancelled if asked before start); None when there is nothing to do.

    A job started again (redelivered, or re-queued by the reaper) resumes from its checkpoint when
    it has one: trajectory rows after the checkpoint's iteration are dropped, earlier ones kept."""
    with session_scope() as s:
        job = s.get(Job, job_id, with_for_update=True)
        if job is None or job.status in TERMINAL or job.status == "waiting":
            return None
        fresh = job.status == "queued" and attempt == job.attempts + 1
        redelivered = job.status == "running" and attempt == job.attempts
        if not (fresh or redelivered):
            log.info("job %s: dropping stale message (attempt %s, job %s at attempt %s)",
                     job_id, attempt, job.status, job.attempts)
            return None
        if job.cancel_requested:
            job.status, job.finished_at = "cancelled", utcnow()
            return None
        resume = _saved_checkpoint(job_id) if job.starts else None
        after = resume.iteration if resume is not None else 0
        s.execute(delete(TrajectoryPoint).where(TrajectoryPoint.job_id == job_id, TrajectoryPoint.iteration > after))
        s.execute(delete(Artifact).where(Artifact.job_id == job_id))
        job.status, job.started_at, job.attempts, job.heartbeat_at = "running", utcnow(), attempt, utcnow()
        job.starts += 1
        job.worker = f"{socket.gethostname()}"
        job.error = None
        dataset = s.get(Dataset, job.dataset_id)
        s.expunge(dataset)
        return problem_spec(job.spec), dataset, _warm_start_weights(s, job), resume


def _warm_start_weights(s, job: Job) -> dict | None:
    """The weights of the job this one warm-starts from, when that job produced them (else a cold start)."""
    if not job.warm_start_from:
        return None
    art = s.scalar(select(Artifact).where(Artifact.job_id == job.warm_start_from, Artifact.kind == "weights"))
    return load_file(str(artifact_path(art.stored_name))) if art is not None else None


def _finish(job_id: str, **values) -> None:
    with session_scope() as s:
        job = s.get(Job, job_id)
        for key, value in values.items():
            setattr(job, key, value)
        job.finished_at = utcnow()


@celery_app.task(name="fairsolve.run_job")
def run_job(job_id: str, attempt: int = 1) -> str:
    token = job_id_var.set(job_id)  # every log line of this job carries its id
    try:
        outcome = _run(job_id, attempt)
        if outcome != "skipped":
            checkpoint_path(job_id).unlink(missing_ok=True)  # the job ended: its checkpoint is spent
        return outcome
    finally:
        release_successors(job_id)
        job_id_var.reset(token)


def release_successors(job_id: str) -> None:
    """Queue the jobs that warm-start from ``job_id`` once it has ended (each exactly once)."""
    with session_scope() as s:
        if s.scalar(select(Job.status).where(Job.id == job_id)) not in TERMINAL:
            return
        waiting = list(s.scalars(select(Job.id).where(Job.warm_start_from == job_id, Job.status == "waiting")))
        released = [jid for jid in waiting if s.execute(
            update(Job).where(Job.id == jid, Job.status == "waiting").values(status="queued")).rowcount == 1]
    for jid in released:
        send_job(jid, queue_of(jid))


def queue_of(job_id: str) -> str:
    with session_scope() as s:
        return s.scalar(select(Job.queue).where(Job.id == job_id))


@celery_app.task(name="fairsolve.reap_stale_jobs")
def reap_stale_jobs() -> list[str]:
    """Re-queue running jobs whose heartbeat is older than ``FAIRSOLVE_STALE_AFTER_S`` as a new attempt,
    or fail them once ``FAIRSOLVE_MAX_ATTEMPTS`` starts were made."""
    settings = get_settings()
    cutoff = utcnow() - timedelta(seconds=settings.stale_after_s)
    requeued = []
    with session_scope() as s:
        stale = list(s.scalars(select(Job).where(Job.status == "running", Job.heartbeat_at < cutoff)))
        for job in stale:
            guard = (Job.id == job.id) & (Job.status == "running") & (Job.heartbeat_at < cutoff)
            if job.attempts >= settings.max_attempts:
                s.execute(update(Job).where(guard).values(
                    status="failed", finished_at=utcnow(),
                    error=f"worker lost: no heartbeat for {settings.stale_after_s:g} s after {job.attempts} attempts"))
            elif s.execute(update(Job).where(guard).values(status="queued")).rowcount == 1:
                requeued.append((job.id, job.queue, job.attempts + 1))
    for job_id, queue, attempt in requeued:
        log.warning("job %s: heartbeat lost; re-queued as attempt %s", job_id, attempt)
        send_job(job_id, queue, attempt)
    return [r[0] for r in requeued]


def json_ready(value):
    """``value`` with numpy scalars as Python numbers and non-finite floats as None (JSONB has no NaN)."""
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def promise_fields(out) -> dict:
    """What the job promised and what it kept: the exact fairness report per constraint, the warnings,
    how the exact constraint was enforced, the guarantee, and the candidates ``auto`` tried."""
    return json_ready({"fairness": out.fairness, "warnings": out.warnings, "enforcement": out.enforcement,
                       "guarantee": out.guarantee, "tried": out.tried})


def request_baseline(job_id: str) -> None:
    """Make sure the job's unconstrained baseline (:mod:`app.baselines`) exists or is being computed;
    a failure here is logged and never fails the job."""
    try:
        with session_scope() as s:
            job = s.get(Job, job_id)
            spec, device = dict(job.spec, dataset_id=job.dataset_id), job.spec.get("device", "cpu")
            baseline_id = ensure_baseline(s, spec, get_settings().stale_after_s)
        if baseline_id is not None:
            send_baseline(baseline_id, device)
    except Exception:
        log.warning("job %s: could not request its baseline:\n%s", job_id, traceback.format_exc())


def _run(job_id: str, attempt: int) -> str:
    started = _start(job_id, attempt)
    if started is None:
        return "skipped"
    spec, dataset, initial_state, resume = started
    resumed_from = resume.iteration if resume is not None else 0
    log.info("job started: solver %s, attempt %s%s", spec.solver.name, attempt,
             f", resuming after iteration {resumed_from}" if resume is not None else "")
    settings = get_settings()
    path = checkpoint_path(job_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    observer = PersistingObserver(job_id, session_factory(), flush_s=settings.trajectory_flush_s,
                                  flush_rows=settings.trajectory_flush_rows, checkpoint_path=path,
                                  checkpoint_every_s=settings.checkpoint_every_s, resumed_from=resumed_from,
                                  exact_every=settings.exact_trace_every)
    request_baseline(job_id)
    try:
        if spec.device == "cuda" and not torch.cuda.is_available():
            raise SpecError(("device",), f"CUDA was requested but worker {socket.gethostname()} has no GPU")
        path = settings.storage_dir / "datasets" / dataset.stored_name
        table = load_table(path, dataset.format, dataset.read_options, dataset.sha256)
        out = run(table, spec, observer, initial_state=initial_state, resume=resume)
        observer.close()
    except SpecError as exc:
        observer.close()
        _finish(job_id, status="failed", error=f"{'.'.join(map(str, exc.loc))}: {exc.msg}")
        return "failed"
    except StoppedInSetup as exc:  # cancelled, or out of time, before the first iteration
        observer.close()
        if exc.reason == "cancelled":
            _finish(job_id, status="cancelled")
            return "cancelled"
        _finish(job_id, status="failed", error=f"time limit of {spec.time_limit_s} s reached during set-up, "
                                               f"after {exc.elapsed_s:.3g} s (before the first iteration)")
        return "failed"
    except SolverDiverged as exc:  # the trajectory holds the finite iterates; the message names the step size
        observer.close()
        _finish(job_id, status="failed", error=str(exc))
        return "failed"
    except Exception as exc:  # a solver error fails the job, never the worker
        log.error("job %s failed:\n%s", job_id, traceback.format_exc())
        try:
            observer.close()
        except Exception:  # pragma: no cover - the original error matters more
            pass
        _finish(job_id, status="failed", error=f"{type(exc).__name__}: {exc}")
        return "failed"

    artifacts = write_artifacts(job_id, out.state_dict, out.predictions, metadata={
        "job_id": job_id, "model": json.dumps(spec.model.model_dump()),
        "feature_names": json.dumps(out.feature_names), "groups": json.dumps(out.groups),
        "encoder": json.dumps(out.encoder)})  # the API streams the audit model file from these weights
    status = "cancelled" if out.stop_reason == "cancelled" else "succeeded"
    result = {"iterations": out.iterations, "solver_time_s": out.solver_time_s, "stop_reason": out.stop_reason,
              "constraint_names": out.constraint_names, "tolerances": out.tolerances, "groups": out.groups,
              "n_features": len(out.feature_names), "trajectory_rows": observer.rows_written + resumed_from,
              "resumed_from": resumed_from,
              "iterations_to_target": observer.iterations_to_target(), "warm_started": initial_state is not None,
              **promise_fields(out)}
    if out.stop_reason == "time_limit":  # a model and its metrics exist: usable, audited and charted like any other
        result["message"] = (f"time limit of {spec.time_limit_s:g} s reached after {out.iterations} of "
                             f"{spec.max_iterations} iterations; the model is the last iterate")
    with session_scope() as s:
        s.add_all(artifacts)
        job = s.get(Job, job_id)
        job.status, job.error, job.metrics, job.result = status, None, out.metrics, result
        job.device, job.finished_at, job.progress = out.device, utcnow(), observer.progress()
    log.info("job %s after %s iterations in %.2f s", status, out.iterations, out.solver_time_s)
    return status

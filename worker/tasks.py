"""Celery tasks of jobs: the solve, between the two lifecycle steps of :mod:`app.jobs.lifecycle`.

``run_job(job_id, attempt)`` is :func:`~app.jobs.lifecycle.start` (the delivery rules, fencing, resume and the
baseline are there), the solve (this module: the only part that needs torch), then :func:`~app.jobs.lifecycle.end`
(the result or the failure stored as this start, the checkpoints spent, the successors released). Beat's
``reap_stale_jobs`` and ``resend_lost_jobs`` are :func:`~app.jobs.lifecycle.reap_stale` and
:func:`~app.jobs.lifecycle.resend_lost`.
"""

from __future__ import annotations

import json
import logging
import socket
import traceback
from functools import partial

import torch

from app.core.blobstore import blobs, checkpoint_key
from app.core.db import session_factory
from app.core.observability import job_id_var
from app.core.settings import get_settings
from app.jobs.artifacts import write_artifacts
from app.jobs.lifecycle import Failure, Result, StaleAttempt, Started, end, reap_stale, resend_lost, start
from solvers import SolverDiverged, SpecError, StoppedInSetup, run
from worker.celery_app import celery_app
from worker.persistence import PersistingObserver
from worker.results import baseline_summary, promise_fields
from worker.tables import dataset_table
from worker.threads import solve_threads

log = logging.getLogger(__name__)


@celery_app.task(name="fairsolve.run_job")
def run_job(job_id: str, attempt: int = 1) -> str:
    token = job_id_var.set(job_id)  # every log line of this job carries its id
    try:
        started = start(job_id, attempt)
        if started is None:
            return "skipped"
        try:
            ending = _solve(job_id, attempt, started)
        except StaleAttempt:  # a fenced write of the solve found another start holding the job
            ending = None
        return end(job_id, started, ending)
    finally:
        job_id_var.reset(token)


@celery_app.task(name="fairsolve.reap_stale_jobs")
def reap_stale_jobs() -> list[str]:
    """Re-queue (or fail) running jobs whose heartbeat stopped (:func:`app.jobs.lifecycle.reap_stale`)."""
    return reap_stale()


@celery_app.task(name="fairsolve.resend_lost_jobs")
def resend_lost_jobs() -> list[str]:
    """Send again queued jobs whose message the broker lost (:func:`app.jobs.lifecycle.resend_lost`)."""
    return resend_lost()


def _solve(job_id: str, attempt: int, started: Started) -> Result | Failure:
    """The solve of this start, its trajectory and checkpoints written as it goes (:class:`StaleAttempt` once
    another start holds the job), and what :func:`~app.jobs.lifecycle.end` stores of it."""
    spec, dataset, initial_state, resume, fence, resume_start = started[:6]
    resumed_from = resume.iteration if resume is not None else 0
    log.info("job started: solver %s, attempt %s%s", spec.solver.name, attempt,
             f", resuming after iteration {resumed_from}" if resume is not None else "")
    settings = get_settings()
    observer = PersistingObserver(job_id, session_factory(), flush_s=settings.trajectory_flush_s,
                                  flush_rows=settings.trajectory_flush_rows,
                                  checkpoint_key=partial(checkpoint_key, job_id, fence), store=blobs(),
                                  checkpoint_every_s=settings.checkpoint_every_s, resumed_from=resumed_from,
                                  exact_every=settings.exact_trace_every, fence=fence,
                                  checkpoint_start=resume_start)
    ending = None  # (status, error) when the solve produced no model
    try:
        if spec.device == "cuda" and not torch.cuda.is_available():
            raise SpecError(("device",), f"CUDA was requested but worker {socket.gethostname()} has no GPU")
        if started.missing_base is not None:
            raise SpecError(("solver", "params", "base_job_id"),
                            f"the model of job {started.missing_base!r} is no longer stored")
        table, prepare_with = dataset_table(dataset)  # the prepared split is kept for the next job on these rows
        with solve_threads(spec):
            out = run(table, spec, observer, initial_state=initial_state, resume=resume, prepare_with=prepare_with)
        observer.close()
    except StaleAttempt:
        raise
    except SpecError as exc:
        ending = "failed", f"{'.'.join(map(str, exc.loc))}: {exc.msg}"
    except StoppedInSetup as exc:  # cancelled, or out of time, before the first iteration
        ending = ("cancelled", None) if exc.reason == "cancelled" else (
            "failed", f"time limit of {spec.time_limit_s} s reached during set-up, after {exc.elapsed_s:.3g} s "
                      "(before the first iteration)")
    except SolverDiverged as exc:  # the trajectory holds the finite iterates; the message names the step size
        ending = "failed", str(exc)
    except Exception as exc:  # a solver error fails the job, never the worker
        log.error("job %s failed:\n%s", job_id, traceback.format_exc())
        ending = "failed", f"{type(exc).__name__}: {exc}"
    if ending is not None:
        try:
            observer.close()
        except StaleAttempt:
            raise
        except Exception:  # pragma: no cover - the original error matters more
            pass
        return Failure(*ending)

    artifacts = write_artifacts(job_id, out.state_dict, out.predictions, metadata={
        "job_id": job_id, "model": json.dumps(spec.model.model_dump()),
        "feature_names": json.dumps(out.feature_names), "groups": json.dumps(out.groups),
        "encoder": json.dumps(out.encoder)}, folder=str(fence))  # the API streams the audit model file from these
    status = "cancelled" if out.stop_reason == "cancelled" else "succeeded"
    result = {"iterations": out.iterations, "solver_time_s": out.solver_time_s, "stop_reason": out.stop_reason,
              "constraint_names": out.constraint_names, "tolerances": out.tolerances, "groups": out.groups,
              "n_features": len(out.feature_names), "trajectory_rows": observer.rows_written + resumed_from,
              "resumed_from": resumed_from,
              "iterations_to_target": observer.iterations_to_target(), "warm_started": initial_state is not None,
              **promise_fields(out)}
    if out.stop_reason == "time_limit":  # a model and its metrics exist: usable, audited and charted like any other
        result["message"] = (f"time limit of {spec.time_limit_s:g} s reached after {out.iterations} of "
                             f"{spec.iteration_total()} iterations; the model is the last iterate")
    log.info("job %s after %s iterations in %.2f s", status, out.iterations, out.solver_time_s)
    return Result(status, {"metrics": out.metrics, "result": result, "device": out.device,
                           "progress": observer.progress()}, artifacts, out.iterations, out.stop_reason,
                  out.solver_time_s, lambda: baseline_summary(out))

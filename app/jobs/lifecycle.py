"""A job's lifecycle in the database: start, fencing, finish, successors, re-queues and the baseline it asks for.

The worker's task (:mod:`worker.tasks`) calls two of these around the solve; nothing here trains. Read top-down, a
job goes :func:`start` (the delivery rules, fencing, resume, the baseline it asks for) → (the solve, in the worker)
→ :func:`end` (:func:`store_result` or :func:`finish`, the checkpoints spent, :func:`release_successors`).

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
  stopped (a worker killed without redelivery) as a new attempt;
* fencing: each start of a job holds the job's ``starts`` count as its fence token, and every
  write it makes — heartbeat, trajectory, checkpoint reference, the final status — is an
  ``UPDATE ... WHERE starts = :fence AND status = 'running'`` (:func:`held`; ``worker.persistence``). A start
  that was paused past the stale period and superseded exits at its next write without
  touching the job, its successors or the checkpoint the newer start resumes from; its own
  checkpoint and artifact files (named by its start) are removed;
* ``resend_lost_jobs`` (Celery beat) sends again the message of a ``queued`` job that has
  none in the broker (a failed send, a broker restarted without its data; ``app.core.queue``).
"""

from __future__ import annotations

import logging
import os
import socket
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, NamedTuple

from sqlalchemy import delete, func, select, update

from app.core.blobstore import artifact_key, blobs, checkpoint_key
from app.core.broker_messages import live_task_ids
from app.core.db import session_scope
from app.core.queue import send_job, task_id
from app.core.settings import get_settings
from app.jobs.artifacts import artifact_file
from app.jobs.base_jobs import base_job_id
from app.jobs.baselines import (
    ensure_baseline,
    queued_baseline_id,
    send_baseline,
    solved_as_baseline,
    solves_as_baseline,
    store_as_baseline,
)
from app.jobs.wait import notify_ended
from app.models import Artifact, Dataset, Job, TrajectoryPoint, utcnow
from app.schemas import problem_spec
from solvers import ProblemSpec

if TYPE_CHECKING:
    from solvers.formats import checkpoint as ckpt

log = logging.getLogger(__name__)
TERMINAL = {"succeeded", "failed", "cancelled"}


class StaleAttempt(RuntimeError):
    """This start of the job was superseded (fenced off): it must stop without writing anything more."""


def remove_checkpoints(job_id: str) -> None:
    """The job ended: every start's checkpoint (``checkpoint_key``: a start never writes another's) is spent."""
    blobs().delete_prefix(checkpoint_key(job_id))


def saved_checkpoint(job: Job) -> ckpt.Checkpoint | None:
    """The checkpoint the job's progress names (written by the start that held the job), if readable."""
    from solvers.formats import checkpoint as ckpt  # torch: the worker alone reads checkpoints

    start, iteration = job.progress.get("checkpoint_start"), job.progress.get("checkpoint_iteration")
    if not start or not iteration:
        return None
    try:
        saved = ckpt.load(blobs().fetch(checkpoint_key(job.id, start, iteration)))
    except Exception:  # a missing or damaged file: start over rather than fail the job
        log.warning("job %s: unreadable checkpoint; restarting from iteration 0", job.id)
        return None
    return saved if saved.iteration == iteration else None


class Started(NamedTuple):
    spec: ProblemSpec
    dataset: Dataset
    initial_state: dict | None
    resume: ckpt.Checkpoint | None
    fence: int  # the job's ``starts`` after this start: every later write of this start is guarded by it
    resume_start: int | None  # the start whose checkpoint file ``resume`` was read from
    own_baseline: dict | None = None  # :func:`request_baseline`: the baseline this job's own solve may store
    missing_base: str | None = None  # the ``base_job_id`` whose model is no longer stored (the solve fails)


def start(job_id: str, attempt: int) -> Started | None:
    """Mark the job running (or cancelled if asked before start) and ask for its baseline; None when there is nothing
    to do (its successors are released when it has ended).

    A job started again (redelivered, or re-queued by the reaper) resumes from its checkpoint when
    it has one: trajectory rows after the checkpoint's iteration are dropped, earlier ones kept."""
    started = _claim(job_id, attempt)
    if started is None:
        release_successors(job_id)
        return None
    return started._replace(own_baseline=request_baseline(job_id, warm_started=started.initial_state is not None))


def _claim(job_id: str, attempt: int) -> Started | None:
    """:func:`start`'s transaction: the delivery rules of the module docstring, then ``running`` as a new start."""
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
            notify_ended(s, job_id)
            return None
        try:
            spec = problem_spec(job.spec)
        except Exception as exc:  # a stored spec this worker cannot read fails the job; it never stays queued
            job.status, job.finished_at = "failed", utcnow()
            job.error = f"the job's stored spec cannot be read by worker {socket.gethostname()}: {exc}"[:2000]
            log.error("job %s: %s", job_id, job.error)
            notify_ended(s, job_id)
            return None
        resume = saved_checkpoint(job) if job.starts else None
        after = resume.iteration if resume is not None else 0
        s.execute(delete(TrajectoryPoint).where(TrajectoryPoint.job_id == job_id, TrajectoryPoint.iteration > after))
        s.execute(delete(Artifact).where(Artifact.job_id == job_id))
        job.status, job.started_at, job.attempts, job.heartbeat_at = "running", utcnow(), attempt, utcnow()
        resume_start = job.progress.get("checkpoint_start") if resume is not None else None
        job.progress = {**job.progress, "checkpoint_start": resume_start, "checkpoint_iteration": after}
        job.starts += 1
        job.worker = f"{socket.gethostname()}:{os.getpid()}"
        job.error = None
        dataset = s.get(Dataset, job.dataset_id)
        s.expunge(dataset)
        base = base_job_id(job.spec)
        weights = warm_start_weights(s, job, base)
        return Started(spec, dataset, weights, resume, job.starts, resume_start,
                       missing_base=base if base is not None and weights is None else None)


def warm_start_weights(s, job: Job, base: str | None) -> dict | None:
    """The weights of the job whose model this one post-processes (``base``, its ``base_job_id``; the same
    owner's), else of the job it warm-starts from, when that job produced them (else a cold start)."""
    from safetensors.torch import load_file  # torch: the worker alone loads weights

    source = base or job.warm_start_from
    if not source or (source != job.warm_start_from and s.scalar(select(Job.owner).where(Job.id == source)) != job.owner):
        return None
    art = s.scalar(select(Artifact).where(Artifact.job_id == source, Artifact.kind == "weights"))
    return load_file(str(artifact_file(art))) if art is not None else None


def held(job_id: str, fence: int):
    """The SQL condition that this start still holds the job."""
    return (Job.id == job_id) & (Job.starts == fence) & (Job.status == "running")


def finish(job_id: str, fence: int, **values) -> None:
    """End the job as this start, or raise :class:`StaleAttempt` when another start holds it."""
    with session_scope() as s:
        if s.execute(update(Job).where(held(job_id, fence)).values(finished_at=utcnow(), **values)).rowcount != 1:
            raise StaleAttempt(f"job {job_id}: start {fence} was superseded")
        notify_ended(s, job_id)


def abandon(job_id: str, fence: int) -> None:
    """A superseded start leaves nothing behind: its artifact files (named by its start) are removed."""
    blobs().delete_prefix(artifact_key(f"{job_id}/{fence}/"))


def store_result(job_id: str, fence: int, *, status: str, values: dict, artifacts: list[Artifact],
                 own_baseline: dict | None, baseline: Callable[[], dict] | None) -> None:
    """End the job with its result as this start, with its artifact rows, in one transaction (the guarded update
    first: a superseded start adds no artifact rows, and gets :class:`StaleAttempt`). A job that kept its baseline
    to itself (``own_baseline``) and solved as the baseline stores ``baseline()`` as the baseline row in the same
    transaction; otherwise the baseline is sent (:func:`settle_baseline`)."""
    with session_scope() as s:
        if s.execute(update(Job).where(held(job_id, fence)).values(
                status=status, error=None, finished_at=utcnow(), **values)).rowcount != 1:
            raise StaleAttempt(f"job {job_id}: start {fence} was superseded")
        s.add_all(artifacts)
        notify_ended(s, job_id)  # a client long-polling the job sees its end at this commit
        stored = baseline is not None and store_as_baseline(s, own_baseline, baseline())
    settle_baseline(own_baseline, stored)


class Result(NamedTuple):
    """A solve that produced a model: the job's stored values, its artifact rows, and what its baseline needs."""
    status: str          # "succeeded", or "cancelled" when stopped by a cancel with a model
    values: dict         # metrics, result, device, progress
    artifacts: list[Artifact]
    iterations: int
    stop_reason: str | None
    solver_time_s: float
    baseline: Callable[[], dict]   # the baseline row of this solve (stored when it solved as its own baseline)


class Failure(NamedTuple):
    """A solve that produced no model."""
    status: str          # "failed" or "cancelled"
    error: str | None


def end(job_id: str, started: Started, ending: Result | Failure | None) -> str:
    """Store the solve's ``ending`` as this start (None: the solve found the start superseded), spend the job's
    checkpoints and release its successors; the job's final status, or ``"stale"`` when another start holds the job
    (:class:`StaleAttempt`: this start writes nothing more and removes its own files, :func:`abandon`)."""
    own = started.own_baseline
    try:
        if ending is None:
            raise StaleAttempt(f"job {job_id}: start {started.fence} was superseded")
        if isinstance(ending, Result):
            solved_own = own is not None and ending.status == "succeeded" and solved_as_baseline(
                own, ending.iterations, ending.stop_reason, ending.solver_time_s)   # no second fit of the same erm run
            store_result(job_id, started.fence, status=ending.status, values=ending.values,
                         artifacts=ending.artifacts, own_baseline=own,
                         baseline=ending.baseline if solved_own else None)
        else:
            finish(job_id, started.fence, status=ending.status, error=ending.error)
            settle_baseline(own, stored=False)
    except StaleAttempt:
        log.warning("job %s: start %s was superseded (paused past the stale period?); exiting without writing",
                    job_id, started.fence)
        abandon(job_id, started.fence)
        return "stale"
    remove_checkpoints(job_id)
    release_successors(job_id)
    return ending.status


def release_successors(job_id: str) -> None:
    """Queue the jobs that warm-start from ``job_id`` once it has ended (each exactly once)."""
    with session_scope() as s:
        if s.scalar(select(Job.status).where(Job.id == job_id)) not in TERMINAL:
            return
        waiting = list(s.scalars(select(Job.id).where(Job.warm_start_from == job_id, Job.status == "waiting")))
        released = [jid for jid in waiting if s.execute(
            update(Job).where(Job.id == jid, Job.status == "waiting")
            .values(status="queued", dispatched_at=utcnow())).rowcount == 1]
    for jid in released:
        send_job(jid, queue_of(jid))


def queue_of(job_id: str) -> str:
    with session_scope() as s:
        return s.scalar(select(Job.queue).where(Job.id == job_id))


def reap_stale() -> list[str]:
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
            elif s.execute(update(Job).where(guard).values(status="queued", dispatched_at=utcnow())).rowcount == 1:
                requeued.append((job.id, job.queue, job.attempts + 1))
    for job_id, queue, attempt in requeued:
        log.warning("job %s: heartbeat lost; re-queued as attempt %s", job_id, attempt)
        send_job(job_id, queue, attempt)
    return [r[0] for r in requeued]


def resend_lost() -> list[str]:
    """Send again the next attempt of every ``queued`` job whose message is in no queue of the broker
    (``app.core.broker_messages``) ``FAIRSOLVE_RESEND_GRACE_S`` after it was committed for sending: a send
    that failed while the broker was down, a message lost with a broker restarted without its data.

    Candidates are read first, the broker after, and each re-send is claimed with one guarded UPDATE
    (still queued at the same attempt and dispatch time), so a job started or re-dispatched meanwhile is
    left alone."""
    settings = get_settings()
    cutoff = utcnow() - timedelta(seconds=settings.resend_grace_s)
    dispatched = func.coalesce(Job.dispatched_at, Job.created_at)
    with session_scope() as s:
        candidates = s.execute(select(Job.id, Job.queue, Job.attempts, Job.dispatched_at)
                               .where(Job.status == "queued", dispatched < cutoff)).all()
    if not candidates:
        return []
    live = live_task_ids({row.queue for row in candidates})
    if live is None:  # a broker that cannot be read (embedded SQLAlchemy transport)
        return []
    lost = [row for row in candidates if task_id(row.id, row.attempts + 1) not in live]
    resent = []
    for row in lost:
        with session_scope() as s:
            claimed = s.execute(update(Job).where(
                Job.id == row.id, Job.status == "queued", Job.attempts == row.attempts,
                (Job.dispatched_at == row.dispatched_at) if row.dispatched_at is not None
                else Job.dispatched_at.is_(None)).values(dispatched_at=utcnow())).rowcount == 1
        if claimed:
            log.warning("job %s: queued with no message in the broker; sending attempt %s again",
                        row.id, row.attempts + 1)
            send_job(row.id, row.queue, row.attempts + 1)
            resent.append(row.id)
    return resent


def request_baseline(job_id: str, warm_started: bool) -> dict | None:
    """Make sure the job's unconstrained baseline (:mod:`app.jobs.baselines`) exists or is being computed; a failure
    here is logged and never fails the job. A cold-started job whose solve is its baseline's
    (:func:`~app.jobs.baselines.solves_as_baseline`: an ``erm`` job) sends nothing: its spec (with ``dataset_id``) is
    returned and :func:`settle_baseline` stores the job's own result as the baseline, or sends it then."""
    try:
        with session_scope() as s:
            job = s.get(Job, job_id)
            spec, device = dict(job.spec, dataset_id=job.dataset_id), job.spec.get("device", "cpu")
            baseline_id = ensure_baseline(s, spec, get_settings().stale_after_s)
        own = not warm_started and solves_as_baseline(spec)
        if baseline_id is not None and not own:
            send_baseline(baseline_id, device)
        return spec if own else None
    except Exception:
        log.warning("job %s: could not request its baseline:\n%s", job_id, traceback.format_exc())
        return None


def settle_baseline(own: dict | None, stored: bool) -> None:
    """After a job that kept its baseline to itself (``own``, from :func:`request_baseline`) ended without storing
    it (failed, cancelled, stopped by a cap the baseline does not have): send it, if still queued."""
    if own is None or stored:
        return
    try:
        with session_scope() as s:
            baseline_id = queued_baseline_id(s, own)
        if baseline_id is not None:
            send_baseline(baseline_id, own.get("device", "cpu"))
    except Exception:
        log.warning("could not send a baseline:\n%s", traceback.format_exc())

"""Jobs: submit a constrained solve, follow it, cancel it, read its trajectory and artifacts."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Query, Response, status
from fastapi.responses import FileResponse, JSONResponse
from sqlalchemy import select, text, update
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from app.jobs import idempotency
from app.jobs.admission import check_active_jobs, check_caps
from app.jobs.artifacts import artifact_file
from app.auth.keys import Caller
from app.api.common import owned_dataset, spec_error
from app.jobs.answers import JOB_LIST, job_models
from app.jobs.base_jobs import check_base_jobs
from app.api.deps import DB, AppSettings, CurrentCaller, Offset, get_or_404
from app.datasets.feature_screening import screened
from app.jobs.trajectory import read_trajectory
from app.jobs.wait import MAX_WAIT_S, announce_ended, wait_for_end
from app.models import Artifact, Job, new_id, utcnow
from app.core.queue import dispatch, queue_for
from app.schemas import JobCreate, JobOut, TrajectoryOut, json_response
from app.datasets.spec_table import counts_of, spec_table
from app.core.strict_json import StrictJSONRoute
from solvers import SpecError, check_spec_against_table

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"], route_class=StrictJSONRoute)


@router.post("", status_code=status.HTTP_202_ACCEPTED)
def submit_job(body: JobCreate, db: DB, settings: AppSettings, caller: CurrentCaller,
               idempotency_key: idempotency.IdempotencyKey = None):
    """Validate the spec against the dataset, store the job and queue it (``device: cuda`` goes to ``gpu``)."""
    payload = body.model_dump(mode="json")
    submission = idempotency.Submission(db, caller, idempotency_key, "jobs", payload)
    if (replayed := submission.replayed()) is not None:
        return replayed
    check_caps(body, settings)
    dataset = owned_dataset(db, body.dataset_id, caller, ("dataset_id",))
    try:
        check_spec_against_table(body, spec_table(settings, dataset, body), counts_of(settings, dataset))
        screen = screened(settings, dataset, body)
    except SpecError as exc:
        raise spec_error(exc.loc, exc.msg) from exc
    check_active_jobs(db, caller.owner, 1, settings)
    spec = payload if screen is None else {**payload, "features": screen.kept, "feature_screen": screen.notes}
    check_base_jobs(db, caller, dataset.id, [spec])
    job = Job(id=new_id(), owner=caller.owner, dataset_id=dataset.id, spec=spec, status="queued",
              queue=queue_for(body.device), progress={"iteration": 0, "max_iterations": body.iteration_total()})
    response = {"id": job.id, "status": job.status, "queue": job.queue}
    if screen is not None:
        response["feature_screen"] = screen.notes
    db.add(job)
    if (replayed := submission.commit(status.HTTP_202_ACCEPTED, response)) is not None:
        return replayed
    dispatch([job])  # stored and queued: if the broker is down, the reconciler sends it (app.core.queue)
    return JSONResponse(response, status_code=status.HTTP_202_ACCEPTED)


@router.get("", response_model=list[JobOut])
def list_jobs(db: DB, caller: CurrentCaller, status_: str | None = Query(None, alias="status", pattern="^[a-z_]{1,16}$"), limit: int = Query(100, ge=1, le=1000),
              offset: Offset = 0) -> Response:
    stmt = select(Job).where(Job.owner == caller.owner).order_by(Job.created_at.desc()).limit(limit).offset(offset)
    if status_:
        stmt = stmt.where(Job.status == status_)
    return json_response(JOB_LIST.dump_json(job_models(db, list(db.scalars(stmt)))))


def read_job(db: Session, job_id: str, caller: Caller) -> Response:
    return json_response(job_models(db, [get_or_404(db, Job, job_id, "job", caller)])[0].model_dump_json().encode())


@router.get("/{job_id}", response_model=JobOut)
async def get_job(job_id: str, db: DB, caller: CurrentCaller,
                  wait_s: float = Query(0.0, ge=0, le=MAX_WAIT_S, description=(
                      "Long-poll: answer as soon as the job is succeeded, failed or cancelled, or after this many "
                      "seconds (at most 30), whichever is first; 0 answers at once."))) -> Response:
    if wait_s > 0:
        await run_in_threadpool(get_or_404, db, Job, job_id, "job", caller)  # another owner's job: 404 at once
        await wait_for_end(db, job_id, wait_s)
    return await run_in_threadpool(read_job, db, job_id, caller)


CANCELLABLE_AT_ONCE = ("queued", "waiting")
CANCEL_LOCK_WAIT_S = 2


@router.post("/{job_id}/cancel", status_code=status.HTTP_202_ACCEPTED)
def cancel_job(job_id: str, db: DB, caller: CurrentCaller) -> dict:
    """Cooperative: a queued job is cancelled at once; a running one stops at its next check (≈1 s).

    As cheap as a read (50 clients cancelling 2,000 queued jobs exhausted the pool): one guarded UPDATE
    for a job not started (a second, the flag alone, for one that has), no read before or after, the notification
    for long-polls after the commit (:func:`app.jobs.wait.announce_ended`), and a wait for the row's lock (a worker's
    transaction on it) bounded by ``CANCEL_LOCK_WAIT_S``, after which the answer is a 503 to retry."""
    mine = (Job.id == job_id) & (Job.owner == caller.owner)
    if db.get_bind().dialect.name == "postgresql":
        db.execute(text(f"SET LOCAL lock_timeout = '{CANCEL_LOCK_WAIT_S}s'"))
    ended = db.execute(update(Job).where(mine, Job.status.in_(CANCELLABLE_AT_ONCE))
                       .values(cancel_requested=True, status="cancelled", finished_at=utcnow())
                       .returning(Job.status)).scalar()
    state = ended or db.execute(update(Job).where(mine).values(cancel_requested=True).returning(Job.status)).scalar()
    db.commit()
    if state is None:
        raise HTTPException(status_code=404, detail=f"job {job_id!r} not found")
    if ended:
        announce_ended(db, job_id)
    if state in ("succeeded", "failed"):
        raise HTTPException(status_code=409, detail=f"job {job_id!r} has already {state}")
    return {"id": job_id, "status": state, "cancel_requested": True}


@router.get("/{job_id}/trajectory", response_model=TrajectoryOut)
def get_trajectory(job_id: str, db: DB, caller: CurrentCaller, max_points: int = Query(500, ge=2, le=100_000)) -> dict:
    """Iteration records, downsampled on read to at most ``max_points`` (first and last kept)."""
    job = get_or_404(db, Job, job_id, "job", caller)
    return {"job_id": job_id, **read_trajectory(db, job, max_points)}


@router.get("/{job_id}/artifacts/{kind}")
def download_artifact(job_id: str, kind: str, db: DB, caller: CurrentCaller) -> FileResponse:
    get_or_404(db, Job, job_id, "job", caller)
    art = db.scalar(select(Artifact).where(Artifact.job_id == job_id, Artifact.kind == kind))
    if art is None:
        raise HTTPException(status_code=404, detail=f"job {job_id!r} has no {kind!r} artifact")
    return FileResponse(artifact_file(art), media_type=art.media_type,
                        filename=f"{job_id}-{art.stored_name.rsplit('/', 1)[-1]}")

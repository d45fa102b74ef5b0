"""Audits: scheduled re-checks of a job's model on fresh data; their runs, alerts and the audit model file."""

from __future__ import annotations

import os
from collections.abc import Iterator

from fastapi import APIRouter, HTTPException, Query, Response, status
from fastapi.responses import StreamingResponse
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.audits.export import BLOCK, AuditFile, audit_file
from app.audits.metrics import describe_metrics
from app.audits.model_file import ModelError, model_columns, problem_spec
from app.audits.runs import active_runs, new_run, next_run_at, start_run
from app.audits.logs import PredictionLog, log_of
from app.audits.metrics import MetricSpec
from app.audits.schemas import AlertOut, AuditCreate, AuditOut, AuditUpdate, BaselinePin, RunOut, RunSummary
from app.audits.sources import SourceError, check_source
from app.jobs.artifacts import artifact_file, weights_of
from app.api.deps import DB, AppSettings, CurrentCaller, Offset, find, get_or_404, owned
from app.models import Alert, Artifact, Audit, AuditRun, Dataset, Job, UploadedModel, new_id, utcnow
from app.onnx_models import onnx_columns
from app.api.common import owned_dataset, spec_error
from app.core.blobstore import model_file
from app.datasets.storage import dataset_path, read_table, remove_quietly
from app.core.strict_json import StrictJSONRoute
from solvers import SpecError

router = APIRouter(tags=["audits"], route_class=StrictJSONRoute)


def audited_job(db: Session, job_id: str | None, caller) -> Job:
    """The caller's succeeded job with weights, or a 422 naming ``job_id``."""
    if job_id is None:
        raise spec_error(("job_id",), "job_id is required (the model of a succeeded job)")
    job = owned(db, Job, job_id, caller)
    if job is None:
        raise spec_error(("job_id",), f"job {job_id!r} not found")
    if job.status != "succeeded" or weights_of(db, job_id) is None:
        raise spec_error(("job_id",), f"job {job_id!r} has {job.status}; only a succeeded job's model can be audited")
    if (job.spec or {}).get("overlapping_groups"):  # an audit's groups are the sensitive columns' partition
        raise spec_error(("job_id",), f"job {job_id!r} has overlapping groups; audits need a partition of groups "
                                      "(its sensitive columns)")
    return job


def check_columns(needed: list[str], dataset: Dataset) -> None:
    """The dataset has every column the model reads (target, sensitive, features)."""
    have = {c["name"] for c in dataset.columns}
    missing = [c for c in dict.fromkeys(needed) if c not in have]
    if missing:
        raise spec_error(("dataset_id",), f"dataset {dataset.id!r} lacks the model's column(s) "
                                          f"{', '.join(map(repr, missing))}")


def job_columns(job: Job) -> list[str]:
    spec = problem_spec(job.spec)
    return [spec.target, *spec.sensitive, *(job.spec.get("features") or [])]


def audited_model(db: Session, settings, model_id: str, caller) -> tuple[UploadedModel, list[str]]:
    """The caller's uploaded model and the columns it reads, or a 422 naming ``model_artifact_id``."""
    row = owned(db, UploadedModel, model_id, caller)
    if row is None:
        raise spec_error(("model_artifact_id",), f"model {model_id!r} not found")
    if row.stored_name.endswith(".onnx"):
        return row, onnx_columns(row.spec)
    try:
        return row, model_columns(model_file(row, settings))
    except ModelError as exc:  # the stored file is gone or damaged
        raise spec_error(("model_artifact_id",), f"model {model_id!r} cannot be read: {exc}") from exc


def check_log(log: PredictionLog, metrics: list[MetricSpec]) -> None:
    """Every metric can be computed from the log's columns, or a 422 naming the missing one."""
    refused = log.refusal(metrics)
    if refused is not None:
        raise spec_error(("predictions", refused[0]), refused[1])


def audit_out(db: Session, audit: Audit) -> dict:
    out = AuditOut.model_validate(audit).model_dump()
    last = db.scalar(select(AuditRun).where(AuditRun.audit_id == audit.id).order_by(AuditRun.created_at.desc())
                     .limit(1))
    out["last_run"] = RunSummary.model_validate(last).model_dump() if last is not None else None
    return out


@router.get("/api/v1/audits/metrics")
def list_audit_metrics(caller: CurrentCaller) -> list[dict]:
    """Every metric type an audit can check: aliases, direction (``max``: threshold is an upper bound,
    ``min``: a lower bound), description, and the JSON schema of its extra fields."""
    return describe_metrics()


@router.post("/api/v1/audits", status_code=status.HTTP_201_CREATED, response_model=AuditOut)
def create_audit(body: AuditCreate, db: DB, settings: AppSettings, caller: CurrentCaller) -> dict:
    """Create an audit of a succeeded job's model, an uploaded model or a prediction log, on a dataset or an
    allow-listed source."""
    if sum(x is not None for x in (body.job_id, body.model_artifact_id, body.predictions)) != 1:
        raise spec_error(("job_id",), "give exactly one of job_id (a succeeded job's model), model_artifact_id "
                                      "(an uploaded model, POST /api/v1/models) or predictions (the data holds "
                                      "the model's output)")
    if body.job_id is not None:
        job = audited_job(db, body.job_id, caller)
        needed, label = job_columns(job), f"job {job.id}"
    elif body.predictions is not None:
        check_log(body.predictions, body.metrics)
        needed, label = body.predictions.columns(), "a prediction log"
    else:
        uploaded, needed = audited_model(db, settings, body.model_artifact_id, caller)
        label = f"model {uploaded.name}"
    if (body.dataset_id is None) == (body.source is None):
        raise spec_error(("dataset_id",), "give exactly one of dataset_id or source")
    if body.dataset_id is not None:
        check_columns(needed, owned_dataset(db, body.dataset_id, caller, ("dataset_id",)))
    else:
        try:
            check_source(body.source, settings.audit_sources)
        except SourceError as exc:
            raise spec_error(("source",), str(exc)) from exc
    audit = Audit(id=new_id(), owner=caller.owner, name=body.name or f"audit of {label}", job_id=body.job_id,
                  model_artifact_id=body.model_artifact_id, dataset_id=body.dataset_id, source=body.source,
                  predictions=body.predictions.model_dump(mode="json") if body.predictions else None,
                  metrics=[m.model_dump(mode="json", exclude_none=False) for m in body.metrics],
                  schedule=body.schedule, webhook_url=body.webhook_url, enabled=body.enabled,
                  next_run_at=next_run_at(body.schedule, body.enabled), created_at=utcnow())
    db.add(audit)
    db.commit()
    return audit_out(db, audit)


@router.get("/api/v1/audits", response_model=list[AuditOut])
def list_audits(db: DB, caller: CurrentCaller, limit: int = Query(100, ge=1, le=1000),
                offset: Offset = 0) -> list[dict]:
    stmt = (select(Audit).where(Audit.owner == caller.owner).order_by(Audit.created_at.desc())
            .limit(limit).offset(offset))
    return [audit_out(db, a) for a in db.scalars(stmt)]


@router.get("/api/v1/audits/{audit_id}", response_model=AuditOut)
def get_audit(audit_id: str, db: DB, caller: CurrentCaller) -> dict:
    return audit_out(db, get_or_404(db, Audit, audit_id, "audit", caller))


@router.patch("/api/v1/audits/{audit_id}", response_model=AuditOut)
def update_audit(audit_id: str, db: DB, caller: CurrentCaller, body: AuditUpdate | None = None) -> dict:
    """Change the name, metrics, schedule, webhook or enabled flag; the next run time follows the schedule."""
    audit = get_or_404(db, Audit, audit_id, "audit", caller)
    changes = body.model_dump(exclude_unset=True) if body is not None else {}
    if "metrics" in changes:
        if body.metrics is None:
            raise spec_error(("metrics",), "metrics cannot be null")
        if audit.predictions is not None:
            check_log(log_of(audit.predictions), body.metrics)
        changes["metrics"] = [m.model_dump(mode="json") for m in body.metrics]
    for key in ("name", "enabled"):
        if key in changes and changes[key] is None:
            raise spec_error((key,), f"{key} cannot be null")
    for key, value in changes.items():
        setattr(audit, key, value)
    if {"schedule", "enabled"} & changes.keys():
        audit.next_run_at = next_run_at(audit.schedule, audit.enabled)
    db.commit()
    return audit_out(db, audit)


@router.delete("/api/v1/audits/{audit_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_audit(audit_id: str, db: DB, caller: CurrentCaller) -> Response:
    """Delete an audit with its runs and alerts."""
    db.delete(get_or_404(db, Audit, audit_id, "audit", caller))
    db.commit()
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/api/v1/audits/{audit_id}/run", status_code=status.HTTP_202_ACCEPTED)
def run_audit_now(audit_id: str, db: DB, settings: AppSettings, caller: CurrentCaller) -> dict:
    """Queue a run now (besides the schedule); follow it at ``GET /api/v1/audits/{id}/runs/{run_id}``."""
    audit = get_or_404(db, Audit, audit_id, "audit", caller)
    if (active := active_runs(db, audit.owner)) >= settings.max_active_audit_runs:
        raise HTTPException(status_code=429, headers={"Retry-After": "30"}, detail=(
            f"{active} of your audit runs are queued or running; the limit is {settings.max_active_audit_runs} "
            "at once"))
    run = new_run(audit, trigger="manual")
    try:
        start_run(db, run)
    except Exception as exc:
        raise HTTPException(status_code=503, detail="the job queue is unavailable; try again later") from exc
    return {"id": run.id, "audit_id": audit.id, "status": run.status}


@router.get("/api/v1/audits/{audit_id}/runs", response_model=list[RunOut])
def list_runs(audit_id: str, db: DB, caller: CurrentCaller, limit: int = Query(100, ge=1, le=1000),
              offset: Offset = 0) -> list[AuditRun]:
    """The audit's runs, newest first, with their full reports (for history charts)."""
    get_or_404(db, Audit, audit_id, "audit", caller)
    return list(db.scalars(select(AuditRun).where(AuditRun.audit_id == audit_id)
                           .order_by(AuditRun.created_at.desc()).limit(limit).offset(offset)))


@router.get("/api/v1/audits/{audit_id}/runs/{run_id}", response_model=RunOut)
def get_run(audit_id: str, run_id: str, db: DB, caller: CurrentCaller) -> AuditRun:
    run = get_or_404(db, AuditRun, run_id, "audit run", caller)
    if run.audit_id != audit_id:
        raise HTTPException(status_code=404, detail=f"audit run {run_id!r} not found")
    return run


@router.put("/api/v1/audits/{audit_id}/baseline", response_model=AuditOut)
def pin_baseline(audit_id: str, db: DB, caller: CurrentCaller, body: BaselinePin | None = None) -> dict:
    """Pin a succeeded run of the audit as the baseline its later runs' score drift (``score_ks`` /
    ``score_psi`` with ``against: baseline``) is measured against."""
    audit = get_or_404(db, Audit, audit_id, "audit", caller)  # before the body: another owner's audit is a 404
    if body is None:
        raise spec_error(("run_id",), "run_id is required: the succeeded run to pin")
    run = find(db, AuditRun, body.run_id)
    if run is None or run.audit_id != audit.id:
        raise spec_error(("run_id",), f"audit {audit_id!r} has no run {body.run_id!r}")
    if run.status != "succeeded" or not run.score_summary:
        raise spec_error(("run_id",), f"run {body.run_id!r} has {run.status} without a score summary; pin a "
                                      "succeeded run")
    audit.baseline_run_id = run.id
    db.commit()
    return audit_out(db, audit)


@router.delete("/api/v1/audits/{audit_id}/baseline", response_model=AuditOut)
def unpin_baseline(audit_id: str, db: DB, caller: CurrentCaller) -> dict:
    """Unpin the baseline run (drift against the baseline then has no value)."""
    audit = get_or_404(db, Audit, audit_id, "audit", caller)
    audit.baseline_run_id = None
    db.commit()
    return audit_out(db, audit)


@router.get("/api/v1/alerts", response_model=list[AlertOut], tags=["alerts"])
def list_alerts(db: DB, caller: CurrentCaller, audit_id: str | None = None, limit: int = Query(100, ge=1, le=1000),
                offset: Offset = 0) -> list[Alert]:
    """Alerts of the caller's audits, newest first (``?audit_id=`` for one audit)."""
    stmt = select(Alert).where(Alert.owner == caller.owner)
    if audit_id is not None:
        stmt = stmt.where(Alert.audit_id == audit_id)
    return list(db.scalars(stmt.order_by(Alert.created_at.desc()).limit(limit).offset(offset)))


@router.get("/api/v1/alerts/{alert_id}", response_model=AlertOut, tags=["alerts"])
def get_alert(alert_id: str, db: DB, caller: CurrentCaller) -> Alert:
    return get_or_404(db, Alert, alert_id, "alert", caller)


@router.get("/api/v1/jobs/{job_id}/audit-model", tags=["audits"])
def download_audit_model(job_id: str, db: DB, settings: AppSettings, caller: CurrentCaller) -> Response:
    """The job's model as an audit model file (safetensors: weights + spec + fitted encoder) for
    ``fairsolve-admin audit run --model``."""
    job = get_or_404(db, Job, job_id, "job", caller)
    art = weights_of(db, job_id)
    if job.status != "succeeded" or art is None:
        raise HTTPException(status_code=409, detail=f"job {job_id!r} has {job.status}; no model to export")
    streamed = audit_file(job.id, job.spec, artifact_file(art))
    if streamed is None:  # weights written before the worker stored the encoder: refit it on the dataset
        streamed = refitted_audit_file(job, art, db, settings)
    return StreamingResponse(streamed.chunks, media_type="application/octet-stream",
                             headers={"Content-Disposition": f'attachment; filename="{job_id}-audit-model.safetensors"',
                                      "Content-Length": str(streamed.size)})


def refitted_audit_file(job: Job, art: Artifact, db: Session, settings) -> AuditFile:
    """The audit model file with the encoder refitted on the job's dataset (torch and the table, uncached),
    written to a temporary file that is removed at once: the open handle streams it, and nothing is left
    behind when the client goes away mid-stream."""
    from app.audits.model import AuditModel

    dataset = db.get(Dataset, job.dataset_id)
    table = read_table(dataset_path(settings, dataset), dataset.format, dataset.read_options)
    try:
        model = AuditModel.from_job(job.id, job.spec, artifact_file(art), table)
    except SpecError as exc:
        raise HTTPException(status_code=409, detail=f"the job's spec no longer fits its dataset: {exc}") from exc
    tmp = settings.storage_dir / "tmp" / f"{new_id()}.audit-model"
    try:
        model.save(tmp)  # never a copy of the file in memory
        handle = open(tmp, "rb")
    finally:
        remove_quietly(tmp)

    def chunks() -> Iterator[bytes]:
        with handle:
            while chunk := handle.read(BLOCK):
                yield chunk

    return AuditFile(os.fstat(handle.fileno()).st_size, chunks())

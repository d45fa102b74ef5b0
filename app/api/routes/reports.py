"""Bias reports (:mod:`app.audits.bias_report`) of an audit run and of a job, as HTML, JSON or CSV.

A job's report audits its stored test predictions as a prediction log (:mod:`app.audits.logs`: score σ(f),
label, group), so it is the same computation as an audit; its metrics are the performance and group-fairness
metrics, with the job's constraint tolerances as thresholds where a constraint type is an audit metric. A metric
that is one of the job's constraints, with the job's own test value, gets the job's own 95 % interval (its
fairness report's, :mod:`solvers.fairness.intervals`: Clopper–Pearson for rate gaps), the one the job page shows:
one interval per metric for the same predictions (:func:`with_job_intervals`). A rate gap that is no constraint of
the job has the same Clopper–Pearson interval from the audit itself (:class:`app.audits.metrics.RateGap`).
"""
from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, HTTPException, Query, Response
from sqlalchemy import select

from app.jobs.artifacts import read_predictions
from app.audits.bias_report import document, render
from app.audits.logs import PredictionLog, log_of
from app.audits.metrics import AUDIT_METRICS, MetricSpec
from app.api.deps import DB, CurrentCaller, get_or_404
from app.models import Artifact, Audit, AuditRun, Dataset, Job, UploadedModel
from app.core.strict_json import StrictJSONRoute

router = APIRouter(tags=["reports"], route_class=StrictJSONRoute)
Format = Literal["html", "json", "csv"]
REPORT_RESPONSES = {200: {"content": {"text/html": {}, "text/csv": {}, "application/json": {}}}}
JOB_METRICS = ("accuracy", "roc_auc", "demographic_parity", "equal_opportunity", "equalized_odds")
JOB_PREDICTIONS = PredictionLog(score_column="score", label_column="label", positive_label=1, sensitive=["group"])


def answer(doc: dict, fmt: str, name: str) -> Response:
    body, media = render(doc, fmt)
    disposition = "inline" if fmt == "html" else "attachment"
    return Response(content=body, media_type=media,
                    headers={"Content-Disposition": f'{disposition}; filename="{name}.{fmt}"'})


def build(reference: str | None, **parts) -> dict:
    try:
        return document(reference=reference, **parts)
    except ValueError as exc:  # an unknown reference group
        raise HTTPException(status_code=422, detail=[{"loc": ["query", "reference"], "msg": str(exc),
                                                      "type": "value_error"}]) from exc


def audit_columns(db, audit: Audit) -> list[str]:
    """The sensitive columns that make the audit's groups."""
    if audit.predictions is not None:
        return log_of(audit.predictions).sensitive
    spec = db.get(Job, audit.job_id).spec if audit.job_id else db.get(UploadedModel, audit.model_artifact_id).spec
    return list(spec["sensitive"])  # a job's spec, an audit model's problem spec or an ONNX model's stored spec


@router.get("/api/v1/audits/{audit_id}/runs/{run_id}/report", responses=REPORT_RESPONSES)
def audit_run_report(audit_id: str, run_id: str, db: DB, caller: CurrentCaller, format: Format = "html",
                     reference: str | None = Query(None, max_length=255,
                                                   description="The reference group (default: the largest).")
                     ) -> Response:
    """The run's bias report: one self-contained HTML file (print it to PDF from the browser), or the same
    numbers as JSON or CSV."""
    audit = get_or_404(db, Audit, audit_id, "audit", caller)
    run = get_or_404(db, AuditRun, run_id, "audit run", caller)
    if run.audit_id != audit.id:
        raise HTTPException(status_code=404, detail=f"audit run {run_id!r} not found")
    if run.status != "succeeded":
        raise HTTPException(status_code=409, detail=f"audit run {run_id!r} has {run.status}; no report")
    when = run.finished_at.isoformat(timespec="seconds") if run.finished_at else ""
    doc = build(reference, subject={"kind": "audit_run", "id": run.id, "name": audit.name,
                                    "detail": f"audit {audit.id}, {run.trigger} run finished {when}"},
                data={"sha256": run.data_sha256, "n_rows": run.n_rows, "source": audit.source or audit.dataset_id},
                columns=audit_columns(db, audit),
                report={"results": run.results or [], "group_sizes": run.group_sizes or {}, "passed": run.passed})
    return answer(doc, format, f"bias-report-{run.id}")


def job_metrics(spec: dict) -> list[MetricSpec]:
    """The job report's metrics, with the job's constraint tolerances as thresholds where the types match."""
    tolerances = {}
    for c in spec.get("constraints") or []:
        if c.get("type") in AUDIT_METRICS and c.get("tolerance") is not None:
            name = AUDIT_METRICS.get(c["type"]).name
            if name in JOB_METRICS:
                tolerances[name] = c["tolerance"]
    return [MetricSpec(type=m, threshold=tolerances.get(m)) for m in JOB_METRICS]


def with_job_intervals(report: dict, fairness: list[dict] | None) -> dict:
    """``report`` with each result of a job constraint's type whose value is the job's exact test value (the
    same predictions, the same definition) given that constraint's test interval from the job's fairness report
    (``ci_method``: the job's method, ``clopper_pearson`` for a rate gap), so the number has the job page's
    interval (at the job's confidence; an audit's own rate-gap interval is the same construction at 95%)."""
    entries = {e.get("type"): e for e in fairness or []}
    for result in report["results"]:
        entry = entries.get(result.get("type")) or {}
        test = entry.get("test") or {}
        value, ci = test.get("value"), test.get("ci")
        if value is not None and ci and None not in ci and result.get("value") is not None \
                and abs(result["value"] - value) <= 1e-9:
            result["ci"], result["ci_method"] = list(ci), entry.get("method") or "job"
    return report


@router.get("/api/v1/jobs/{job_id}/report", responses=REPORT_RESPONSES)
def job_report(job_id: str, db: DB, caller: CurrentCaller, format: Format = "html",
               reference: str | None = Query(None, max_length=255,
                                             description="The reference group (default: the largest).")) -> Response:
    """The job's bias report on its test split (its stored predictions): HTML, JSON or CSV."""
    from app.audits.report import evaluate

    job = get_or_404(db, Job, job_id, "job", caller)
    art = db.scalar(select(Artifact).where(Artifact.job_id == job_id, Artifact.kind == "predictions"))
    if job.status != "succeeded" or art is None:
        raise HTTPException(status_code=409, detail=f"job {job_id!r} has {job.status}; no predictions to report on")
    frame = read_predictions(art)
    report = with_job_intervals(evaluate(job_metrics(job.spec), JOB_PREDICTIONS.score(frame)),
                                (job.result or {}).get("fairness"))
    dataset = db.get(Dataset, job.dataset_id)
    doc = build(reference, subject={"kind": "job", "id": job.id, "name": f"job {job.id}",
                                    "detail": f"solver {job.spec.get('solver', {}).get('name', 'auto')}, test split"},
                data={"sha256": dataset.sha256 if dataset else None, "n_rows": len(frame),
                      "note": "the job's test split"},
                columns=list(job.spec["sensitive"]), report=report)
    return answer(doc, format, f"bias-report-{job.id}")

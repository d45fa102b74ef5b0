"""Celery tasks of scheduled audits.

* ``trigger_due_audits`` (Celery beat, every ``FAIRSOLVE_AUDIT_TRIGGER_EVERY_S``): every enabled audit
  whose ``next_run_at`` has passed is claimed with a compare-and-set on ``next_run_at`` (``UPDATE ...
  WHERE next_run_at = <the value read>``): of two beats, a redelivered trigger or a retry, exactly one
  moves it to the next cron time and creates the run, in the same transaction; the run is then sent.
  Missed times (downtime) give one run, not a burst. Audits are read from the database at every tick,
  so audits created or changed through the API take effect without a restart.
* ``run_audit(run_id)``: ``queued → running`` is again a compare-and-set, so a duplicate message does
  nothing. It scores the data with the job's model (or reads a prediction log's own output,
  :mod:`app.audits.logs`), summarises the scores per group and measures their drift against the previous
  and the pinned baseline run (:mod:`app.audits.drift`), stores the report, and on a breach creates an
  :class:`~app.models.Alert` and sends its webhook. A prediction log stored as a dataset whose metrics need only
  cell counts (rates, gaps, drift) is streamed in bounded memory (:mod:`app.audits.log_stream`).
  While it works the run beats ``heartbeat_at`` (:mod:`worker.audit_heartbeat`).
* ``deliver_alert(alert_id)``: POSTs the alert JSON (httpx) with Celery's autoretry: exponential back-off
  from ``FAIRSOLVE_AUDIT_WEBHOOK_BACKOFF_S`` (capped at 600 s), at most ``FAIRSOLVE_AUDIT_WEBHOOK_RETRIES``
  retries; every attempt, its failure and the final status are recorded on the alert.
"""

from __future__ import annotations

import logging
import traceback
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import func, select, update

from app.artifacts import artifact_file
from app.audits.drift import compare, summarise
from app.audits.log_stream import log_frames, tally
from app.audits.logs import log_of
from app.audits.metrics import MetricSpec
from app.audits.model import AuditModel, ModelError
from app.audits.report import evaluate, evaluate_counts, on_counts
from app.audits.runs import new_run, next_run_at, send_alert, send_run
from app.audits.sources import Data, SourceError, read_source
from app.audits.webhooks import WebhookRefused, check_destination
from app.blobstore import dataset_file, model_file
from app.db import session_scope
from app.models import Alert, Artifact, Audit, AuditRun, Dataset, Job, UploadedModel, utcnow
from app.settings import get_settings
from app.storage import TableLimits, iter_chunks, load_table
from solvers import SpecError
from worker.audit_heartbeat import Heartbeat, beat_interval
from worker.celery_app import celery_app

log = logging.getLogger(__name__)
settings = get_settings()


@celery_app.task(name="fairsolve.trigger_due_audits")
def trigger_due_audits() -> list[str]:
    """Claim every due audit once (compare-and-set on ``next_run_at``) and send its run."""
    now = utcnow()
    with session_scope() as s:
        due = s.execute(select(Audit.id, Audit.owner, Audit.schedule, Audit.next_run_at).where(
            Audit.enabled.is_(True), Audit.schedule.is_not(None), Audit.next_run_at <= now)).all()
    runs = []
    for audit_id, owner, schedule, due_at in due:
        with session_scope() as s:
            claimed = s.execute(update(Audit).where(Audit.id == audit_id, Audit.next_run_at == due_at)
                                .values(next_run_at=next_run_at(schedule, True, now))).rowcount == 1
            if claimed:
                run = new_run(audit_id=audit_id, owner=owner, trigger="schedule")
                s.add(run)
                runs.append(run.id)
    for run_id in runs:
        send_run(run_id)
    fail_lost_runs(now)
    return runs


def fail_lost_runs(now) -> int:
    """Runs still ``running`` whose heartbeat (else start) is ``FAIRSOLVE_STALE_AFTER_S`` old lost their worker (a
    live run beats it: :mod:`worker.audit_heartbeat`; a redelivered message finds its run no longer queued):
    mark them failed."""
    cutoff = now - timedelta(seconds=settings.stale_after_s)
    with session_scope() as s:
        last_sign = func.coalesce(AuditRun.heartbeat_at, AuditRun.started_at)
        return s.execute(update(AuditRun).where(AuditRun.status == "running", last_sign < cutoff).values(
            status="failed", finished_at=now,
            error=f"worker lost: no heartbeat for {settings.stale_after_s:g} s")).rowcount


def _fail(run_id: str, error: str) -> str:
    with session_scope() as s:
        s.execute(update(AuditRun).where(AuditRun.id == run_id).values(status="failed", error=error,
                                                                      finished_at=utcnow()))
    return "failed"


def _inputs(run_id: str) -> dict[str, Any] | None:
    """Claim the run (``queued → running``) and read what it needs; None when it is not queued."""
    with session_scope() as s:
        if s.execute(update(AuditRun).where(AuditRun.id == run_id, AuditRun.status == "queued")
                     .values(status="running", started_at=utcnow(), heartbeat_at=utcnow())).rowcount != 1:
            return None
        run = s.get(AuditRun, run_id)
        audit = s.get(Audit, run.audit_id)
        job = s.get(Job, audit.job_id) if audit.job_id else None
        weights = s.scalar(select(Artifact).where(Artifact.job_id == job.id, Artifact.kind == "weights")) \
            if job is not None else None
        previous = s.scalar(select(AuditRun).where(AuditRun.audit_id == audit.id, AuditRun.status == "succeeded",
                                                   AuditRun.id != run_id)
                            .order_by(AuditRun.finished_at.desc()).limit(1))
        baseline = s.get(AuditRun, audit.baseline_run_id) if audit.baseline_run_id else None
        return {"run": run, "audit": audit, "job": job, "weights": weights, "previous": previous, "baseline": baseline,
                "training": s.get(Dataset, job.dataset_id) if job is not None else None,
                "uploaded": s.get(UploadedModel, audit.model_artifact_id) if audit.model_artifact_id else None,
                "dataset": s.get(Dataset, audit.dataset_id) if audit.dataset_id else None}


def _model(inputs: dict[str, Any]):
    """The audited model (``score(table) -> Scored``): a prediction log's columns, an uploaded audit model file or
    ONNX model, or the job's weights with its encoder refitted."""
    if inputs["audit"].predictions is not None:
        return log_of(inputs["audit"].predictions)
    if inputs["uploaded"] is not None:
        path = model_file(inputs["uploaded"])
        if inputs["uploaded"].stored_name.endswith(".onnx"):  # an uploaded ONNX model: scored by onnxruntime
            from app.onnx_models.raw_values import file_text
            from app.onnx_models.scorer import OnnxModel
            dataset = inputs["dataset"]  # its text as written feeds a model from elsewhere (raw_values)
            text = file_text(dataset_file(dataset), dataset.format, dataset.read_options) if dataset else None
            return OnnxModel.from_file(path, inputs["uploaded"].spec, settings.max_onnx_bytes, text)
        return AuditModel.from_file(path)
    job, weights = inputs["job"], inputs["weights"]
    if job.status != "succeeded" or weights is None:
        raise ModelError(f"job {job.id!r} has {job.status} and no model")
    return AuditModel.from_job(job.id, job.spec, artifact_file(weights), _table(inputs["training"]).table)


def _table(dataset: Dataset) -> Data:
    table = load_table(dataset_file(dataset), dataset.format, dataset.read_options, dataset.sha256)
    return Data(table, dataset.sha256, len(table))


def _data(audit: Audit, dataset: Dataset | None) -> Data:
    if dataset is not None:
        return _table(dataset)
    return read_source(audit.source, get_settings().audit_sources, settings.storage_dir / "tmp",
                       settings.max_upload_bytes, TableLimits(settings.max_upload_rows, settings.max_upload_columns))


@celery_app.task(name="fairsolve.run_audit")
def run_audit(run_id: str) -> str:
    inputs = _inputs(run_id)
    if inputs is None:
        return "skipped"
    with Heartbeat(run_id, beat_interval(settings.stale_after_s)):
        return _run(run_id, inputs)


def _run(run_id: str, inputs: dict[str, Any]) -> str:
    audit, previous, baseline = inputs["audit"], inputs["previous"], inputs["baseline"]
    try:
        specs = [MetricSpec.model_validate(m) for m in audit.metrics]
        before = previous.results if previous is not None else None
        if _streams(audit, inputs["dataset"], specs):  # read in bounded memory: cell counts and block summaries
            columns, dataset = log_of(audit.predictions), inputs["dataset"]
            counted = tally(_batches(dataset, columns.columns()), columns)
            data, summary = Data(None, dataset.sha256, counted.n_rows), counted.summary
            drift = _drift(summary, previous, baseline)
            report = evaluate_counts(specs, counted.counts, counted.group_names, before, drift=drift)
            log.info("audit run %s: streamed %d rows of dataset %s", run_id, counted.n_rows, dataset.id)
        else:
            model = _model(inputs)
            data = _data(audit, inputs["dataset"])
            scored = model.score(data.table)
            summary = summarise(scored)
            drift = _drift(summary, previous, baseline)
            report = evaluate(specs, scored, before, drift=drift)
    except (ModelError, SourceError, SpecError, ValueError) as exc:
        return _fail(run_id, str(exc))
    except Exception as exc:  # an audit error fails the run, never the worker
        log.error("audit run %s failed:\n%s", run_id, traceback.format_exc())
        return _fail(run_id, f"{type(exc).__name__}: {exc}")
    alert_id = None
    with session_scope() as s:
        run = s.get(AuditRun, run_id)
        run.status, run.finished_at, run.data_sha256, run.n_rows = "succeeded", utcnow(), data.sha256, data.n_rows
        run.results, run.breached, run.passed = report["results"], report["breached"], report["passed"]
        run.group_sizes, run.previous_run_id = report["group_sizes"], previous.id if previous is not None else None
        run.score_summary, run.score_drift = summary, drift
        opened = newly_breached(report["breached"], previous)
        if opened:
            breached = [{k: r.get(k) for k in ("key", "value", "ci", "threshold", "direction", "noise_floor")}
                        for r in report["results"] if r["passed"] is False and r["key"] in opened]
            alert = Alert(owner=audit.owner, audit_id=audit.id, run_id=run_id, breached=breached,
                          message=breach_message(audit.name, breached),
                          webhook_status="pending" if audit.webhook_url else "none", webhook_attempts=0)
            s.add(alert)
            s.flush()
            alert_id = alert.id if audit.webhook_url else None
    if alert_id is not None:
        send_alert(alert_id)
    return "breached" if report["breached"] else "passed"


def _streams(audit: Audit, dataset: Dataset | None, specs: list[MetricSpec]) -> bool:
    """A prediction log stored as a dataset whose metrics need only cell counts and score summaries is streamed
    (:mod:`app.audits.log_stream`); anything else is read whole."""
    return audit.predictions is not None and dataset is not None and on_counts(specs)


def _batches(dataset: Dataset, columns: list[str]):
    """The dataset in batches: Parquet through pyarrow (only ``columns``, text as dictionaries); CSV through the
    dataset's own chunked reader (:func:`app.storage.iter_chunks`: its delimiter, header and missing values, the
    same parse as the table read whole)."""
    options = dataset.read_options or {}
    if dataset.format == "parquet":
        return log_frames(dataset_file(dataset), columns, missing_values=options.get("missing_values"))
    return iter_chunks(dataset_file(dataset), dataset.format, options)


def _drift(summary: dict[str, Any], previous: AuditRun | None, baseline: AuditRun | None) -> dict[str, Any]:
    return {"previous": compare(summary, previous.score_summary, previous.id) if previous else None,
            "baseline": compare(summary, baseline.score_summary, baseline.id) if baseline else None}


def newly_breached(breached: list[str], previous: AuditRun | None) -> list[str]:
    """The metrics of ``breached`` that open an alert: those the previous successful run did not breach. One alert
    is open per audit and metric until a run passes it (clears it); an unchanged breach on every scheduled run
    alerts (and calls the webhook) once, not at each run."""
    still_open = set(previous.breached or []) if previous is not None else set()
    return [key for key in breached if key not in still_open]


def breach_message(name: str, breached: list[dict[str, Any]]) -> str:
    """The alert's text: each breached metric and its value; for a rate gap, how often a model with no gap on
    the population would breach the same threshold on a batch of this size (:mod:`app.audits.report`)."""
    def one(b: dict[str, Any]) -> str:
        floor = b.get("noise_floor")
        if floor is None:
            return f"{b['key']} = {b['value']}"
        return (f"{b['key']} = {b['value']} (a model with no gap would breach it on a batch of this size with "
                f"probability {1 - floor['keep_probability']:.0%})")

    return f"audit {name!r}: {len(breached)} threshold(s) breached: " + ", ".join(map(one, breached))


class WebhookFailed(Exception):
    """A webhook POST that did not get a 2xx answer (retried by Celery)."""


def alert_payload(alert: Alert, audit: Audit, run: AuditRun) -> dict[str, Any]:
    """The JSON a webhook receives."""
    return {"alert_id": alert.id, "audit_id": audit.id, "audit_name": audit.name, "job_id": audit.job_id,
            "model_artifact_id": audit.model_artifact_id,
            "run_id": run.id, "message": alert.message, "breached": alert.breached,
            "run": {"finished_at": run.finished_at.isoformat() if run.finished_at else None, "n_rows": run.n_rows,
                    "data_sha256": run.data_sha256, "passed": run.passed},
            "created_at": alert.created_at.isoformat()}


def _record(alert_id: str, **values) -> None:
    with session_scope() as s:
        s.execute(update(Alert).where(Alert.id == alert_id).values(**values))


@celery_app.task(name="fairsolve.deliver_alert", bind=True, autoretry_for=(WebhookFailed,),
                 retry_backoff=settings.audit_webhook_backoff_s, retry_backoff_max=600, retry_jitter=False,
                 max_retries=settings.audit_webhook_retries)
def deliver_alert(self, alert_id: str) -> str:
    with session_scope() as s:
        alert = s.get(Alert, alert_id)
        if alert is None or alert.webhook_status == "delivered":
            return "skipped"
        audit, run = s.get(Audit, alert.audit_id), s.get(AuditRun, alert.run_id)
        url, payload = audit.webhook_url, alert_payload(alert, audit, run)
        s.execute(update(Alert).where(Alert.id == alert_id).values(webhook_attempts=Alert.webhook_attempts + 1))
    if not url:
        _record(alert_id, webhook_status="none")
        return "skipped"
    try:
        check_destination(url, settings.webhook_allow_private)
    except WebhookRefused as exc:  # not retried: the address will not become public
        _record(alert_id, webhook_status="failed", webhook_last_error=str(exc))
        return "refused"
    try:
        response = httpx.post(url, json=payload, timeout=10, follow_redirects=False)
        error = None if 200 <= response.status_code < 300 else f"HTTP {response.status_code}"
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"
    if error is None:
        _record(alert_id, webhook_status="delivered", delivered_at=utcnow(), webhook_last_error=None)
        return "delivered"
    final = self.request.retries >= self.max_retries
    _record(alert_id, webhook_status="failed" if final else "retrying", webhook_last_error=error)
    raise WebhookFailed(f"webhook for alert {alert_id}: {error}")

"""An audit run's lifecycle in the database: the schedule's trigger, start and fencing, the run, its report, its alert.

The Celery tasks of :mod:`worker.audits` call these; the computation itself is :mod:`app.audits.compute`, in a
child process. Read top-down, an audit goes :func:`trigger_due` (beat) → :func:`run` (claim in :func:`_inputs`,
compute in the child while :func:`_beat` holds the run, store in :func:`_store`, with its alert) →
:func:`deliver` (the alert's webhook).

* ``trigger_due`` (Celery beat's ``trigger_due_audits``, every ``FAIRSOLVE_AUDIT_TRIGGER_EVERY_S``): every enabled
  audit whose ``next_run_at`` has passed is claimed with a compare-and-set on ``next_run_at`` (``UPDATE ...
  WHERE next_run_at = <the value read>``): of two beats, a redelivered trigger or a retry, exactly one
  moves it to the next cron time and creates the run, in the same transaction; the run is then sent.
  Missed times (downtime) give one run, not a burst. Audits are read from the database at every tick,
  so audits created or changed through the API take effect without a restart.
* ``run(run_id)`` (task ``run_audit``, queue ``audits``, consumed by workers of its own): ``queued → running`` is
  again a compare-and-set that also counts the start (``starts``, the start's fence token), so a duplicate message
  does nothing. In a child process under a hard time and memory limit (:mod:`app.core.sandbox`) it computes the
  report (:mod:`app.audits.compute`). The report is stored with one
  ``UPDATE ... WHERE starts = :fence AND status = 'running'``, and on a breach an :class:`~app.models.Alert` is
  created in the same transaction and its webhook sent: a start superseded meanwhile writes nothing, creates no
  alert and sends nothing (and its child is killed as soon as the worker sees it superseded).
  While the child computes, the start beats ``heartbeat_at`` (fenced: a beat that finds the run held by
  another start stops the child).
* ``requeue_lost_runs`` (with the trigger): a run ``running`` with no heartbeat for ``FAIRSOLVE_STALE_AFTER_S``
  lost its worker; it is re-queued as a new start (or failed after ``FAIRSOLVE_MAX_ATTEMPTS`` starts).
* ``deliver(alert_id)`` (task ``deliver_alert``): POSTs the alert JSON (httpx) with Celery's autoretry: exponential
  back-off from ``FAIRSOLVE_AUDIT_WEBHOOK_BACKOFF_S`` (capped at 600 s), at most ``FAIRSOLVE_AUDIT_WEBHOOK_RETRIES``
  retries; every attempt, its failure and the final status are recorded on the alert.
"""

from __future__ import annotations

import logging
import traceback
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import func, select, update

from app.audits.compute import compute, local_files
from app.audits.model import ModelError
from app.audits.runs import active_runs, new_run, next_run_at, send_alert, send_run
from app.audits.sources import SourceError
from app.audits.webhooks import WebhookRefused, check_destination
from app.core.db import session_scope
from app.core.sandbox import ChildError, Limited, run_limited
from app.core.settings import get_settings
from app.models import Alert, Artifact, Audit, AuditRun, Dataset, Job, UploadedModel, utcnow
from solvers import SpecError

log = logging.getLogger(__name__)
settings = get_settings()

def trigger_due() -> list[str]:
    """Claim every due audit once (compare-and-set on ``next_run_at``) and send its run; the audits of an owner
    already at ``FAIRSOLVE_MAX_ACTIVE_AUDIT_RUNS`` stay due until a later tick finds the owner below it."""
    now = utcnow()
    with session_scope() as s:
        due = s.execute(select(Audit.id, Audit.owner, Audit.schedule, Audit.next_run_at).where(
            Audit.enabled.is_(True), Audit.schedule.is_not(None), Audit.next_run_at <= now)).all()
    runs = []
    for audit_id, owner, schedule, due_at in due:
        with session_scope() as s:
            if active_runs(s, owner) >= settings.max_active_audit_runs:
                continue
            claimed = s.execute(update(Audit).where(Audit.id == audit_id, Audit.next_run_at == due_at)
                                .values(next_run_at=next_run_at(schedule, True, now))).rowcount == 1
            if claimed:
                run = new_run(audit_id=audit_id, owner=owner, trigger="schedule")
                s.add(run)
                runs.append(run.id)
    for run_id in runs:
        send_run(run_id)
    requeue_lost_runs(now)
    return runs


def requeue_lost_runs(now) -> list[str]:
    """Runs still ``running`` whose heartbeat (else start) is ``FAIRSOLVE_STALE_AFTER_S`` old lost their worker (a
    live start beats it every :func:`beat_interval` while its child computes): each is re-queued as a new start
    and sent, or failed once it was started ``FAIRSOLVE_MAX_ATTEMPTS`` times. Each change is guarded by the start
    token read, so a run that ended or started again meanwhile is left alone."""
    cutoff = now - timedelta(seconds=settings.stale_after_s)
    last_sign = func.coalesce(AuditRun.heartbeat_at, AuditRun.started_at)
    with session_scope() as s:
        lost = s.execute(select(AuditRun.id, AuditRun.starts).where(AuditRun.status == "running",
                                                                    last_sign < cutoff)).all()
    requeued = []
    for run_id, starts in lost:
        with session_scope() as s:
            guard = held(run_id, starts)
            if starts >= settings.max_attempts:
                s.execute(update(AuditRun).where(guard).values(
                    status="failed", finished_at=now,
                    error=f"worker lost: no heartbeat for {settings.stale_after_s:g} s, after {starts} starts"))
            elif s.execute(update(AuditRun).where(guard).values(status="queued")).rowcount == 1:
                requeued.append(run_id)
    for run_id in requeued:
        log.warning("audit run %s: its worker was lost; re-queued", run_id)
        send_run(run_id)
    return requeued


def held(run_id: str, fence: int):
    """The SQL condition that the start holding ``fence`` still holds the run."""
    return (AuditRun.id == run_id) & (AuditRun.starts == fence) & (AuditRun.status == "running")


class StaleRun(Exception):
    """This start of the run was superseded (re-queued as lost and started again, or ended by another)."""


def run(run_id: str) -> str:
    """Claim the run, compute its report in a child process under ``FAIRSOLVE_AUDIT_TIME_LIMIT_S`` and
    ``FAIRSOLVE_AUDIT_MEMORY_BYTES`` (:mod:`app.core.sandbox`; stopped as soon as another start holds the run), and
    store it as this start (:func:`_store`). Every failure fails the run with its message; Celery's
    ``time_limit`` is the last resort should the worker itself hang."""
    inputs = _inputs(run_id)
    if inputs is None:
        return "skipped"
    fence = inputs["fence"]
    try:
        files = local_files(inputs)
        out = run_limited(lambda: compute(inputs, files), time_s=settings.audit_time_limit_s,
                          memory_bytes=settings.audit_memory_bytes, still_wanted=lambda: _beat(run_id, fence),
                          poll_s=beat_interval(settings.stale_after_s),
                          expected=(ModelError, SourceError, SpecError, ValueError))
    except Limited as exc:
        if exc.reason == "cancelled":
            log.warning("audit run %s: start %s was superseded; stopped", run_id, fence)
            return "stale"
        setting = {"time": "FAIRSOLVE_AUDIT_TIME_LIMIT_S", "memory": "FAIRSOLVE_AUDIT_MEMORY_BYTES"}.get(exc.reason)
        return _fail(run_id, fence, f"{exc}" + (f" ({setting})" if setting else ""))
    except ChildError as exc:
        return _fail(run_id, fence, str(exc) if exc.expected else f"{exc.kind}: {exc}")
    except (ModelError, SourceError, SpecError, ValueError) as exc:
        return _fail(run_id, fence, str(exc))
    except Exception as exc:  # an audit error fails the run, never the worker
        log.error("audit run %s failed:\n%s", run_id, traceback.format_exc())
        return _fail(run_id, fence, f"{type(exc).__name__}: {exc}")
    try:
        alert_id, breached = _store(run_id, fence, inputs, out)
    except StaleRun:
        log.warning("audit run %s: start %s was superseded; its report is not stored", run_id, fence)
        return "stale"
    except Exception as exc:  # e.g. the database refused a value: the run fails with the reason, now
        log.error("audit run %s: storing its report failed:\n%s", run_id, traceback.format_exc())
        return _fail(run_id, fence, f"the report could not be stored: {type(exc).__name__}: {exc}")
    if alert_id is not None:
        send_alert(alert_id)
    return "breached" if breached else "passed"


def _inputs(run_id: str) -> dict[str, Any] | None:
    """Claim the run (``queued → running``, ``starts`` + 1: this start's fence token) and read what it needs;
    None when it is not queued."""
    with session_scope() as s:
        if s.execute(update(AuditRun).where(AuditRun.id == run_id, AuditRun.status == "queued")
                     .values(status="running", started_at=utcnow(), heartbeat_at=utcnow(),
                             starts=AuditRun.starts + 1)).rowcount != 1:
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
        return {"run": run, "fence": run.starts, "audit": audit, "job": job, "weights": weights,
                "previous": previous, "baseline": baseline,
                "training": s.get(Dataset, job.dataset_id) if job is not None else None,
                "uploaded": s.get(UploadedModel, audit.model_artifact_id) if audit.model_artifact_id else None,
                "dataset": s.get(Dataset, audit.dataset_id) if audit.dataset_id else None}


def beat_interval(stale_after_s: float) -> float:
    """Seconds between a start's heartbeats: a quarter of the stale period, at most 15 s (three beats in a row
    must be missed before the run is taken for lost)."""
    return min(stale_after_s / 4, 15.0)


def _beat(run_id: str, fence: int) -> bool:
    """Beat the run's heartbeat as start ``fence``; False when another start holds the run (the child is then
    stopped). A beat the database refuses is logged and counts as alive: the next one retries."""
    try:
        with session_scope() as s:
            return s.execute(update(AuditRun).where(held(run_id, fence)).values(heartbeat_at=utcnow())).rowcount == 1
    except Exception as exc:
        log.warning("audit run %s: heartbeat failed: %s", run_id, exc)
        return True


def _fail(run_id: str, fence: int, error: str) -> str:
    """End the run as start ``fence`` with ``error`` (NUL written as text: PostgreSQL's text cannot hold it)."""
    with session_scope() as s:
        ended = s.execute(update(AuditRun).where(held(run_id, fence)).values(
            status="failed", error=error.replace("\x00", "\\x00")[:4000], finished_at=utcnow())).rowcount == 1
    return "failed" if ended else "stale"


def _store(run_id: str, fence: int, inputs: dict[str, Any], out: dict[str, Any]) -> tuple[str | None, bool]:
    """The report written as start ``fence`` (one guarded UPDATE: :class:`StaleRun` when another start holds the
    run), and on a breach of a metric the previous run did not breach (:func:`newly_breached`) its alert, in the
    same transaction: ``(alert id to send, breached)``."""
    audit, previous, report = inputs["audit"], inputs["previous"], out["report"]
    with session_scope() as s:
        if s.execute(update(AuditRun).where(held(run_id, fence)).values(
                status="succeeded", finished_at=utcnow(), error=None, data_sha256=out["sha256"],
                n_rows=out["n_rows"], results=report["results"], breached=report["breached"],
                passed=report["passed"], group_sizes=report["group_sizes"],
                previous_run_id=previous.id if previous is not None else None,
                score_summary=out["summary"], score_drift=out["drift"])).rowcount != 1:
            raise StaleRun(run_id)
        if not report["breached"]:
            return None, False
        opened = newly_breached(report["breached"], previous)   # one open alert per audit and metric
        if not opened:
            return None, True
        breached = [{k: r.get(k) for k in ("key", "value", "ci", "threshold", "direction", "noise_floor")}
                    for r in report["results"] if r["passed"] is False and r["key"] in opened]
        alert = Alert(owner=audit.owner, audit_id=audit.id, run_id=run_id, breached=breached,
                      message=breach_message(audit.name, breached),
                      webhook_status="pending" if audit.webhook_url else "none", webhook_attempts=0)
        s.add(alert)
        s.flush()
        return (alert.id if audit.webhook_url else None), True


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


def deliver(alert_id: str, final: bool) -> str:
    """POST the alert to its audit's webhook and record the attempt on it; :class:`WebhookFailed` (retried by the
    task) on an answer other than 2xx, the alert recorded ``failed`` when this was the ``final`` attempt."""
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
    _record(alert_id, webhook_status="failed" if final else "retrying", webhook_last_error=error)
    raise WebhookFailed(f"webhook for alert {alert_id}: {error}")


def _record(alert_id: str, **values) -> None:
    with session_scope() as s:
        s.execute(update(Alert).where(Alert.id == alert_id).values(**values))

"""SQLAlchemy ORM models: API keys, datasets, sweeps, jobs, trajectory points, artifacts, idempotency records,
unconstrained baselines.

Every resource a caller creates carries its ``owner`` (the owner of the API key); artifacts and
trajectory points belong to their job's owner.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

JSONType = JSON().with_variant(JSONB(), "postgresql")
NullableJSON = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")  # None is SQL NULL


def new_id() -> str:
    return uuid.uuid4().hex


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    pass


class ApiKey(Base):
    """An API key, stored as the SHA-256 of the key; ``hint`` is its first characters, for lists."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner: Mapped[str] = mapped_column(String(255), index=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    hint: Mapped[str] = mapped_column(String(16))
    admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class DashboardSession(Base):
    """A dashboard sign-in: the SHA-256 of the session id held in the cookie, mapped to the key it was opened with
    (see :mod:`app.auth.sessions`)."""

    __tablename__ = "dashboard_sessions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    key_id: Mapped[str] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class IdempotencyRecord(Base):
    """The first response to a POST that carried ``Idempotency-Key``; retries get it back."""

    __tablename__ = "idempotency_records"
    __table_args__ = (UniqueConstraint("owner", "key", name="uq_idempotency_owner_key"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner: Mapped[str] = mapped_column(String(255))
    key: Mapped[str] = mapped_column(String(255))
    route: Mapped[str] = mapped_column(String(64))
    request_sha256: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int] = mapped_column(Integer)
    response: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Dataset(Base):
    """An uploaded table: the stored file (name chosen by the server), its inferred schema and hash."""

    __tablename__ = "datasets"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner: Mapped[str] = mapped_column(String(255), index=True)
    name: Mapped[str] = mapped_column(String(255))
    original_filename: Mapped[str | None] = mapped_column(String(255))
    format: Mapped[str] = mapped_column(String(16))  # csv | parquet
    read_options: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    stored_name: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    n_rows: Mapped[int] = mapped_column(Integer)
    n_columns: Mapped[int] = mapped_column(Integer)
    columns: Mapped[list[dict[str, Any]]] = mapped_column(JSONType)
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSONType)  # per-column statistics, computed at upload
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Sweep(Base):
    """A grid of jobs (tolerances × solvers × seeds × params) over one base spec."""

    __tablename__ = "sweeps"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner: Mapped[str] = mapped_column(String(255), index=True)
    dataset_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="RESTRICT"), index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSONType)
    n_jobs: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Job(Base):
    """One constrained solve: the validated spec, its life cycle, progress and final metrics."""

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner: Mapped[str] = mapped_column(String(255), index=True)
    dataset_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="RESTRICT"), index=True)
    sweep_id: Mapped[str | None] = mapped_column(ForeignKey("sweeps.id", ondelete="CASCADE"), index=True)
    sweep_point: Mapped[dict[str, Any] | None] = mapped_column(JSONType)  # solver, params, tolerance, seed
    warm_start_from: Mapped[str | None] = mapped_column(String(32))  # job whose weights start this one
    spec: Mapped[dict[str, Any]] = mapped_column(JSONType)
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    queue: Mapped[str] = mapped_column(String(16), default="cpu")
    progress: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    metrics: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    error: Mapped[str | None] = mapped_column(Text)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    worker: Mapped[str | None] = mapped_column(String(255))
    device: Mapped[str | None] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # the delivery attempt now accepted (see worker)
    starts: Mapped[int] = mapped_column(Integer, default=0)  # times a worker started it (redeliveries included)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # when the job's current message was committed for sending (see worker.tasks.resend_lost_jobs)
    dispatched_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=utcnow)


class TrajectoryPoint(Base):
    """One iterate's record; written in batches by the worker, read back downsampled."""

    __tablename__ = "trajectory_points"

    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    iteration: Mapped[int] = mapped_column(Integer, primary_key=True)
    elapsed_s: Mapped[float] = mapped_column(Float)
    samples_seen: Mapped[int] = mapped_column(BigInteger)
    objective: Mapped[float | None] = mapped_column(Float)
    max_violation: Mapped[float | None] = mapped_column(Float)
    constraints: Mapped[list[float]] = mapped_column(JSONType)
    duals: Mapped[dict[str, list[float]] | None] = mapped_column(JSONType)
    exact: Mapped[dict[str, list[float | None]] | None] = mapped_column(NullableJSON)  # every few iterations


class Baseline(Base):
    """The unconstrained (``erm``) model on one dataset, split, features, target, groups, model and objective,
    computed once and shown beside every job on them. ``key`` (unique) is the SHA-256 of those spec fields
    (:mod:`app.jobs.baselines`); ``result``: per split accuracy, balanced accuracy, AUC, and the exact fairness
    report of the job spec's constraints."""

    __tablename__ = "baselines"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    key: Mapped[str] = mapped_column(String(64), unique=True)
    dataset_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSONType)  # the ERM problem spec that runs
    status: Mapped[str] = mapped_column(String(16), default="queued")  # queued | running | succeeded | failed
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Artifact(Base):
    """A file a job produced: model weights (safetensors) or test predictions (parquet)."""

    __tablename__ = "artifacts"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    stored_name: Mapped[str] = mapped_column(String(128))
    media_type: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class UploadedModel(Base):
    """A model uploaded for audits: an audit model file (safetensors weights + spec + fitted encoder)."""

    __tablename__ = "uploaded_models"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner: Mapped[str] = mapped_column(String(255), index=True)
    name: Mapped[str] = mapped_column(String(255))
    stored_name: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    spec: Mapped[dict[str, Any]] = mapped_column(JSONType)  # the problem spec the model was trained under
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Audit(Base):
    """A scheduled re-check of a job's model on a dataset (or an allow-listed source) against metric thresholds."""

    __tablename__ = "audits"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner: Mapped[str] = mapped_column(String(255), index=True)
    name: Mapped[str] = mapped_column(String(255))
    job_id: Mapped[str | None] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    model_artifact_id: Mapped[str | None] = mapped_column(ForeignKey("uploaded_models.id", ondelete="CASCADE"),
                                                          index=True)  # an uploaded model, when job_id is None
    dataset_id: Mapped[str | None] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    source: Mapped[str | None] = mapped_column(String(2048))  # a server path or URL on FAIRSOLVE_AUDIT_SOURCES
    # a prediction log's columns (app.audits.logs.PredictionLog) when neither job_id nor model_artifact_id is set
    predictions: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    baseline_run_id: Mapped[str | None] = mapped_column(String(32))  # the pinned run score drift is measured against
    metrics: Mapped[list[dict[str, Any]]] = mapped_column(JSONType)  # [{type, threshold, ...options}]
    schedule: Mapped[str | None] = mapped_column(String(255))  # cron, UTC; None = runs only when asked
    webhook_url: Mapped[str | None] = mapped_column(String(2048))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    next_run_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class AuditRun(Base):
    """One evaluation of an audit: the data's hash, every metric with its CI, pass/fail and drift."""

    __tablename__ = "audit_runs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner: Mapped[str] = mapped_column(String(255), index=True)
    audit_id: Mapped[str] = mapped_column(ForeignKey("audits.id", ondelete="CASCADE"), index=True)
    trigger: Mapped[str] = mapped_column(String(16))  # schedule | manual
    status: Mapped[str] = mapped_column(String(16), default="queued")  # queued | running | succeeded | failed
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # beaten while it runs
    data_sha256: Mapped[str | None] = mapped_column(String(64))
    n_rows: Mapped[int | None] = mapped_column(Integer)
    group_sizes: Mapped[dict[str, int] | None] = mapped_column(JSONType)
    results: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType)
    previous_run_id: Mapped[str | None] = mapped_column(String(32))
    score_summary: Mapped[dict[str, Any] | None] = mapped_column(JSONType)  # per-group score quantiles (drift)
    score_drift: Mapped[dict[str, Any] | None] = mapped_column(JSONType)  # KS / PSI vs the previous and baseline run
    breached: Mapped[list[str] | None] = mapped_column(JSONType)
    passed: Mapped[bool | None] = mapped_column(Boolean)
    error: Mapped[str | None] = mapped_column(Text)
    starts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # the current start's fence token


class Alert(Base):
    """A breached audit run, and the delivery of its webhook."""

    __tablename__ = "alerts"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner: Mapped[str] = mapped_column(String(255), index=True)
    audit_id: Mapped[str] = mapped_column(ForeignKey("audits.id", ondelete="CASCADE"), index=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("audit_runs.id", ondelete="CASCADE"), unique=True)
    message: Mapped[str] = mapped_column(Text)
    breached: Mapped[list[dict[str, Any]]] = mapped_column(JSONType)
    webhook_status: Mapped[str] = mapped_column(String(16), default="none")  # none|pending|retrying|delivered|failed
    webhook_attempts: Mapped[int] = mapped_column(Integer, default=0)
    webhook_last_error: Mapped[str | None] = mapped_column(Text)
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

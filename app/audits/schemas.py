"""Request and response bodies of ``/api/v1/audits`` and ``/api/v1/alerts``."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .logs import PredictionLog
from .metrics import MetricSpec
from .schedule import next_run


def _cron(value: str | None) -> str | None:
    if value is not None:
        value = " ".join(value.split())
        next_run(value, datetime.now(timezone.utc))  # ValueError names the problem
    return value


def _webhook(value: str | None) -> str | None:
    if value is not None:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("an http(s) URL")
    return value


class AuditCreate(BaseModel):
    """An audit of a job's or an uploaded model, or of a prediction log (exactly one of ``job_id`` /
    ``model_artifact_id`` / ``predictions``) on exactly one of ``dataset_id`` / ``source``; ``schedule`` None =
    run on demand only."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=255)
    job_id: str | None = Field(None, description="A succeeded job of the caller whose model is audited.")
    model_artifact_id: str | None = Field(None, description="An uploaded model of the caller (POST /api/v1/models); "
                                          "give it or job_id.")
    predictions: PredictionLog | None = Field(None, description="The data already holds a model's output: "
                                              "audit it as a prediction log (no model is run).")
    dataset_id: str | None = Field(None, description="One of the caller's datasets.")
    source: str | None = Field(None, max_length=2048, description="A server file path or http(s) URL under "
                               "FAIRSOLVE_AUDIT_SOURCES, re-read at each run.")
    metrics: list[MetricSpec] = Field(min_length=1, max_length=50, description="[{type, threshold, ...options}]; "
                                      "see GET /api/v1/audits/metrics.")
    schedule: str | None = Field(None, max_length=255, description="Cron expression (5 fields, UTC).")
    webhook_url: str | None = Field(None, max_length=2048, description="Breaches are POSTed here as JSON.")
    enabled: bool = True

    _schedule = field_validator("schedule")(classmethod(lambda cls, v: _cron(v)))
    _url = field_validator("webhook_url")(classmethod(lambda cls, v: _webhook(v)))


class AuditUpdate(BaseModel):
    """Fields to change (absent fields are kept; ``schedule: null`` stops the schedule)."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=255)
    metrics: list[MetricSpec] | None = Field(None, min_length=1, max_length=50)
    schedule: str | None = Field(None, max_length=255)
    webhook_url: str | None = Field(None, max_length=2048)
    enabled: bool | None = None

    _schedule = field_validator("schedule")(classmethod(lambda cls, v: _cron(v)))
    _url = field_validator("webhook_url")(classmethod(lambda cls, v: _webhook(v)))


class RunSummary(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    status: str
    passed: bool | None
    breached: list[str] | None
    created_at: datetime
    finished_at: datetime | None


class AuditOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    job_id: str | None
    model_artifact_id: str | None
    predictions: dict[str, Any] | None = None
    dataset_id: str | None
    source: str | None
    baseline_run_id: str | None = None
    metrics: list[dict[str, Any]]
    schedule: str | None
    webhook_url: str | None
    enabled: bool
    next_run_at: datetime | None
    created_at: datetime
    last_run: RunSummary | None = None


class RunOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    audit_id: str
    trigger: str
    status: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    data_sha256: str | None
    n_rows: int | None
    group_sizes: dict[str, int] | None
    results: list[dict[str, Any]] | None
    previous_run_id: str | None
    score_drift: dict[str, Any] | None = None
    breached: list[str] | None
    passed: bool | None
    error: str | None


class BaselinePin(BaseModel):
    """The run score drift is measured against from now on (a succeeded run of the same audit)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(max_length=32)


class AlertOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    audit_id: str
    run_id: str
    message: str
    breached: list[dict[str, Any]]
    webhook_status: str
    webhook_attempts: int
    webhook_last_error: str | None
    delivered_at: datetime | None
    created_at: datetime

"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import Response
from pydantic import BaseModel, ConfigDict, Field

from solvers import ProblemSpec


class ColumnInfo(BaseModel):
    name: str
    dtype: str
    n_distinct: int
    n_missing: int
    examples: list[Any]


class DatasetOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    format: str
    n_rows: int
    n_columns: int
    size_bytes: int
    sha256: str
    columns: list[ColumnInfo]
    read_options: dict[str, Any] = Field(default_factory=dict, description="How the file is read: delimiter, "
                                         "header, column_names, missing_values; warnings about the upload.")
    created_at: datetime


class DatasetDetail(DatasetOut):
    summary: dict[str, Any] = Field(description="Per-column summary statistics.")


class JobCreate(ProblemSpec):
    """A job: a dataset and the problem to solve on it (see ``GET /api/v1/solvers``)."""

    dataset_id: str


class JobOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    dataset_id: str
    status: str
    queue: str
    progress: dict[str, Any]
    metrics: dict[str, Any] | None
    result: dict[str, Any] | None
    error: str | None
    device: str | None
    worker: str | None
    attempts: int
    starts: int
    spec: dict[str, Any]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    artifacts: list[dict[str, Any]] = []


class TrajectoryPointOut(BaseModel):
    iteration: int
    elapsed_s: float
    samples_seen: int
    objective: float | None
    max_violation: float | None
    constraints: list[float]
    duals: dict[str, list[float]] | None


class TrajectoryOut(BaseModel):
    job_id: str
    total_points: int
    constraint_names: list[str]
    tolerances: list[float]
    points: list[TrajectoryPointOut]


def json_response(body: bytes) -> Response:
    """A body already validated and serialised by its model: the route's ``response_model`` (kept for the OpenAPI
    document) would validate and serialise it again."""
    return Response(body, media_type="application/json")

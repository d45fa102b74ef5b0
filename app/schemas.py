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


def problem_fields(job_spec: dict[str, Any]) -> dict[str, Any]:
    """A stored job spec's :class:`ProblemSpec` fields: without ``dataset_id`` and the notes stored beside the spec
    at submission (e.g. ``feature_screen``), which a strict ProblemSpec refuses."""
    return {k: v for k, v in job_spec.items() if k in ProblemSpec.model_fields}


def problem_spec(job_spec: dict) -> ProblemSpec:
    """A job's stored spec (the API body, plus the notes stored beside it) as the library's :class:`ProblemSpec`."""
    return ProblemSpec.model_validate(problem_fields(job_spec))


class JobCreate(ProblemSpec):
    """A job: a dataset and the problem to solve on it (see ``GET /api/v1/solvers``)."""

    dataset_id: str


class SplitFairness(BaseModel):
    """One constraint's exact metric on one split, its 95 % confidence interval and whether it keeps the tolerance."""

    model_config = ConfigDict(extra="allow")

    value: float | None = None
    ci: list[float | None] | None = None
    kept: bool | None = None


class ConstraintFairness(BaseModel):
    """The promise of one constraint: its exact metric on train, validation and test, against ``tolerance``."""

    model_config = ConfigDict(extra="allow")

    type: str
    tolerance: float | None = None
    train: SplitFairness | None = None
    validation: SplitFairness | None = None
    test: SplitFairness | None = None
    test_upper_95: float | None = None
    kept_on_test: bool | None = None
    test_noise_floor: dict[str, Any] | None = Field(
        None, description="What the test split can show (demographic parity, equal opportunity, equalized odds): "
        "keep_probability, the chance that a model with no gap on the population keeps the tolerance on a test split "
        "of these group sizes at this model's rates; expected_gap, its mean test gap (solvers.fairness.report).")


class TriedCandidate(BaseModel):
    """One candidate of the ``auto`` solver: what it ran and how it did on the split it was judged on."""

    model_config = ConfigDict(extra="allow")

    solver: str | None = None
    params: dict[str, Any] = {}
    accuracy: float | None = Field(None, description="Accuracy on the judging (validation) split.")
    gaps: list[float | None] | None = Field(None, description="Exact value of each constraint on that split.")
    seconds: float | None = None
    outcome: str | None = Field(None, description="meets | violates | near_constant | diverged | error")
    selected: bool | None = None


class JobResult(BaseModel):
    """A finished job's result: the solve's summary, and what it promised and kept."""

    model_config = ConfigDict(extra="allow")

    iterations: int | None = None
    solver_time_s: float | None = None
    stop_reason: str | None = None
    constraint_names: list[str] = []
    tolerances: list[float] = []
    fairness: list[ConstraintFairness] = Field(
        [], description="One entry per constraint: the exact metric per split with its 95 % CI, kept or not.")
    warnings: list[str] = Field([], description="Near-trivial model, validation metric over its tolerance, ...")
    enforcement: dict[str, Any] | None = Field(None, description="How the exact constraint was enforced, if it was.")
    guarantee: dict[str, Any] | None = Field(None, description="The high-confidence guarantee, when asked: "
                                             "confidence, met, best_bound, message.")
    tried: list[TriedCandidate] = Field([], description="The candidates the auto solver tried.")
    promise: dict[str, Any] | None = Field(None, description="What the job promises about the population, in words: "
                                           "{kind: guarantee | estimate | not certified | not kept | none, sentence}.")


class BaselineOut(BaseModel):
    """The unconstrained (erm) model on the same data and split (shared by every such job)."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    status: str
    result: dict[str, Any] | None = None
    error: str | None = None


class JobOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    dataset_id: str
    status: str
    queue: str
    progress: dict[str, Any]
    metrics: dict[str, Any] | None
    result: JobResult | None
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
    baseline: BaselineOut | None = None


class TrajectoryPointOut(BaseModel):
    iteration: int
    elapsed_s: float
    samples_seen: int
    objective: float | None
    max_violation: float | None
    constraints: list[float]
    duals: dict[str, list[float]] | None


class ExactPointOut(BaseModel):
    """The exact value of each constraint family (``exact_names``) on train and validation at one iteration."""

    iteration: int
    elapsed_s: float
    train: list[float | None]
    validation: list[float | None] | None = None


class TrajectoryOut(BaseModel):
    job_id: str
    total_points: int
    constraint_names: list[str]
    tolerances: list[float]
    points: list[TrajectoryPointOut]
    exact_names: list[str] = []
    exact_tolerances: list[float] = []
    exact: list[ExactPointOut] = []


def json_response(body: bytes) -> Response:
    """A body already validated and serialised by its model: the route's ``response_model`` (kept for the OpenAPI
    document) would validate and serialise it again."""
    return Response(body, media_type="application/json")

"""The audit model file's metadata, read without torch (what the API needs to check an audit).

An audit model file is safetensors whose metadata carries ``fairsolve_audit_model`` (the format
version), ``spec`` (the job's problem spec, JSON), ``encoder`` (the fitted
:class:`~solvers.encoding.TableEncoder`, JSON), ``groups`` and ``job_id``
(:mod:`app.audits.model` reads the weights and scores tables with it).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator
from safetensors import SafetensorError, safe_open

from app.schemas import problem_spec  # noqa: F401 - read with the file (app.audits.model, app.audits.export)
from app.core.strict_json import strict_loads
from solvers import ProblemSpec
from solvers.encoding import TableEncoder
from solvers.spec import MAX_GBDT_TEXT_BYTES, MAX_PARAMETERS

FORMAT_KEY, FORMAT_VERSION = "fairsolve_audit_model", "1"


class ModelError(ValueError):
    """The model cannot be loaded or applied; the message says why."""


def read_metadata(path: Path) -> dict[str, str]:
    """The file's audit metadata (ModelError when it is not an audit model file); no tensor is read."""
    try:
        with safe_open(str(path), framework="numpy") as fh:
            meta = fh.metadata() or {}
    except (OSError, SafetensorError) as exc:
        raise ModelError(f"--model: not a safetensors file: {exc}") from exc
    if meta.get(FORMAT_KEY) != FORMAT_VERSION or "encoder" not in meta or "spec" not in meta:
        raise ModelError("--model: a safetensors file without the audit metadata (spec, encoder); download "
                         "the job's audit model from GET /api/v1/jobs/{job_id}/audit-model")
    return meta


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    column: str


class _Categorical(_Step):
    kind: Literal["categorical"]
    categories: list[str | bool | int | float | None]


class _Binary(_Step):
    kind: Literal["binary"]


class _Numeric(_Step):
    kind: Literal["numeric"]
    median: float
    mean: float
    std: float = Field(gt=0)
    missing_indicator: bool


class EncoderState(BaseModel):
    """The shape :meth:`TableEncoder.to_dict` writes; what the header must hold before the encoder is built."""

    model_config = ConfigDict(extra="forbid")
    columns: list[str]
    plan: list[Annotated[_Categorical | _Binary | _Numeric, Field(discriminator="kind")]]

    @model_validator(mode="after")
    def _plan_reads_its_columns(self) -> "EncoderState":
        if [p.column for p in self.plan] != self.columns:
            raise ValueError("the plan must encode exactly the listed columns, in order")
        return self


GROUPS = TypeAdapter(list[str])


def _json_field(meta: dict[str, str], name: str, check: Any) -> Any:
    """Metadata field ``name`` read as strict JSON and validated by ``check``; ModelError naming it otherwise
    (bad JSON, NaN or Infinity, the wrong shape)."""
    try:
        return check(strict_loads(meta[name]))
    except (ValueError, TypeError, AttributeError, KeyError) as exc:  # JSON and pydantic errors are ValueErrors
        reason = str(exc).splitlines()
        raise ModelError(f"--model: the metadata's {name!r} is malformed: {' '.join(reason[:3])}"[:400]) from exc


def spec_and_encoder(meta: dict[str, str]) -> tuple[ProblemSpec, TableEncoder]:
    spec = _json_field(meta, "spec", problem_spec)
    state = _json_field(meta, "encoder", EncoderState.model_validate)
    return spec, TableEncoder.from_dict(state.model_dump())


def groups(meta: dict[str, str]) -> list[str]:
    return _json_field({"groups": "[]", **meta}, "groups", GROUPS.validate_python)


def required_columns(spec: ProblemSpec, encoder: TableEncoder) -> list[str]:
    """The columns a model reads: target, sensitive columns, then the encoder's features."""
    return list(dict.fromkeys([spec.target, *spec.sensitive, *encoder.columns]))


def labelled_groups(spec: ProblemSpec, required: list[str], table) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Labels y, group index and group names of every row of ``table`` for a model that reads ``required``
    (ModelError on a missing column or no rows; SpecError when the positive label never matches)."""
    from solvers.encoding import build_groups
    from solvers.spec import labels_of

    if spec.overlapping_groups is not None:  # an audit's groups are a partition (its metrics and reports)
        raise ModelError("the model was trained on overlapping groups; audits need a partition of groups "
                         "(sensitive columns)")
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise ModelError(f"the data lacks the model's column(s) {', '.join(map(repr, missing))}")
    if len(table) == 0:
        raise ModelError("the data has no rows")
    group, names = build_groups(table, spec.sensitive, spec.group_rules)
    y = labels_of(spec, table)
    return np.asarray(y, np.int64), np.asarray(group, np.int64), [str(n) for n in names]


def model_columns(path: Path) -> list[str]:
    """The columns the audit model in ``path`` reads (ModelError when the file is not one)."""
    return required_columns(*spec_and_encoder(read_metadata(path)))


def check_size(path: Path, spec: ProblemSpec, encoder: TableEncoder) -> None:
    """ModelError when the model would be too large to build or apply: an encoder wider than the
    solver library's cap (one-hot categories included), a model of more than ``MAX_PARAMETERS``
    parameters on the encoder's width, or stored tensors of more elements than that (a gbdt model: more bytes of
    LightGBM text than ``MAX_GBDT_TEXT_BYTES``). Only the header is read (tensor shapes), so this runs before any
    weight or model is allocated."""
    if (problem := encoder.width_problem()) is not None:
        raise ModelError(f"--model: the encoder is too wide: {problem}")
    if (n := spec.model.parameter_count(encoder.n_features)) > MAX_PARAMETERS:
        raise ModelError(f"--model: the spec's {spec.model.type} model on {encoder.n_features} encoded features has "
                         f"{n} parameters (more than {MAX_PARAMETERS})")
    try:
        with safe_open(str(path), framework="numpy") as fh:
            stored = sum(math.prod(fh.get_slice(name).get_shape()) for name in fh.keys())
    except (OSError, SafetensorError) as exc:
        raise ModelError(f"--model: not a safetensors file: {exc}") from exc
    limit = MAX_GBDT_TEXT_BYTES if spec.model.type == "gbdt" else MAX_PARAMETERS
    if stored > limit:
        raise ModelError(f"--model: the file stores {stored} weights (more than {limit})")

"""The audit model file's metadata, read without torch (what the API needs to check an audit).

An audit model file is safetensors whose metadata carries ``fairsolve_audit_model`` (the format
version), ``spec`` (the job's problem spec, JSON), ``encoder`` (the fitted
:class:`~solvers.encoding.TableEncoder`, JSON), ``groups`` and ``job_id``
(:mod:`app.audits.model` reads the weights and scores tables with it).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from safetensors import SafetensorError, safe_open

from solvers import ProblemSpec
from solvers.encoding import TableEncoder
from solvers.spec import MAX_PARAMETERS

FORMAT_KEY, FORMAT_VERSION = "fairsolve_audit_model", "1"


class ModelError(ValueError):
    """The model cannot be loaded or applied; the message says why."""


def problem_spec(job_spec: dict) -> ProblemSpec:
    """A job's stored spec (the API body) as the solver library's :class:`ProblemSpec`."""
    return ProblemSpec.model_validate({k: v for k, v in job_spec.items() if k != "dataset_id"})


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


def spec_and_encoder(meta: dict[str, str]) -> tuple[ProblemSpec, TableEncoder]:
    """The spec and encoder of the metadata (ModelError when either is malformed or refused, e.g. too large)."""
    try:
        return problem_spec(json.loads(meta["spec"])), TableEncoder.from_dict(json.loads(meta["encoder"]))
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError and JSON errors are ValueErrors
        raise ModelError(f"--model: the file's spec or encoder is invalid: {exc}"[:1000]) from exc


def required_columns(spec: ProblemSpec, encoder: TableEncoder) -> list[str]:
    """The columns a model reads: target, sensitive columns, then the encoder's features."""
    return list(dict.fromkeys([spec.target, *spec.sensitive, *encoder.columns]))


def model_columns(path: Path) -> list[str]:
    """The columns the audit model in ``path`` reads (ModelError when the file is not one)."""
    return required_columns(*spec_and_encoder(read_metadata(path)))


def check_size(path: Path, spec: ProblemSpec, encoder: TableEncoder) -> None:
    """ModelError when the model would be too large to build or apply: an encoder wider than the
    solver library's cap (one-hot categories included), a model of more than ``MAX_PARAMETERS``
    parameters on the encoder's width, or stored tensors of more elements than that. Only the header is
    read (tensor shapes), so this runs before any weight or model is allocated."""
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
    if stored > MAX_PARAMETERS:
        raise ModelError(f"--model: the file stores {stored} weights (more than {MAX_PARAMETERS})")

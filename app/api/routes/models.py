"""Uploaded models, for audits of models trained elsewhere (``model_artifact_id``).

A model is uploaded as an audit model file — safetensors weights with the problem spec and the
fitted feature encoder in the header (what ``GET /api/v1/jobs/{job_id}/audit-model`` exports and
``fairsolve-admin audit run --model`` reads). Nothing is unpickled: safetensors holds tensors and strings
only. The upload is checked before it is stored: the header must carry the audit metadata and the
weights must fit the model the spec describes for the encoder's number of features.

An ONNX model is told apart by its bytes (:func:`app.onnx_models.check.is_onnx_bytes`) and checked
before any inference session exists (:mod:`app.onnx_models.check`: size, opsets, operators, no external
data, one input per column, the output audits read). An audit also needs the label and the groups: the
form fields ``target``, ``positive_label``, ``sensitive`` (a JSON list or comma-separated names) and
``group_rules`` (JSON), or the ``fairsolve_audit`` metadata of a model exported by
``GET /api/v1/jobs/{job_id}/model.onnx``. With ``dataset_id`` the inputs are matched to that dataset's
columns by name and type at upload; otherwise when an audit is created or run.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from fastapi import APIRouter, File, Form, HTTPException, Query, UploadFile, status
from pydantic import BaseModel, ConfigDict
from sqlalchemy import select

from app.audits.model_file import ModelError
from app.core.blobstore import blobs, model_key
from app.api.deps import DB, AppSettings, CurrentCaller, Offset, get_or_404
from app.models import Dataset, UploadedModel, new_id
from app.onnx_models import AUDIT_FIELDS, is_onnx_bytes
from app.api.common import owned_dataset, printable, spec_error
from app.core.strict_json import strict_loads
from app.datasets.storage import DatasetError, remove_quietly, stream_to_disk
from app.api.upload_route import UploadRoute

router = APIRouter(prefix="/api/v1/models", tags=["models"], route_class=UploadRoute)


class ModelOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    size_bytes: int
    sha256: str
    spec: dict[str, Any]
    created_at: datetime


@router.post("", status_code=status.HTTP_201_CREATED, response_model=ModelOut)
def upload_model(db: DB, settings: AppSettings, caller: CurrentCaller, file: UploadFile = File(...),
                 name: str | None = Form(None, max_length=255),
                 target: str | None = Form(None, max_length=255, description="ONNX: the label column."),
                 positive_label: str | None = Form(None, max_length=255, description="ONNX: the positive label."),
                 sensitive: str | None = Form(None, max_length=10_000,
                                              description="ONNX: the sensitive columns (JSON list or a,b)."),
                 group_rules: str | None = Form(None, max_length=100_000, description="ONNX: group rules (JSON)."),
                 dataset_id: str | None = Form(None, max_length=64,
                                               description="ONNX: check the inputs against this dataset's columns.")
                 ) -> UploadedModel:
    """Store an audit model file (safetensors with the audit metadata) or an ONNX model for ``model_artifact_id``."""
    model_id = new_id()
    tmp = settings.storage_dir / "tmp" / f"{model_id}.model"
    form = {"target": target, "positive_label": positive_label, "sensitive": sensitive, "group_rules": group_rules}
    try:
        stored = stream_to_disk(file.file, tmp, settings.max_upload_bytes)
        with open(tmp, "rb") as fh:
            onnx_file = is_onnx_bytes(fh.read(16))
        if onnx_file:
            spec, suffix = onnx_upload(tmp, settings, form, dataset_id and owned_dataset(
                db, dataset_id, caller, ("dataset_id",))), "onnx"
        else:
            spec, suffix = audit_model_upload(tmp), "safetensors"
    except DatasetError as exc:
        remove_quietly(tmp)
        raise HTTPException(status_code=413, detail=str(exc)) from exc
    except ModelError as exc:
        remove_quietly(tmp)
        raise spec_error((getattr(exc, "field", "file"),), str(exc).removeprefix("--model: ")) from exc
    except BaseException:
        remove_quietly(tmp)
        raise
    row = UploadedModel(id=model_id, owner=caller.owner, stored_name=f"{model_id}.{suffix}",
                        name=printable(name) or os.path.basename(printable(file.filename))[:255] or model_id,
                        size_bytes=stored.size_bytes, sha256=stored.sha256, spec=spec)
    key = model_key(row.stored_name)
    try:
        blobs(settings).put(key, tmp, row.sha256)
    finally:
        remove_quietly(tmp)
    try:
        db.add(row)
        db.commit()
    except BaseException:
        blobs(settings).delete(key)
        raise
    return row


def audit_model_upload(path) -> dict[str, Any]:
    """The spec of the audit model file in ``path``, its weights loaded once (ModelError if not)."""
    from app.audits.model import AuditModel  # torch, loaded in the API by this route only

    return AuditModel.load_checked(path).spec.model_dump(mode="json")


def onnx_upload(path, settings, form: dict[str, str | None], dataset: Dataset | None) -> dict[str, Any]:
    """What an audit of the ONNX model in ``path`` needs: the audit fields (form, else the model's
    ``fairsolve_audit`` metadata) and the graph's inputs and output, everything checked (ModelError naming the
    form field, or ``file``)."""
    from app.onnx_models.check import describe, input_problems, load_checked  # onnx, loaded by this route only
    from app.onnx_models.export import META_KEY
    from app.onnx_models.scorer import audit_spec

    model = load_checked(path, settings.max_onnx_bytes)
    graph = describe(model)
    probe_session(model, settings)
    fields = {}
    embedded = next((p.value for p in model.metadata_props if p.key == META_KEY), None)
    if embedded is not None:
        try:
            fields = {k: v for k, v in strict_loads(embedded).items() if k in AUDIT_FIELDS}
        except (ValueError, AttributeError) as exc:
            raise ModelError(f"the model's {META_KEY!r} metadata is malformed: {exc}"[:300]) from exc
    for key, raw in form.items():
        if raw is None or not raw.strip():
            continue
        if key == "sensitive":
            fields[key] = _json_or(raw, key, lambda r: [c.strip() for c in r.split(",") if c.strip()])
        elif key == "group_rules":
            fields[key] = _json_or(raw, key, None)
        else:
            fields[key] = raw
    for key in ("target", "positive_label", "sensitive"):
        if not fields.get(key):
            raise _field_error(key, f"an ONNX model needs {key} (a form field) for its audits")
    spec = audit_spec(fields)  # ModelError naming the form field
    if dataset is not None:
        kinds = {c["name"]: c.get("dtype", "string") for c in dataset.columns}
        problem = input_problems(graph["inputs"], kinds)
        if problem is None and (absent := [c for c in (spec.target, *spec.sensitive) if c not in kinds]):
            problem = f"the data lacks the column(s) {', '.join(map(repr, absent))}"
        if problem is not None:
            raise _field_error("file", f"dataset {dataset.id!r}: {problem}")
    return {**spec.model_dump(mode="json", include=set(AUDIT_FIELDS)), **graph}


PROBE_TIME_S = 30.0


def probe_session(model, settings) -> None:
    """Bound the graph's work per block of rows (:mod:`app.onnx_models.bounds`), then open an onnxruntime
    session on it in a child process under ``PROBE_TIME_S`` and ``FAIRSOLVE_AUDIT_MEMORY_BYTES``
    (:mod:`app.core.sandbox`): a model onnxruntime cannot load is a ModelError quoting onnxruntime's reason."""
    from app.onnx_models.bounds import GraphLimits, graph_cost
    from app.onnx_models.scorer import BLOCK_ROWS, open_session
    from app.core.sandbox import ChildError, Limited, run_limited

    import onnxruntime  # noqa: F401 - imported here, so the forked child imports nothing

    graph_cost(model, BLOCK_ROWS, GraphLimits.from_settings(settings))
    data = model.SerializeToString()
    try:
        run_limited(lambda: open_session(data) is not None, time_s=PROBE_TIME_S,
                    memory_bytes=settings.audit_memory_bytes, expected=(ModelError,))
    except ChildError as exc:
        raise ModelError(str(exc) if exc.expected else f"onnxruntime cannot load the model: {exc}"[:600]) from exc
    except Limited as exc:
        raise ModelError(f"onnxruntime could not load the model within its limits: {exc}") from exc


def _field_error(field: str, message: str) -> ModelError:
    exc = ModelError(message)
    exc.field = field
    return exc


def _json_or(raw: str, key: str, fallback):
    if raw.lstrip().startswith(("[", "{")) or fallback is None:
        try:
            return strict_loads(raw)
        except ValueError as exc:
            raise _field_error(key, f"{key} is not valid JSON: {exc}"[:300]) from exc
    return fallback(raw)


@router.get("", response_model=list[ModelOut])
def list_models(db: DB, caller: CurrentCaller, limit: int = Query(100, ge=1, le=1000),
                offset: Offset = 0) -> list[UploadedModel]:
    return list(db.scalars(select(UploadedModel).where(UploadedModel.owner == caller.owner)
                           .order_by(UploadedModel.created_at.desc()).limit(limit).offset(offset)))


@router.get("/{model_id}", response_model=ModelOut)
def get_model(model_id: str, db: DB, caller: CurrentCaller) -> UploadedModel:
    return get_or_404(db, UploadedModel, model_id, "model", caller)


@router.delete("/{model_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_model(model_id: str, db: DB, settings: AppSettings, caller: CurrentCaller) -> None:
    """Delete the model and the audits of it (with their runs and alerts)."""
    row = get_or_404(db, UploadedModel, model_id, "model", caller)
    db.delete(row)
    db.commit()
    blobs(settings).delete(model_key(row.stored_name))

"""Uploaded models, for audits of models trained elsewhere (``model_artifact_id``).

A model is uploaded as an audit model file — safetensors weights with the problem spec and the
fitted feature encoder in the header (what ``GET /api/v1/jobs/{job_id}/audit-model`` exports and
``fairsolve audit run --model`` reads). Nothing is unpickled: safetensors holds tensors and strings
only. The upload is checked before it is stored: the header must carry the audit metadata and the
weights must fit the model the spec describes for the encoder's number of features.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from fastapi import APIRouter, File, Form, HTTPException, Query, UploadFile, status
from pydantic import BaseModel, ConfigDict
from sqlalchemy import select

from app.audits.model_file import ModelError
from app.blobstore import blobs, model_file, model_key
from app.deps import DB, AppSettings, CurrentCaller, Offset, get_or_404
from app.models import UploadedModel, new_id
from app.routers.datasets import printable
from app.routers.jobs import spec_error
from app.storage import DatasetError, remove_quietly, stream_to_disk
from app.upload_route import UploadRoute

router = APIRouter(prefix="/api/v1/models", tags=["models"], route_class=UploadRoute)


class ModelOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    size_bytes: int
    sha256: str
    spec: dict[str, Any]
    created_at: datetime


def model_path(settings, row: UploadedModel):
    """A local file holding the uploaded model (:func:`app.blobstore.model_file`)."""
    return model_file(row, settings)


@router.post("", status_code=status.HTTP_201_CREATED, response_model=ModelOut)
def upload_model(db: DB, settings: AppSettings, caller: CurrentCaller, file: UploadFile = File(...),
                 name: str | None = Form(None, max_length=255)) -> UploadedModel:
    """Store an audit model file (safetensors with the audit metadata) for ``model_artifact_id``."""
    from app.audits.model import AuditModel  # torch, loaded in the API by this route only

    model_id = new_id()
    tmp = settings.storage_dir / "tmp" / f"{model_id}.model"
    try:
        stored = stream_to_disk(file.file, tmp, settings.max_upload_bytes)
        model = AuditModel.load_checked(tmp)
    except DatasetError as exc:
        remove_quietly(tmp)
        raise HTTPException(status_code=413, detail=str(exc)) from exc
    except ModelError as exc:
        remove_quietly(tmp)
        raise spec_error(("file",), str(exc).removeprefix("--model: ")) from exc
    except BaseException:
        remove_quietly(tmp)
        raise
    row = UploadedModel(id=model_id, owner=caller.owner, stored_name=f"{model_id}.safetensors",
                        name=printable(name) or os.path.basename(printable(file.filename))[:255] or model_id,
                        size_bytes=stored.size_bytes, sha256=stored.sha256, spec=model.spec.model_dump(mode="json"))
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

"""Dataset upload, listing, description and deletion."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import anyio
from fastapi import APIRouter, File, Form, HTTPException, Query, Response, UploadFile, status
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel
from sqlalchemy import exists, select

from app.deps import DB, AppSettings, CurrentCaller, get_or_404
from app.models import Dataset, Job, new_id
from app.schemas import DatasetDetail, DatasetOut, json_response
from app.settings import Settings
from app.storage import (DatasetError, StoredFile, TableLimits, TooLarge, load_table, profile_upload, remove_quietly,
                         stream_to_disk)
from app.table_profile import TableProfile, describe

router = APIRouter(prefix="/api/v1/datasets", tags=["datasets"])


def dataset_path(settings, dataset: Dataset):
    return settings.storage_dir / "datasets" / dataset.stored_name


def printable(text: str | None) -> str:
    """Client-given names are labels only (never paths): control characters (NUL included) dropped."""
    return "".join(ch for ch in text or "" if ch.isprintable())


class Problem(BaseModel):
    detail: str | list[dict[str, Any]]


UPLOAD_ERRORS: dict[int | str, dict[str, Any]] = {
    413: {"model": Problem, "description": "The file is over the upload size limit (also once decoded, for Parquet)."},
    422: {"model": Problem, "description": "The file cannot be used: the detail names the problem (and the line, "
                                           "for CSV); or a list of request validation errors."}}


@lru_cache
def upload_limiter(slots: int) -> anyio.CapacityLimiter:
    return anyio.CapacityLimiter(slots)


def receive(file, tmp: Path, settings: Settings) -> tuple[StoredFile, str, dict[str, Any], TableProfile]:
    """Stream the upload to ``tmp`` and profile it (seconds for a large file)."""
    stored = stream_to_disk(file, tmp, settings.max_upload_bytes)
    fmt, options, profile = profile_upload(tmp, TableLimits(settings.max_upload_rows, settings.max_upload_columns,
                                                            settings.max_upload_bytes))
    return stored, fmt, options, profile


@router.post("", status_code=status.HTTP_201_CREATED, response_model=DatasetOut, responses=UPLOAD_ERRORS)
async def upload_dataset(db: DB, settings: AppSettings, caller: CurrentCaller, file: UploadFile = File(...),
                         name: str | None = Form(None, max_length=255)) -> Dataset:
    """Store a CSV or Parquet file (format sniffed from its content) and infer its schema.

    The file is stored and profiled on one of ``FAIRSOLVE_UPLOAD_THREADS`` threads of its own, so a few large
    uploads never take the threads that answer other requests (``FAIRSOLVE_API_THREADS``)."""
    dataset_id = new_id()
    tmp = settings.storage_dir / "tmp" / f"{dataset_id}.upload"
    try:
        stored, fmt, options, profile = await anyio.to_thread.run_sync(
            receive, file.file, tmp, settings, limiter=upload_limiter(settings.upload_threads))
    except DatasetError as exc:
        remove_quietly(tmp)
        raise HTTPException(status_code=413 if isinstance(exc, TooLarge) else 422, detail=str(exc)) from exc
    except BaseException:
        remove_quietly(tmp)
        raise
    stored_name = f"{dataset_id}.{fmt}"
    final = settings.storage_dir / "datasets" / stored_name
    filename = printable(file.filename)[:255]
    label = printable(name) or os.path.basename(filename.replace("\\", "/"))[:255] or dataset_id
    dataset = Dataset(id=dataset_id, owner=caller.owner, name=label,
                      original_filename=filename or None, format=fmt, read_options=options,
                      stored_name=stored_name, size_bytes=stored.size_bytes, sha256=stored.sha256,
                      n_rows=profile.n_rows, n_columns=profile.n_columns, columns=profile.schema(),
                      summary=profile.summary())
    await run_in_threadpool(keep, db, dataset, tmp, final)
    return dataset


def keep(db, dataset: Dataset, tmp: Path, final: Path) -> None:
    """Move the upload to its stored name and record the dataset (the file goes if the record fails)."""
    os.replace(tmp, final)
    try:
        db.add(dataset)
        db.commit()
    except BaseException:
        remove_quietly(final)
        raise


@router.get("", response_model=list[DatasetOut])
def list_datasets(db: DB, caller: CurrentCaller, limit: int = Query(100, ge=1, le=1000), offset: int = Query(0, ge=0)) -> list[Dataset]:
    stmt = (select(Dataset).where(Dataset.owner == caller.owner).order_by(Dataset.created_at.desc())
            .limit(limit).offset(offset))
    return list(db.scalars(stmt))


@router.get("/{dataset_id}", response_model=DatasetDetail)
def get_dataset(dataset_id: str, db: DB, settings: AppSettings, caller: CurrentCaller) -> Response:
    dataset = get_or_404(db, Dataset, dataset_id, "dataset", caller)
    if dataset.summary is None:  # stored at upload; datasets uploaded before that get it on first read
        frame = load_table(dataset_path(settings, dataset), dataset.format, dataset.read_options, dataset.sha256)
        dataset.summary = describe(frame)
        db.commit()
    return json_response(DatasetDetail.model_validate(dataset).model_dump_json().encode())


@router.delete("/{dataset_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_dataset(dataset_id: str, db: DB, settings: AppSettings, caller: CurrentCaller) -> None:
    # FOR UPDATE: a submit holding the row (FOR KEY SHARE) commits its job first, and the check below sees it
    dataset = get_or_404(db, Dataset, dataset_id, "dataset", caller, lock=True)
    if db.scalar(select(exists().where(Job.dataset_id == dataset_id))):
        raise HTTPException(status_code=409, detail="dataset_id: jobs refer to this dataset; delete them first")
    path = dataset_path(settings, dataset)
    db.delete(dataset)
    db.commit()
    remove_quietly(path)

"""Dataset upload, listing, description and deletion."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, File, Form, HTTPException, Query, Response, UploadFile, status
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import exists, func, select

from app.core.blobstore import blobs, dataset_key
from app.api.common import printable
from app.api.deps import DB, AppSettings, CurrentCaller, Offset, get_or_404
from app.datasets import columnar
from app.datasets.feature_screening import dataset_screen
from app.models import Alert, Audit, AuditRun, Dataset, Job, new_id
from app.schemas import DatasetDetail, DatasetOut, json_response
from app.datasets.read_options import MAX_NAME_CHARS, OptionError, upload_options
from app.core.settings import Settings
from app.core.strict_json import StrictJSONRoute
from app.datasets.storage import (dataset_summary, DatasetError, StoredFile, TableLimits, TooLarge, profile_upload, remove_quietly,
                         stream_to_disk)
from app.datasets.table_profile import TableProfile
from app.api.upload_route import UploadRoute

router = APIRouter(prefix="/api/v1/datasets", tags=["datasets"], route_class=UploadRoute)


class Problem(BaseModel):
    detail: str | list[dict[str, Any]]


UPLOAD_ERRORS: dict[int | str, dict[str, Any]] = {
    413: {"model": Problem, "description": "The file is over the upload size limit (also once decoded, for Parquet)."},
    422: {"model": Problem, "description": "The file cannot be used: the detail names the problem (and the line, "
                                           "for CSV); or a list of request validation errors."}}


@lru_cache
def upload_limiter(slots: int) -> anyio.CapacityLimiter:
    return anyio.CapacityLimiter(slots)


def looks_like_json(path: Path) -> bool:
    """JSON (or JSON lines): the first character after a byte-order mark and white space is ``{`` or ``[``, which
    no CSV header begins with. Parsed as CSV such a file was "malformed CSV", or worse, a table of fragments."""
    with open(path, "rb") as fh:
        head = fh.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    return head[:1] in (b"{", b"[")


def receive(file, tmp: Path, settings: Settings, asked: dict[str, Any]
            ) -> tuple[StoredFile, str, dict[str, Any], TableProfile]:
    """Stream the upload to ``tmp`` and profile it with the reading options ``asked`` (seconds for a large file)."""
    stored = stream_to_disk(file, tmp, settings.max_upload_bytes)
    if looks_like_json(tmp):
        raise DatasetError("file: this is JSON, which is not accepted: upload a CSV file (a header row, then one row "
                           "per record) or a Parquet file")
    fmt, options, profile = profile_upload(tmp, TableLimits(settings.max_upload_rows, settings.max_upload_columns,
                                                            settings.max_upload_bytes), asked)
    return stored, fmt, options, profile


@router.post("", status_code=status.HTTP_201_CREATED, response_model=DatasetOut, responses=UPLOAD_ERRORS)
async def upload_dataset(
        db: DB, settings: AppSettings, caller: CurrentCaller, file: UploadFile = File(...),
        name: str | None = Form(None, max_length=255),
        header: str | None = Form(None, max_length=8, description="CSV: false when the first line is data "
                                  "(the answer's read_options.warnings say when it looks like it)."),
        column_names: str | None = Form(None, max_length=600_000, description="JSON list (or comma-separated) "
                                        "of the columns' names, one per column of the file."),
        missing_values: str | None = Form(None, max_length=4000, description="JSON list (or comma-separated) "
                                          "of the cell values read as missing; default ?, NA, N/A, empty, ..."),
        delimiter: str | None = Form(None, max_length=8, description="CSV: the field separator (one character, "
                                     "\\t for a tab); sniffed from the file when not given.")) -> Dataset:
    """Store a CSV or Parquet file (format sniffed from its content) and infer its schema.

    The reading options (``header``, ``column_names``, ``missing_values``, ``delimiter``; :mod:`app.datasets.read_options`) are
    stored with the dataset and shown in its ``read_options``, with ``warnings`` when the first line of
    a CSV file looks like data (:mod:`app.datasets.header_check`).

    The file is stored and profiled on one of ``FAIRSOLVE_UPLOAD_THREADS`` threads of its own, so a few large
    uploads never take the threads that answer other requests (``FAIRSOLVE_API_THREADS``)."""
    try:
        asked = upload_options(header, column_names, missing_values, settings.max_upload_columns, delimiter)
    except OptionError as exc:
        raise HTTPException(status_code=422, detail=[{"loc": ["body", exc.field], "msg": exc.msg,
                                                      "type": "value_error"}]) from exc
    dataset_id = new_id()
    tmp = settings.storage_dir / "tmp" / f"{dataset_id}.upload"
    try:
        stored, fmt, options, profile = await anyio.to_thread.run_sync(
            receive, file.file, tmp, settings, asked, limiter=upload_limiter(settings.upload_threads))
    except DatasetError as exc:
        remove_quietly(tmp)
        raise HTTPException(status_code=413 if isinstance(exc, TooLarge) else 422, detail=str(exc)) from exc
    except BaseException:
        remove_quietly(tmp)
        raise
    stored_name = f"{dataset_id}.{fmt}"
    filename = printable(file.filename)[:255]
    label = printable(name) or os.path.basename(filename.replace("\\", "/"))[:255] or dataset_id
    dataset = Dataset(id=dataset_id, owner=caller.owner, name=label,
                      original_filename=filename or None, format=fmt, read_options=options,
                      stored_name=stored_name, size_bytes=stored.size_bytes, sha256=stored.sha256,
                      n_rows=profile.n_rows, n_columns=profile.n_columns, columns=profile.schema(),
                      summary=profile.summary())
    try:
        await run_in_threadpool(keep, db, settings, dataset, tmp)
    finally:
        remove_quietly(tmp)  # gone once stored; left only when storing failed
    return dataset


def keep(db, settings: Settings, dataset: Dataset, tmp: Path) -> None:
    """Store the upload under its name (:mod:`app.core.blobstore`) and record the dataset (the object goes if the
    record fails)."""
    key = dataset_key(dataset.stored_name)
    blobs(settings).put(key, tmp, dataset.sha256)
    try:
        db.add(dataset)
        db.commit()
    except BaseException:
        blobs(settings).delete(key)
        raise


@router.get("", response_model=list[DatasetOut])
def list_datasets(db: DB, caller: CurrentCaller, limit: int = Query(100, ge=1, le=1000), offset: Offset = 0) -> list[Dataset]:
    stmt = (select(Dataset).where(Dataset.owner == caller.owner).order_by(Dataset.created_at.desc())
            .limit(limit).offset(offset))
    return list(db.scalars(stmt))


@router.get("/{dataset_id}", response_model=DatasetDetail)
def get_dataset(dataset_id: str, db: DB, settings: AppSettings, caller: CurrentCaller) -> Response:
    dataset = get_or_404(db, Dataset, dataset_id, "dataset", caller)
    dataset_summary(db, settings, dataset)
    return json_response(DatasetDetail.model_validate(dataset).model_dump_json().encode())


@router.get("/{dataset_id}/feature-screen")
def feature_screen(dataset_id: str, db: DB, settings: AppSettings, caller: CurrentCaller,
                   target: str | None = Query(None, max_length=255),
                   positive_label: str | None = Query(None, max_length=1000),
                   sensitive: list[str] = Query([], max_length=50)) -> dict[str, Any]:
    """What ``features: null`` would use for this target: ``kept`` columns and ``notes`` (column, excluded or
    flagged, reason, detail) on identifiers, dates, constants, free text and leakage (:mod:`solvers.data.feature_screen`).
    ``target`` and ``positive_label`` are required (checked after the dataset is found: another owner's is a 404)."""
    dataset = get_or_404(db, Dataset, dataset_id, "dataset", caller)
    names = {c["name"] for c in dataset.columns}
    problems = [(loc, "field required") for loc, value in (("target", target), ("positive_label", positive_label))
                if value is None]
    problems += [(loc, f"unknown column {name!r}") for loc, name in (("target", target), *(("sensitive", s)
                                                                      for s in sensitive))
                 if name is not None and name not in names]
    if problems:
        raise HTTPException(status_code=422, detail=[{"loc": ["query", loc], "msg": msg, "type": "value_error"}
                                                     for loc, msg in problems])
    screen = dataset_screen(settings, dataset, target, positive_label, sensitive)
    return {"kept": screen.kept, "notes": screen.notes}


@router.get("/{dataset_id}/guarantee-check")
def guarantee_check(dataset_id: str, db: DB, settings: AppSettings, caller: CurrentCaller,
                    target: str = Query(..., max_length=255), positive_label: str = Query(..., max_length=1000),
                    sensitive: str = Query(..., max_length=255),
                    constraint: list[str] = Query(..., max_length=20,
                                                  description="type:tolerance, e.g. demographic_parity:0.05"),
                    test: float = Query(0.2, ge=0.0, lt=1.0), validation: float = Query(0.2, gt=0.0, lt=1.0),
                    confidence: float = Query(0.95, ge=0.5, lt=1.0), max_tests: int = Query(1, ge=1, le=20)
                    ) -> dict[str, Any]:
    """Before a guarantee job is submitted (the job form): can the tolerance be certified at this dataset's size,
    and about how many rows would it need? From the stored counts of the ``sensitive`` column's values and the
    target's positive rate (:func:`solvers.fairness.promise.form_check`: every group at the overall label rate).
    ``available: false`` with a ``reason`` where the stored counts cannot say (a numeric or many-valued sensitive
    column, a target without its counts)."""
    from solvers.fairness.promise import form_check
    from solvers.data.spec import ConstraintSpec

    dataset = get_or_404(db, Dataset, dataset_id, "dataset", caller)
    problems = [("sensitive" if loc == "sensitive" else "target", f"unknown column {name!r}")
                for loc, name in (("target", target), ("sensitive", sensitive))
                if name not in {c["name"] for c in dataset.columns}]
    families, tolerances = [], []
    for text in constraint:
        kind, _, tol = text.partition(":")
        try:
            families.append(ConstraintSpec(type=kind, tolerance=float(tol)).build())
            tolerances.append(float(tol))
        except ValueError as err:
            problems.append(("constraint", f"{text!r}: {str(err).splitlines()[-1] if str(err) else 'invalid'}"))
    if test + validation >= 1:
        problems.append(("validation", "test + validation must be < 1"))
    if problems:
        raise HTTPException(status_code=422, detail=[{"loc": ["query", loc], "msg": msg, "type": "value_error"}
                                                     for loc, msg in problems])
    summary = dataset_summary(db, settings, dataset)
    groups = (summary.get(sensitive) or {}).get("top")
    n_distinct = next((c.get("n_distinct") for c in dataset.columns if c["name"] == sensitive), None)
    if not groups or (n_distinct is not None and n_distinct > len(groups)):
        return {"available": False, "reason": f"the stored summary has no count of every value of {sensitive!r}"}
    labels = summary.get(target) or {}
    if "top" in labels:
        total = sum(labels["top"].values())
        rate = labels["top"].get(positive_label, 0) / total if total else None
    elif labels.get("min") == 0 and labels.get("max") == 1 and labels.get("mean") is not None:   # a 0/1 target
        rate = labels["mean"] if positive_label in ("1", "1.0", "True", "true") else 1.0 - labels["mean"]
    else:
        rate = None
    if rate is None:
        return {"available": False, "reason": f"the stored summary has no count of {target!r} = {positive_label!r}"}
    check = form_check(families, tolerances, list(groups.values()), rate, int(dataset.n_rows), test, validation,
                       confidence, max_tests)
    return {"available": True, **check}


class ColumnNames(BaseModel):
    model_config = ConfigDict(extra="forbid")

    column_names: list[Annotated[str, Field(max_length=MAX_NAME_CHARS)]] = Field(
        max_length=10_000, description="One name per column of the file, in order (unique, non-empty).")


def rename_columns(dataset_id: str, db: DB, caller: CurrentCaller, body: ColumnNames | None = None) -> Dataset:
    """Name the dataset's columns (the generated ``column_1`` … of a file read without a header, or renamed
    repeats): stored in its ``read_options.column_names`` and applied to its schema and summary; the warnings
    about its names go. 409 while jobs or audits refer to the dataset (they name its columns)."""
    dataset = get_or_404(db, Dataset, dataset_id, "dataset", caller, lock=True)  # before the body: another's is 404
    if body is None:
        raise HTTPException(status_code=422, detail=[{"loc": ["body", "column_names"], "type": "missing",
                                                      "msg": "column_names is required: one name per column"}])
    try:
        names = upload_options(column_names=body.column_names)["column_names"]
    except OptionError as exc:
        raise HTTPException(status_code=422, detail=[{"loc": ["body", exc.field], "msg": exc.msg,
                                                      "type": "value_error"}]) from exc
    if dataset.format != "csv":
        raise HTTPException(status_code=422, detail=[{"loc": ["body", "column_names"], "type": "value_error",
                                                      "msg": "a Parquet file names its own columns"}])
    if len(names) != dataset.n_columns:
        raise HTTPException(status_code=422, detail=[{"loc": ["body", "column_names"], "type": "value_error",
                                                      "msg": f"{len(names)} names; the dataset has "
                                                             f"{dataset.n_columns} columns"}])
    if db.scalar(select(exists().where(Job.dataset_id == dataset_id))) or audit_dependants(db, dataset_id):
        raise HTTPException(status_code=409, detail="dataset_id: jobs or audits refer to this dataset's columns; "
                                                    "upload the file again with column_names instead")
    old = [c["name"] for c in dataset.columns]
    dataset.columns = [{**c, "name": new} for c, new in zip(dataset.columns, names)]
    if dataset.summary is not None:
        dataset.summary = {new: dataset.summary[o] for o, new in zip(old, names) if o in dataset.summary}
    options = {**dataset.read_options, "column_names": names}
    warnings = [w for w in options.pop("warnings", []) if w.get("field") not in ("header", "column_names")]
    dataset.read_options = {**options, **({"warnings": warnings} if warnings else {})}
    db.commit()
    return dataset


router.add_api_route("/{dataset_id}/column-names", rename_columns, methods=["PUT"], response_model=DatasetOut,
                     route_class_override=StrictJSONRoute)  # a JSON body, read strictly as every JSON body is


@router.delete("/{dataset_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_dataset(dataset_id: str, db: DB, settings: AppSettings, caller: CurrentCaller,
                   cascade: bool = Query(False, description="also delete the audits of this dataset, with their runs "
                                                            "and alerts (without it they answer 409)")) -> None:
    """Delete a dataset and its file. Jobs trained on it always refuse (409: delete them first); audits that
    read it refuse too, naming them with their runs and alerts, unless ``?cascade=true`` deletes them along."""
    # FOR UPDATE: a submit holding the row (FOR KEY SHARE) commits its job first, and the check below sees it
    dataset = get_or_404(db, Dataset, dataset_id, "dataset", caller, lock=True)
    if db.scalar(select(exists().where(Job.dataset_id == dataset_id))):
        raise HTTPException(status_code=409, detail="dataset_id: jobs refer to this dataset; delete them first")
    if not cascade:
        dependants = audit_dependants(db, dataset_id)
        if dependants:
            raise HTTPException(status_code=409, detail=f"dataset_id: this dataset is read by {dependants}; delete "
                                                        "them first, or pass ?cascade=true to delete them with it")
    db.delete(dataset)  # the audits go with it (ON DELETE CASCADE), and their runs and alerts with them
    db.commit()
    blobs(settings).delete(dataset_key(dataset.stored_name))
    columnar.forget(dataset.sha256, settings)


MAX_NAMED = 5  # audit ids named in a 409


def audit_dependants(db, dataset_id: str) -> str:
    """The audits reading ``dataset_id`` in words, e.g. "2 audits (a1, a2) with 3 runs and 1 alert"; empty if none."""
    audits = select(Audit.id).where(Audit.dataset_id == dataset_id)
    ids = db.scalars(audits.order_by(Audit.id).limit(MAX_NAMED)).all()
    if not ids:
        return ""
    n_audits = db.scalar(select(func.count()).select_from(audits.subquery()))
    n_runs = db.scalar(select(func.count()).where(AuditRun.audit_id.in_(audits)))
    n_alerts = db.scalar(select(func.count()).where(Alert.audit_id.in_(audits)))
    more = ", …" if n_audits > len(ids) else ""
    return (f"{_count(n_audits, 'audit')} ({', '.join(ids)}{more}) with {_count(n_runs, 'run')} and "
            f"{_count(n_alerts, 'alert')}")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"

"""What an audit run computes, in the child process of :func:`app.audits.lifecycle.run`: its inputs to its report.

:func:`local_files` fetches the files the run reads (in the worker, before the child starts); :func:`compute`, in
the child, then touches neither the object store's clients nor the database. It scores the data with the job's
model (or reads a prediction log's own output, :mod:`app.audits.logs`), summarises the scores per group and
measures their drift against the previous and the pinned baseline run (:mod:`app.audits.drift`), each cap of
:mod:`app.audits.caps` checked before the work it bounds. A prediction log stored as a dataset whose metrics need
only cell counts (rates, gaps, drift) is streamed in bounded memory (:mod:`app.audits.log_stream`), its caps
checked on the rows and groups counted.
"""

from __future__ import annotations

import logging
from typing import Any

from app.audits.caps import check_metrics, check_scoring
from app.audits.drift import compare, summarise
from app.audits.log_stream import log_frames, tally
from app.audits.logs import log_of
from app.audits.metrics import MetricSpec
from app.audits.model import AuditModel, ModelError
from app.audits.report import evaluate, evaluate_counts, on_counts
from app.audits.sources import Data, read_source
from app.core.blobstore import dataset_file, model_file
from app.core.settings import get_settings
from app.datasets.storage import TableLimits, iter_chunks, load_table
from app.jobs.artifacts import artifact_file
from app.models import Audit, AuditRun, Dataset

log = logging.getLogger(__name__)
settings = get_settings()

def local_files(inputs: dict[str, Any]) -> dict[str, Any]:
    """The local files the run reads, fetched by the worker before the computation's child process starts (it
    then touches neither the object store's clients nor the database)."""
    files: dict[str, Any] = {}
    if inputs["dataset"] is not None:
        files["dataset"] = dataset_file(inputs["dataset"])
    if inputs["audit"].predictions is None:
        if inputs["uploaded"] is not None:
            files["model"] = model_file(inputs["uploaded"])
        elif inputs["job"] is not None and inputs["job"].status == "succeeded" and inputs["weights"] is not None:
            files["weights"], files["training"] = artifact_file(inputs["weights"]), dataset_file(inputs["training"])
    return files


def compute(inputs: dict[str, Any], files: dict[str, Any]) -> dict[str, Any]:
    """The run's report (JSON values), every cap of :mod:`app.audits.caps` checked before the work it bounds.
    A prediction log stored as a dataset whose metrics need only cell counts is streamed (:func:`_streams`);
    anything else is read whole and scored. Runs in the child process of :func:`app.audits.lifecycle.run`."""
    audit, previous, baseline = inputs["audit"], inputs["previous"], inputs["baseline"]
    specs = [MetricSpec.model_validate(m) for m in audit.metrics]
    before = previous.results if previous is not None else None
    if _streams(audit, inputs["dataset"], specs):  # read in bounded memory: cell counts and block summaries
        columns, dataset = log_of(audit.predictions), inputs["dataset"]
        counted = tally(_batches(dataset, files["dataset"], columns.columns()), columns, settings.audit_max_groups)
        # the rows are already counted: the metrics resample the cells, not the rows (0 rows of metric work)
        check_metrics(0, len(counted.group_names), specs, settings.audit_max_groups, settings.audit_max_work)
        data, summary = Data(None, dataset.sha256, counted.n_rows), counted.summary
        drift = _drift(summary, previous, baseline)
        report = evaluate_counts(specs, counted.counts, counted.group_names, before, drift=drift)
        log.info("audit run %s: streamed %d rows of dataset %s", inputs["run"].id, counted.n_rows, dataset.id)
    else:
        model = _model(inputs, files)
        data = _data(audit, inputs["dataset"], files)
        check_scoring(model, data.n_rows, settings.audit_max_onnx_ops)
        scored = model.score(data.table)
        check_metrics(len(scored.y), scored.n_groups, specs, settings.audit_max_groups, settings.audit_max_work)
        summary = summarise(scored)
        drift = _drift(summary, previous, baseline)
        report = evaluate(specs, scored, before, drift=drift)
    return {"summary": summary, "drift": drift, "report": report, "sha256": data.sha256, "n_rows": data.n_rows}


def _streams(audit: Audit, dataset: Dataset | None, specs: list[MetricSpec]) -> bool:
    """A prediction log stored as a dataset whose metrics need only cell counts and score summaries is streamed
    (:mod:`app.audits.log_stream`); anything else is read whole."""
    return audit.predictions is not None and dataset is not None and on_counts(specs)


def _batches(dataset: Dataset, path, columns: list[str]):
    """The dataset's file ``path`` in batches: Parquet through pyarrow (only ``columns``, text as dictionaries);
    CSV through the dataset's own chunked reader (:func:`app.datasets.storage.iter_chunks`: its delimiter, header and
    missing values, the same parse as the table read whole)."""
    options = dataset.read_options or {}
    if dataset.format == "parquet":
        return log_frames(path, columns, missing_values=options.get("missing_values"))
    return iter_chunks(path, dataset.format, options)


def _drift(summary: dict[str, Any], previous: AuditRun | None, baseline: AuditRun | None) -> dict[str, Any]:
    return {"previous": compare(summary, previous.score_summary, previous.id) if previous else None,
            "baseline": compare(summary, baseline.score_summary, baseline.id) if baseline else None}


def _model(inputs: dict[str, Any], files: dict[str, Any]):
    """The audited model (``score(table) -> Scored``): a prediction log's columns, an uploaded audit model file or
    ONNX model, or the job's weights with its encoder refitted."""
    if inputs["audit"].predictions is not None:
        return log_of(inputs["audit"].predictions)
    if inputs["uploaded"] is not None:
        if inputs["uploaded"].stored_name.endswith(".onnx"):  # an uploaded ONNX model: scored by onnxruntime
            from app.onnx_models.raw_values import file_text
            from app.onnx_models.scorer import OnnxModel
            dataset = inputs["dataset"]  # its text as written feeds a model from elsewhere (raw_values)
            text = file_text(files["dataset"], dataset.format, dataset.read_options) if dataset else None
            return OnnxModel.from_file(files["model"], inputs["uploaded"].spec, settings.max_onnx_bytes, text)
        return AuditModel.from_file(files["model"])
    job = inputs["job"]
    if "weights" not in files:
        raise ModelError(f"job {job.id!r} has {job.status} and no model")
    return AuditModel.from_job(job.id, job.spec, files["weights"], _table(inputs["training"], files["training"]).table)


def _table(dataset: Dataset, path) -> Data:
    table = load_table(path, dataset.format, dataset.read_options, dataset.sha256)
    return Data(table, dataset.sha256, len(table))


def _data(audit: Audit, dataset: Dataset | None, files: dict[str, Any]) -> Data:
    if dataset is not None:
        return _table(dataset, files["dataset"])
    return read_source(audit.source, get_settings().audit_sources, settings.storage_dir / "tmp",
                       settings.max_upload_bytes, TableLimits(settings.max_upload_rows, settings.max_upload_columns))

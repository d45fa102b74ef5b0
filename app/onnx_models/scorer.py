r"""Audits of an uploaded ONNX model: labels and groups from the audit fields stored at upload (target,
positive label, sensitive columns, group rules: the same :func:`~solvers.data.spec.labels_of` and
:func:`~solvers.data.encoding.build_groups` as :class:`~app.audits.model.AuditModel`), scores from an
onnxruntime session fed one column per input, by name (:mod:`.check` says which output is read and how).

String inputs get the file's own text (:mod:`.raw_values`: as written for a model from elsewhere, FairSolve's
normalised values only for a model FairSolve exported), numeric inputs the column as numbers (NaN for missing in
float inputs). Rows are scored in blocks of ``BLOCK_ROWS``, so the feeds of one block are all that is held besides
the table (and, for a model from elsewhere, its text columns as written).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import ValidationError

from app.audits.metrics import Scored
from solvers.formats.model_file import ModelError, labelled_groups, problem_spec
from solvers import ProblemSpec
from solvers.data.encoding import normalise_scalar, normalise_values

from . import AUDIT_FIELDS
from .bounds import GraphCost, GraphLimits, graph_cost
from .check import describe, input_problems, load_checked
from .raw_values import FileText, as_written, speaks_fairsolve

BLOCK_ROWS = 65_536
_NUMPY = {"float": np.float32, "double": np.float64, "int64": np.int64, "int32": np.int32, "bool": np.bool_}


def column_kinds(table: pd.DataFrame) -> dict[str, str]:
    """Each column's kind as the dataset profile names it (integer, float, boolean, string)."""
    def kind(dtype) -> str:
        if pd.api.types.is_bool_dtype(dtype):
            return "boolean"
        if pd.api.types.is_integer_dtype(dtype):
            return "integer"
        return "float" if pd.api.types.is_float_dtype(dtype) else "string"
    return {str(c): kind(table[c].dtype) for c in table.columns}


def _feed(series: pd.Series, spec: dict[str, Any], own_tokens: bool = True) -> np.ndarray:
    """One input's values; a string input's as FairSolve normalises them (``own_tokens``) or as written."""
    if spec["type"] == "string":
        values = normalise_values(series).astype(object) if own_tokens else as_written(series)
    elif spec["type"] in ("float", "double"):
        values = series.to_numpy(dtype=_NUMPY[spec["type"]], na_value=np.nan)
    else:
        if series.isna().any():
            raise ModelError(f"input {spec['name']!r} takes {spec['type']} values but column {spec['name']!r} has "
                             "missing values")
        values = series.to_numpy(dtype=_NUMPY[spec["type"]])
    return values.reshape(-1, 1) if spec["rank"] == 2 else values


@dataclass
class OnnxModel:
    spec: ProblemSpec          # the audit fields (target, positive label, sensitive columns, group rules)
    graph: dict[str, Any]      # what :func:`.check.describe` found: inputs, the output used
    session: Any               # onnxruntime.InferenceSession
    cost: GraphCost            # its work and largest tensor on a block of BLOCK_ROWS rows (:mod:`.bounds`)
    own_tokens: bool = False   # exported by FairSolve: string inputs take its normalised values (.raw_values)
    file_text: FileText | None = None  # the audited file's text columns as written, when it can be read again

    @classmethod
    def from_file(cls, path: Path, stored: dict[str, Any], max_bytes: int,
                  file_text: FileText | None = None, limits: GraphLimits | None = None) -> "OnnxModel":
        """The uploaded model in ``path`` (checked again, its work bounded by ``limits``, before its session is
        made); ``stored`` is the upload's ``spec`` (the audit fields); ``file_text`` reads the audited file's cells
        as written."""
        model = load_checked(path, max_bytes)
        cost = graph_cost(model, BLOCK_ROWS, limits or GraphLimits.from_settings())
        return cls(audit_spec(stored), describe(model), open_session(model.SerializeToString()), cost,
                   speaks_fairsolve(model.producer_name, model.doc_string), file_text)

    def required_columns(self) -> list[str]:
        return list(dict.fromkeys([self.spec.target, *self.spec.sensitive, *(i["name"] for i in self.graph["inputs"])]))

    def logits(self, table: pd.DataFrame) -> np.ndarray:
        """f(x) of every row from the output the upload chose (ModelError on a missing or mistyped input)."""
        inputs, out = self.graph["inputs"], self.graph["output"]
        if (problem := input_problems(inputs, column_kinds(table))) is not None:
            raise ModelError(problem)
        columns = {i["name"]: table[i["name"]] for i in inputs}
        texts = [i["name"] for i in inputs if i["type"] == "string"]
        if texts and not self.own_tokens and self.file_text is not None:
            written = self.file_text(texts)
            if len(written) != len(table):
                raise ModelError(f"the file's text columns have {len(written)} rows, the table {len(table)}")
            columns.update({c: written[c] for c in texts})
        parts = []
        for start in range(0, len(table), BLOCK_ROWS):
            feeds = {i["name"]: _feed(columns[i["name"]].iloc[start:start + BLOCK_ROWS], i, self.own_tokens)
                     for i in inputs}
            try:
                (value,) = self.session.run([out["name"]], feeds)
            except Exception as exc:  # onnxruntime's errors: the graph failed on these values
                raise ModelError(f"the ONNX model failed on the data: {exc}"[:400]) from exc
            value = np.asarray(value)
            rows = min(BLOCK_ROWS, len(table) - start)
            value = value[:, out["column"]] if out["column"] is not None else value.reshape(rows, -1)[:, 0]
            parts.append(value)
        value = np.concatenate(parts)
        if out["kind"] == "logit":
            value = value.astype(np.float64)
            if np.isnan(value).any():
                raise ModelError(f"output {out['name']!r} gives NaN for {int(np.isnan(value).sum())} row(s)")
            return value
        if out["kind"] == "label":
            hit = (normalise_values(pd.Series(value)) == normalise_scalar(self.spec.positive_label)
                   if value.dtype.kind in "OUS" else value.astype(np.float64) == 1)
            return np.where(hit, np.inf, -np.inf)
        p = value.astype(np.float64)
        if not np.all((p >= 0) & (p <= 1)):
            raise ModelError(f"output {out['name']!r} is read as a probability but gives values outside [0, 1]; "
                             "name a raw-score output 'logit'")
        with np.errstate(divide="ignore"):
            return np.log(p) - np.log1p(-p)

    def score(self, table: pd.DataFrame) -> Scored:
        """Labels, raw scores f(x) and groups of every row of ``table`` (ModelError on a missing column)."""
        y, group, names = labelled_groups(self.spec, self.required_columns(), table)
        return Scored(y, self.logits(table), group, names)


def open_session(model_bytes: bytes):
    """An onnxruntime session on one thread (a worker process per core); ModelError quoting onnxruntime's
    reason when it cannot load the model."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    try:
        return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's Fail / InvalidGraph / NotImplemented: its own words
        raise ModelError(f"onnxruntime cannot load the model: {exc}"[:600]) from exc


def audit_spec(fields: dict[str, Any]) -> ProblemSpec:
    """The audit fields as the library's :class:`ProblemSpec` (ModelError naming what is wrong)."""
    try:
        return problem_spec({k: fields[k] for k in AUDIT_FIELDS if fields.get(k) is not None})
    except ValueError as exc:
        error = ModelError(" ".join(str(exc).splitlines()[:3])[:400])
        loc = exc.errors()[0]["loc"] if isinstance(exc, ValidationError) and exc.errors() else ()
        error.field = loc[0] if loc and loc[0] in AUDIT_FIELDS else "target"  # the form field to name
        raise error from exc

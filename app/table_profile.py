"""A table's schema and summary statistics, accumulated chunk by chunk.

An upload is profiled while it is read, a chunk of rows at a time, so the API process never holds the
whole table. Per column a :class:`ColumnProfile` keeps the missing count, the first distinct values in
file order, the pandas kinds of the chunks and the value counts (one entry per distinct value). What
it reports is exact, and equal to what pandas gives for the concatenated column:

* ``dtype``: the kind of the concatenated column (:func:`combined_kind`);
* ``n_distinct``, ``n_missing`` and ``examples`` (the first :data:`EXAMPLES` distinct values);
* numeric columns: mean, standard deviation (ddof = 1), minimum, quartiles and maximum, the quantiles
  interpolated linearly between order statistics (pandas' default), read off the cumulative counts:
  for q ∈ [0, 1] and n values x₍₀₎ ≤ … ≤ x₍ₙ₋₁₎, with p = q(n − 1) and k = ⌊p⌋,
  Q(q) = x₍ₖ₎ + (p − k)(x₍ₖ₊₁₎ − x₍ₖ₎);
* other columns (text, booleans, dates): the ten most frequent values, as text;
* ``values``: every distinct value, exactly as read, when there are at most :data:`VALUES_CAP` and each
  can be stored as JSON unchanged (finite numbers, booleans, text without NUL of at most
  :data:`VALUE_CHARS` characters). A job spec is checked against these instead of the table
  (:mod:`app.spec_table`).

Memory is bounded by the number of distinct values of each column, not by the number of rows: a
column whose every value differs (an id, a continuous measurement) keeps one count per row.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

EXAMPLES = 5
EXAMPLE_CHARS = 200
TOP_VALUES = 10
VALUES_CAP = 1000
VALUE_CHARS = 1000
QUARTILES = {"min": 0.0, "q25": 0.25, "median": 0.5, "q75": 0.75, "max": 1.0}


def kind_of(series: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(series):
        return "boolean"
    if pd.api.types.is_integer_dtype(series):
        return "integer"
    if pd.api.types.is_float_dtype(series):
        return "float"
    if pd.api.types.is_datetime64_any_dtype(series):
        return "datetime"
    return "string"


def combined_kind(kinds: set[str]) -> str:
    """The kind pandas gives chunks of these kinds once concatenated: integers with floats (an integer
    column with a missing value in some chunk) are floats; any other mixture is an object column (string)."""
    if len(kinds) == 1:
        return next(iter(kinds))
    return "float" if kinds <= {"integer", "float"} else "string"


def jsonable(value: Any) -> Any:
    """A JSON (and PostgreSQL JSONB) safe value: no NaN or infinity, no NUL, long text cut."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (int, float, bool)):
        return value
    text = value if isinstance(value, str) else str(value)
    return text[:EXAMPLE_CHARS].replace("\x00", "\ufffd")


def exact_json(value: Any) -> bool:
    """Whether ``value`` survives a JSON (and PostgreSQL JSONB) round trip unchanged."""
    if isinstance(value, bool) or (isinstance(value, int) and abs(value) < 2**53):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str) and len(value) <= VALUE_CHARS and "\x00" not in value


def finite(x: Any) -> float | None:
    x = float(x)
    return None if math.isnan(x) or math.isinf(x) else x


class ColumnProfile:
    """One column's accumulators (see the module docstring)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.kinds: set[str] = set()
        self.n_missing = 0
        self.examples: list[Any] = []
        self.counts: pd.Series | None = None  # distinct value -> occurrences

    def add(self, series: pd.Series) -> None:
        self.kinds.add(kind_of(series))
        present = series.dropna()
        self.n_missing += len(series) - len(present)
        if len(self.examples) < EXAMPLES:
            for value in present.unique()[:EXAMPLES]:
                if len(self.examples) < EXAMPLES and not any(value == seen for seen in self.examples):
                    self.examples.append(value)
        chunk = present.value_counts(sort=False)
        self.counts = chunk if self.counts is None else self.counts.add(chunk, fill_value=0)

    @property
    def kind(self) -> str:
        return combined_kind(self.kinds)

    def schema(self) -> dict[str, Any]:
        entry = {"name": self.name, "dtype": self.kind, "n_distinct": 0 if self.counts is None else len(self.counts),
                 "n_missing": self.n_missing, "examples": [jsonable(v) for v in self.examples]}
        if self.counts is not None and len(self.counts) <= VALUES_CAP and self.kind != "datetime":
            values = [v.item() if isinstance(v, np.generic) else v for v in self.counts.index]
            if all(exact_json(v) for v in values):
                entry["values"] = values
        return entry

    def summary(self) -> dict[str, Any]:
        counts = self.counts if self.counts is not None else pd.Series(dtype="int64")
        if self.kind in ("integer", "float"):
            return numeric_summary(counts)
        text = counts.groupby(counts.index.map(str)).sum() if len(counts) else counts
        top = text.sort_values(ascending=False, kind="stable").head(TOP_VALUES)
        return {"top": {jsonable(str(k)): int(v) for k, v in top.items()}}


def numeric_summary(counts: pd.Series) -> dict[str, float | None]:
    """Mean, std (ddof = 1) and the quartiles of the multiset {value: count} (module docstring)."""
    counts = counts.sort_index()
    values, weights = counts.index.to_numpy(dtype=float), counts.to_numpy(dtype=float)
    n = weights.sum()
    if n == 0:
        return {"mean": None, "std": None, **{k: None for k in QUARTILES}}
    mean = float(np.dot(values, weights) / n)
    std = math.sqrt(float(np.dot(weights, (values - mean) ** 2)) / (n - 1)) if n > 1 else math.nan
    ends = np.cumsum(weights)  # order statistics 0 .. ends[i]-1 equal values[i]

    def order_statistic(k: int) -> float:
        return values[int(np.searchsorted(ends, k, side="right"))]

    out: dict[str, float | None] = {"mean": finite(mean), "std": finite(std)}
    for key, q in QUARTILES.items():
        position = q * (n - 1)
        low = int(math.floor(position))
        lo, hi = order_statistic(low), order_statistic(min(low + 1, int(n) - 1))
        out[key] = finite(lo + (position - low) * (hi - lo))
    return out


class TableProfile:
    """The profile of a table fed as chunks of rows with the same columns."""

    def __init__(self) -> None:
        self.columns: dict[str, ColumnProfile] = {}
        self.n_rows = 0

    @classmethod
    def of(cls, chunks: pd.DataFrame | Iterable[pd.DataFrame]) -> TableProfile:
        profile = cls()
        for chunk in [chunks] if isinstance(chunks, pd.DataFrame) else chunks:
            profile.add(chunk)
        return profile

    def add(self, chunk: pd.DataFrame) -> None:
        if not self.columns:
            self.columns = {str(name): ColumnProfile(str(name)) for name in chunk.columns}
        for column, name in zip(self.columns.values(), chunk.columns):
            column.add(chunk[name])
        self.n_rows += len(chunk)

    @property
    def n_columns(self) -> int:
        return len(self.columns)

    def schema(self) -> list[dict[str, Any]]:
        """Per column: name, dtype, distinct count, missing count, a few example values."""
        return [column.schema() for column in self.columns.values()]

    def summary(self) -> dict[str, Any]:
        """Per column, for the dataset page: numeric mean/std/quartiles, else the top values."""
        return {jsonable(name): column.summary() for name, column in self.columns.items()}  # JSONB: no NUL in keys


def describe(frame: pd.DataFrame) -> dict[str, Any]:
    return TableProfile.of(frame).summary()

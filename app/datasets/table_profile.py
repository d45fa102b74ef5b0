"""A table's schema and summary statistics, accumulated chunk by chunk.

An upload is profiled while it is read, a chunk of rows at a time, so the API process never holds the
whole table. Per column a :class:`ColumnProfile` keeps the missing count, the first distinct values in
file order, the pandas kinds of the chunks, the sorted distinct values of numeric chunks with their
counts and the value counts of the other chunks. What it reports equals what pandas gives for the
concatenated column:

* ``dtype``: the kind of the concatenated column (:func:`combined_kind`);
* ``n_distinct``, ``n_missing`` and ``examples`` (the first :data:`EXAMPLES` distinct values);
* numeric columns: mean, standard deviation (ddof = 1), minimum, quartiles and maximum, the quantiles
  interpolated linearly between order statistics (pandas' default): for q ∈ [0, 1] and n values
  x₍₀₎ ≤ … ≤ x₍ₙ₋₁₎, with p = q(n − 1) and k = ⌊p⌋, Q(q) = x₍ₖ₎ + (p − k)(x₍ₖ₊₁₎ − x₍ₖ₎). From distinct
  values v₁ < … < v_d with counts c_j and C_j = c₁ + … + c_j: x₍ₖ₎ = v_j for the first j with C_j > k,
  mean = Σ c_j v_j / n, std² = Σ c_j (v_j − mean)² / (n − 1);
* other columns (text, booleans, dates): the ten most frequent values, as text;
* ``values``: every distinct value, exactly as read, when there are at most :data:`VALUES_CAP` and each
  can be stored as JSON unchanged (finite numbers, booleans, text without NUL of at most
  :data:`VALUE_CHARS` characters). A job spec is checked against these instead of the table
  (:mod:`app.datasets.spec_table`).

Memory: 16 bytes per distinct numeric value (value and count, in runs merged as they come: an age column of a million rows keeps
about 70 of each), and one count per distinct value of the other columns up to :data:`COUNT_CAP`. A column with more distinct values than that (an id) keeps a 64-bit hash per value
instead: its distinct count stays exact (up to a hash collision, odds about n²/2⁶⁵), and its top values
are counted over the rows read until the cap was passed (the summary says so).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

EXAMPLES = 5
EXAMPLE_CHARS = 200
TOP_VALUES = 10
VALUES_CAP = 1000
COUNT_CAP = 100_000
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
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []  # numeric chunks: runs of sorted distinct values, counts
        self.counts: pd.Series | None = None  # other chunks: distinct value -> occurrences, up to COUNT_CAP values
        self.hashes: list[np.ndarray] = []  # past COUNT_CAP: 64-bit hashes of the values, for the distinct count

    def add(self, series: pd.Series) -> None:
        kind = kind_of(series)
        self.kinds.add(kind)
        present = series.dropna()
        self.n_missing += len(series) - len(present)
        if len(self.examples) < EXAMPLES:
            head = present.iloc[:1000].unique()  # the first distinct values are almost always near the top
            for value in (head if len(head) >= EXAMPLES else present.unique())[:EXAMPLES]:
                if len(self.examples) < EXAMPLES and not any(value == seen for seen in self.examples):
                    self.examples.append(value)
        if kind in ("integer", "float"):
            self._add_numbers(present.to_numpy())
        else:
            self._count(present.value_counts(sort=False))

    def add_arrow(self, array: pa.Array, text_check: Callable[[pa.Array], None] | None = None) -> None:
        """:meth:`add` of the chunk ``pandas`` makes of ``array`` (``Array.to_pandas``), computed on the Arrow array:
        integers with a missing value are floats, as pandas holds them; missing numbers are nulls and NaN; counts
        are hash counts (``dictionary_encode``, ``value_counts``), never Python objects per row. Types other than
        integers, floats and text go through pandas."""
        t = array.type
        if pa.types.is_integer(t) and array.null_count:
            array, t = array.cast(pa.float64()), pa.float64()
        if pa.types.is_integer(t) or pa.types.is_floating(t):
            self.kinds.add("integer" if pa.types.is_integer(t) else "float")
            present = array.drop_null()
            if pa.types.is_floating(t):
                present = present.filter(pc.invert(pc.is_nan(present)))
            self.n_missing += len(array) - len(present)
            self._arrow_examples(present)
            counted = pc.value_counts(present)  # distinct values (first-seen order) and their counts
            values = counted.field("values").to_numpy(zero_copy_only=False)
            order = np.argsort(values, kind="stable")
            self._merge_numbers(values[order], counted.field("counts").to_numpy()[order].astype(np.int64))
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            self.kinds.add("string")
            self.n_missing += array.null_count
            encoded = pc.dictionary_encode(array.drop_null())  # the dictionary in order of first occurrence
            words = encoded.dictionary
            if text_check is not None:
                text_check(words)  # the distinct texts, not every row
            if len(self.examples) < EXAMPLES:
                for value in words.slice(0, EXAMPLES).to_pylist():
                    if len(self.examples) < EXAMPLES and value not in self.examples:
                        self.examples.append(value)
            counts = np.bincount(encoded.indices.to_numpy(zero_copy_only=False), minlength=len(words))
            self._count(pd.Series(counts.astype(np.int64), index=pd.Index(words.to_pylist(), dtype="str")))
        else:
            self.add(pa.chunked_array([array]).to_pandas())

    def _arrow_examples(self, present: pa.Array) -> None:
        if len(self.examples) < EXAMPLES:
            head = pc.unique(present.slice(0, 1000))  # first-occurrence order
            for value in (head if len(head) >= EXAMPLES else pc.unique(present)).to_numpy(zero_copy_only=False)[:EXAMPLES]:
                if len(self.examples) < EXAMPLES and not any(value == seen for seen in self.examples):
                    self.examples.append(value)

    def _count(self, chunk: pd.Series) -> None:
        if self.hashes:
            self.hashes.append(value_hashes(chunk.index))
            return
        if self.counts is None:
            self.counts = chunk
        else:   # values in order of first occurrence, however the rows were chunked (``Series.add`` sorts them)
            self.counts = pd.concat([self.counts, chunk]).groupby(level=0, sort=False).sum()
        if len(self.counts) > COUNT_CAP:  # an id-like column: keep hashes, not values
            self.hashes.append(value_hashes(self.counts.index))

    def _add_numbers(self, x: np.ndarray) -> None:
        """Merge a chunk's present numbers into the sorted distinct values and their counts (integers met by
        floats become floats, as in a concatenated column)."""
        self._merge_numbers(*np.unique(x, return_counts=True))

    def _merge_numbers(self, values: np.ndarray, counts: np.ndarray) -> None:
        """Push a chunk's sorted distinct numbers and counts as a run, then merge the last two runs while the
        older is at most twice the newer (sizes halve down the stack, so a value is merged O(log n) times: merging
        every chunk into all the values before it cost O(chunks) sorts of the column, 9.5 s for 2M rows of three
        continuous columns against 0.6 s for 0.5M). A column of few distinct values stays one run."""
        self.runs.append((values, counts))
        while len(self.runs) > 1 and len(self.runs[-2][0]) <= 2 * len(self.runs[-1][0]):
            self._merge_last_two()

    def _merge_last_two(self) -> None:
        newer = self.runs.pop()
        self.runs.append(merged_counts(self.runs.pop(), newer))

    @property
    def kind(self) -> str:
        return combined_kind(self.kinds)

    def _number_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """The column's sorted distinct numbers and their counts (the runs merged into one)."""
        while len(self.runs) > 1:
            self._merge_last_two()
        return self.runs[0] if self.runs else (np.empty(0), np.empty(0, dtype=np.int64))

    def _all_counts(self) -> pd.Series:
        """The counts with the numeric chunks folded in (a column read as numbers in some chunks only)."""
        if self.runs:
            values, counts = self._number_counts()
            self._count(pd.Series(counts, index=values))
            self.runs = []
        return self.counts if self.counts is not None else pd.Series(dtype="int64")

    def distinct(self) -> tuple[int, list[Any] | None]:
        """The number of distinct values and, when there are at most VALUES_CAP, the values."""
        if self.kind in ("integer", "float"):
            values, _ = self._number_counts()
            return len(values), values.tolist() if len(values) <= VALUES_CAP else None
        counts = self._all_counts()
        if self.hashes:
            h = np.concatenate(self.hashes)
            h.sort()
            return 1 + int(np.count_nonzero(h[1:] != h[:-1])), None
        if len(counts) > VALUES_CAP:
            return len(counts), None
        return len(counts), [v.item() if isinstance(v, np.generic) else v for v in counts.index]

    def schema(self) -> dict[str, Any]:
        n_distinct, values = self.distinct()
        entry = {"name": self.name, "dtype": self.kind, "n_distinct": n_distinct, "n_missing": self.n_missing,
                 "examples": [jsonable(v) for v in self.examples]}
        if values is not None and self.kind != "datetime" and all(exact_json(v) for v in values):
            entry["values"] = values
        return entry

    def summary(self) -> dict[str, Any]:
        if self.kind in ("integer", "float"):
            return numeric_summary(*self._number_counts())
        counts = self._all_counts()
        text = counts.groupby(counts.index.map(str)).sum() if len(counts) else counts
        top = text.sort_values(ascending=False, kind="stable").head(TOP_VALUES)
        out: dict[str, Any] = {"top": {jsonable(str(k)): int(v) for k, v in top.items()}}
        if self.hashes:
            out["top_counted_over_first_distinct"] = COUNT_CAP
        return out


def merged_counts(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Two runs of sorted distinct numbers with counts as one (integers met by floats become floats): a stable
    argsort of the two concatenated runs (Timsort merges two sorted runs in linear time), then equal values' counts
    added."""
    values, counts = np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]])
    order = np.argsort(values, kind="stable")
    values, counts = values[order], counts[order]
    starts = np.flatnonzero(np.concatenate([[True], values[1:] != values[:-1]]))
    return values[starts], np.add.reduceat(counts, starts) if len(counts) else counts


def value_hashes(values: pd.Index) -> np.ndarray:
    """64-bit hashes of values by their text (a collision among n values has odds about n² / 2⁶⁵)."""
    return pd.util.hash_array(np.asarray(values.map(str), dtype=object))


def numeric_summary(values: np.ndarray, counts: np.ndarray) -> dict[str, float | None]:
    """Mean, std (ddof = 1) and the quartiles Q(q) (module docstring) of the present values, given as their
    sorted distinct ``values`` and ``counts``."""
    n = int(counts.sum())
    if n == 0:
        return {"mean": None, "std": None, **{k: None for k in QUARTILES}}
    v = values.astype(float)
    mean = float(np.dot(v, counts) / n)
    out: dict[str, float | None] = {"mean": finite(mean),
                                    "std": finite(math.sqrt(np.dot((v - mean) ** 2, counts) / (n - 1))) if n > 1 else None}
    for key, value in zip(QUARTILES, weighted_quantiles(values, counts, list(QUARTILES.values()))):
        out[key] = finite(value)
    return out


def weighted_quantiles(values: np.ndarray, counts: np.ndarray, qs: list[float]) -> list[float]:
    """Q(q) for each q (module docstring: linear interpolation between order statistics, pandas' default) of the
    n = Σ counts values given as sorted distinct ``values`` and their ``counts``."""
    n = int(counts.sum())
    cumulative = np.cumsum(counts)
    out = []
    for q in qs:
        p = q * (n - 1)
        k = int(math.floor(p))
        at = np.searchsorted(cumulative, [k, min(k + 1, n - 1)], side="right")  # x₍ₖ₎ and x₍ₖ₊₁₎
        lo, hi = float(values[at[0]]), float(values[at[1]])
        out.append(lo + (p - k) * (hi - lo))
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

    def add_arrow(self, batch: pa.RecordBatch, text_check: Callable[[pa.Array], None] | None = None) -> None:
        """:meth:`add` of ``batch.to_pandas()``, computed on the Arrow columns (:meth:`ColumnProfile.add_arrow`);
        ``text_check`` is called on each text column's distinct values (it may raise)."""
        if not self.columns:
            self.columns = {name: ColumnProfile(name) for name in batch.schema.names}
        for column, array in zip(self.columns.values(), batch.columns):
            column.add_arrow(array, text_check)
        self.n_rows += batch.num_rows

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

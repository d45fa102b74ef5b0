"""Dataset files: streamed to disk under a server-chosen name, sniffed, parsed and described.

Reading rules (the same for validation in the API and for training in the worker):
CSV files are UTF-8 (a BOM is accepted), the delimiter is sniffed among ``, ; \\t |``,
blank space after a delimiter is skipped (UCI files use ``", "``), empty cells are
missing. Parquet is detected by its ``PAR1`` magic bytes, never by the file name,
and read with pyarrow (no code is executed, nothing is unpickled).
"""

from __future__ import annotations

import csv
import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

PARQUET_MAGIC = b"PAR1"
DELIMITERS = ",;\t|"
EXAMPLES = 5


class DatasetError(ValueError):
    """The uploaded file cannot be used; the message says why (answered as 422)."""


@dataclass
class StoredFile:
    path: Path
    size_bytes: int
    sha256: str


def stream_to_disk(source: BinaryIO, dest: Path, max_bytes: int, chunk: int = 1 << 20) -> StoredFile:
    """Copy an upload to ``dest`` chunk by chunk, hashing it; refuse it past ``max_bytes``."""
    digest, size = hashlib.sha256(), 0
    try:
        with open(dest, "wb") as out:
            while block := source.read(chunk):
                size += len(block)
                if size > max_bytes:
                    raise DatasetError(f"file: larger than the limit of {max_bytes} bytes")
                digest.update(block)
                out.write(block)
    except BaseException:
        dest.unlink(missing_ok=True)
        raise
    return StoredFile(dest, size, digest.hexdigest())


def sniff_format(path: Path) -> tuple[str, dict[str, Any]]:
    """Return ``(format, read_options)`` from the content: Parquet magic, else a CSV dialect."""
    with open(path, "rb") as fh:
        head = fh.read(64 * 1024)
    if not head.strip():
        raise DatasetError("file: the file is empty")
    if head[:4] == PARQUET_MAGIC:
        return "parquet", {}
    if b"\x00" in head:
        raise DatasetError("file: not a CSV or Parquet file (binary content)")
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if len(head) < 64 * 1024 or exc.start < len(head) - 4:
            raise DatasetError(f"file: not UTF-8 text (byte {exc.start}); upload CSV as UTF-8 or Parquet") from exc
        text = head[: exc.start].decode("utf-8-sig")
    sample = "\n".join(text.splitlines()[:50])
    try:
        delimiter = csv.Sniffer().sniff(sample, delimiters=DELIMITERS).delimiter
    except csv.Error:
        delimiter = ","
    return "csv", {"delimiter": delimiter}


@dataclass(frozen=True)
class TableLimits:
    max_rows: int = 50_000_000
    max_columns: int = 2000

    def check(self, n_rows: int | None, n_columns: int, where: str = "") -> None:
        if n_columns > self.max_columns:
            raise DatasetError(f"file: {n_columns} columns; the limit is {self.max_columns}")
        if n_rows is not None and n_rows > self.max_rows:
            raise DatasetError(f"file: more than the limit of {self.max_rows} rows{where}")


def _check_csv_shape(path: Path, delimiter: str, limits: TableLimits) -> None:
    """Reject duplicate or empty header names, ragged rows and tables over the limits, naming the line."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh, delimiter=delimiter, skipinitialspace=True)
        try:
            header = next(reader, None)
            if not header or all(not h.strip() for h in header):
                raise DatasetError("file: the file has no header row")
            names = [h.strip() for h in header]
            seen: set[str] = set()
            for name in names:
                if name in seen:
                    raise DatasetError(f"file: duplicate column name {name!r} in the header")
                seen.add(name)
            width, rows = len(names), 0
            limits.check(None, width)
            for row in reader:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # blank lines (UCI files end with one)
                rows += 1
                if rows > limits.max_rows:
                    limits.check(rows, width, f" (line {reader.line_num})")
                if len(row) != width:
                    raise DatasetError(
                        f"file: ragged CSV: line {reader.line_num} has {len(row)} fields, the header has {width}")
        except UnicodeDecodeError as exc:
            raise DatasetError(f"file: not UTF-8 text (line {reader.line_num + 1})") from exc
        except csv.Error as exc:
            raise DatasetError(f"file: malformed CSV at line {reader.line_num}: {exc}") from exc
    if rows == 0:
        raise DatasetError("file: the file has a header but no data rows")


def read_table(path: Path, fmt: str, options: dict[str, Any]) -> pd.DataFrame:
    """Read a stored dataset exactly as the worker will train on it."""
    if fmt == "parquet":
        return pd.read_parquet(path, engine="pyarrow")
    frame = pd.read_csv(path, sep=options.get("delimiter", ","), skipinitialspace=True,
                        encoding="utf-8-sig", skip_blank_lines=True)
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


@lru_cache(maxsize=4)
def _cached_table(path: str, fmt: str, delimiter: str | None, sha256: str) -> pd.DataFrame:
    return read_table(Path(path), fmt, {"delimiter": delimiter} if delimiter else {})


def load_table(path: Path, fmt: str, options: dict[str, Any], sha256: str) -> pd.DataFrame:
    """``read_table`` with a small cache keyed by content hash; callers must not mutate the frame."""
    return _cached_table(str(path), fmt, options.get("delimiter"), sha256)


def _check_parquet_shape(path: Path, limits: TableLimits) -> None:
    """Rows and columns from the Parquet footer, before any data page is read."""
    try:
        meta = pq.ParquetFile(path).metadata
    except Exception as exc:
        raise DatasetError(f"file: cannot be read as PARQUET: {exc}") from exc
    limits.check(meta.num_rows, meta.num_columns)


def parse_upload(path: Path, limits: TableLimits = TableLimits()) -> tuple[str, dict[str, Any], pd.DataFrame]:
    """Sniff, validate and read an uploaded file; raises :class:`DatasetError` with the reason."""
    fmt, options = sniff_format(path)
    if fmt == "csv":
        _check_csv_shape(path, options["delimiter"], limits)
    else:
        _check_parquet_shape(path, limits)
    try:
        frame = read_table(path, fmt, options)
    except DatasetError:
        raise
    except Exception as exc:  # pyarrow / pandas parse errors: report, never a 500
        raise DatasetError(f"file: cannot be read as {fmt.upper()}: {exc}") from exc
    if fmt == "parquet":
        names = [str(c) for c in frame.columns]
        dupes = {n for n in names if names.count(n) > 1}
        if dupes:
            raise DatasetError(f"file: duplicate column name {sorted(dupes)[0]!r}")
    if frame.shape[1] == 0 or frame.shape[0] == 0:
        raise DatasetError("file: the table has no rows or no columns")
    return fmt, options, frame


def _jsonable(value: Any) -> Any:
    if isinstance(value, (np.generic,)):
        return value.item()
    if isinstance(value, (pd.Timestamp,)):
        return value.isoformat()
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


def _kind(series: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(series):
        return "boolean"
    if pd.api.types.is_integer_dtype(series):
        return "integer"
    if pd.api.types.is_float_dtype(series):
        return "float"
    if pd.api.types.is_datetime64_any_dtype(series):
        return "datetime"
    return "string"


def infer_schema(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Per column: name, dtype, distinct count, missing count, a few example values."""
    schema = []
    for name in frame.columns:
        col = frame[name]
        distinct = col.dropna().unique()
        schema.append({
            "name": str(name),
            "dtype": _kind(col),
            "n_distinct": int(len(distinct)),
            "n_missing": int(col.isna().sum()),
            "examples": [_jsonable(v) for v in distinct[:EXAMPLES]],
        })
    return schema


def describe(frame: pd.DataFrame) -> dict[str, Any]:
    """Summary statistics per column for the dataset page (numeric: mean/std/quantiles; else top values)."""
    out: dict[str, Any] = {}
    for name in frame.columns:
        col = frame[name]
        if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
            q = col.quantile([0.0, 0.25, 0.5, 0.75, 1.0]).tolist()
            out[str(name)] = {"mean": _float(col.mean()), "std": _float(col.std()),
                              "min": _float(q[0]), "q25": _float(q[1]), "median": _float(q[2]),
                              "q75": _float(q[3]), "max": _float(q[4])}
        else:
            top = col.astype("string").value_counts().head(10)
            out[str(name)] = {"top": {str(k): int(v) for k, v in top.items()}}
    return out


def _float(x: Any) -> float | None:
    x = float(x)
    return None if np.isnan(x) or np.isinf(x) else x


def remove_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


__all__ = ["DatasetError", "StoredFile", "stream_to_disk", "parse_upload", "infer_schema", "describe",
           "read_table", "load_table", "remove_quietly"]

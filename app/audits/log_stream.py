r"""A prediction log audited in bounded memory: read batch by batch, each batch reduced to its cell counts and a
sorted-block summary of its scores, so the memory held is one batch plus O(batches · K · S) summary points,
whatever the number of rows.

**Reading** (:func:`log_frames`): pyarrow, already a dependency (no new engine to pin): Parquet through
``ParquetFile.iter_batches`` with only the log's columns decoded and text columns read as dictionaries (pandas
categoricals: one small code per row, no Python string per row), without pre-buffering (with it, pyarrow 26's
pool grew by about 6 MB a batch over a 20M-row file; without, it stayed flat); CSV through ``pyarrow.csv.open_csv``, a streaming
reader that parses blocks of the file in parallel, its text columns dictionary-encoded alike. A missing column is
a :class:`~app.audits.model_file.ModelError` naming it before any row is read.

**Cells** (:func:`tally`): each batch is scored as an in-memory log is (:meth:`PredictionLog.score_rows`: the same
labels, decisions and group names); its groups are mapped to the log's groups by name and its counts
c[g, y, ŷ] (:func:`app.audits.cells.cell_counts`) added. Counting is exact, so the totals equal the whole table's
counts. The groups are finally put in :func:`solvers.encoding.build_groups`' order by running it on one
representative row per group (the order depends only on the set of values present), so the names, their order
and the counts equal an in-memory run's.

**Score summaries** (sorted blocks): per batch and group, the batch's scores sorted, S = :data:`BLOCK_POINTS`
points taken at the ranks ⌊(j + ½) n_gb / S⌋, each weighing n_gb / S. The weighted step CDF of a block's points is
within n_gb / S rows of the block's own CDF everywhere, so the merged points of all blocks are within
Σ_b n_gb / S = n_g / S rows of the group's CDF (1/1024 of the group), under the 1/Q resolution of the
Q = :data:`app.audits.drift.Q` quantiles a run keeps: the group's quantile at level (k + ½)/Q is read from the
merged points as :func:`app.audits.drift.summarise` reads it from the sorted scores (the point holding rank
⌊(k + ½) n_g / Q⌋).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from solvers.encoding import build_groups

from .caps import check_groups
from .cells import cell_counts
from .drift import Q
from .logs import PredictionLog
from .model_file import ModelError

BATCH_ROWS = 1 << 20
BLOCK_POINTS = 1024


def _missing(columns: list[str], present: list[str]) -> None:
    missing = [c for c in dict.fromkeys(columns) if c not in present]
    if missing:
        raise ModelError(f"predictions: the data lacks the column(s) {', '.join(map(repr, missing))}")


def log_frames(path: Path, columns: list[str], batch_rows: int = BATCH_ROWS,
               missing_values: list[str] | None = None) -> Iterator[pd.DataFrame]:
    """The ``columns`` of the Parquet or CSV file at ``path`` as pandas frames of at most ``batch_rows`` rows
    (module docstring); Parquet is told by its magic bytes. ``missing_values``: text cells equal to one of these
    markers (stripped) are missing, as the dataset's reader has them (:mod:`app.datasets.read_options`)."""
    for frame in _frames(path, columns, batch_rows):
        yield _masked(frame, missing_values) if missing_values else frame


def _masked(frame: pd.DataFrame, markers: list[str]) -> pd.DataFrame:
    """Text values equal to a marker (stripped) made missing: on a categorical column its categories are removed
    (no per-row work); another text column is compared row by row."""
    for c in frame.columns:
        column = frame[c]
        if isinstance(column.dtype, pd.CategoricalDtype):
            bad = [v for v in column.cat.categories if isinstance(v, str) and v.strip() in markers]
            if bad:
                frame[c] = column.cat.remove_categories(bad)
        elif pd.api.types.is_object_dtype(column) or pd.api.types.is_string_dtype(column):
            frame[c] = column.mask(column.astype("string").str.strip().isin(markers))
    return frame


def _frames(path: Path, columns: list[str], batch_rows: int) -> Iterator[pd.DataFrame]:
    with open(path, "rb") as fh:
        parquet = fh.read(4) == b"PAR1"
    if parquet:
        schema = pq.ParquetFile(path).schema_arrow
        _missing(columns, schema.names)
        text = [c for c in columns if pa.types.is_string(schema.field(c).type)
                or pa.types.is_large_string(schema.field(c).type)]
        pf = pq.ParquetFile(path, read_dictionary=text, pre_buffer=False)  # pre-buffered ranges pile up in the pool
        for batch in pf.iter_batches(batch_size=batch_rows, columns=list(dict.fromkeys(columns))):
            yield batch.to_pandas()
        return
    with open(path, "rb") as fh:
        header = pacsv.open_csv(fh, read_options=pacsv.ReadOptions(block_size=1 << 16)).schema.names
    _missing(columns, header)
    reader = pacsv.open_csv(path, read_options=pacsv.ReadOptions(block_size=1 << 24, encoding="utf8"),
                            convert_options=pacsv.ConvertOptions(include_columns=list(dict.fromkeys(columns)),
                                                                 auto_dict_encode=True,
                                                                 strings_can_be_null=True))
    rows: list[pa.RecordBatch] = []
    held = 0
    for batch in reader:
        for start in range(0, batch.num_rows, batch_rows):
            rows.append(batch.slice(start, batch_rows))
            held += rows[-1].num_rows
            if held >= batch_rows:
                yield pa.Table.from_batches(rows).to_pandas()
                rows, held = [], 0
    if rows:
        yield pa.Table.from_batches(rows).to_pandas()


@dataclass(frozen=True)
class Tally:
    """A whole log's cell counts (K, 2, 2), group names (:func:`solvers.encoding.build_groups`' order), rows and
    score summary (:func:`app.audits.drift.summarise`'s form)."""

    counts: np.ndarray
    group_names: list[str]
    n_rows: int
    summary: dict[str, Any]


def _block(f: np.ndarray, group: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One batch's sorted-block summary: (group, point, weight) of S points per group present."""
    n = np.bincount(group, minlength=k)
    present = np.flatnonzero(n)
    starts = (np.cumsum(n) - n)[present]
    by_group = f[np.argsort(group.astype(np.int16) if k < 2**15 else group, kind="stable")]  # radix sort
    for start, size in zip(starts, n[present]):  # each group's slice sorted in place (a loop over groups)
        by_group[start:start + size].sort()
    levels = (np.arange(BLOCK_POINTS) + 0.5) / BLOCK_POINTS
    ranks = starts[:, None] + np.floor(levels[None, :] * n[present][:, None]).astype(np.int64)
    points = by_group[ranks]
    weights = np.broadcast_to((n[present] / BLOCK_POINTS)[:, None], points.shape)
    return np.repeat(present, BLOCK_POINTS), points.ravel(), weights.ravel()


def _summary(blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]], names: list[str],
             sizes: np.ndarray) -> dict[str, Any]:
    """The Q quantiles per group from the merged block points (module docstring)."""
    group = np.concatenate([b[0] for b in blocks])
    points = np.concatenate([b[1] for b in blocks])
    weights = np.concatenate([b[2] for b in blocks])
    order = np.lexsort((points, group))
    group, points, weights = group[order], points[order], weights[order]
    levels = (np.arange(Q) + 0.5) / Q
    out = {}
    for g in np.flatnonzero(sizes):  # a loop over the K groups, each vectorised over its points
        lo, hi = np.searchsorted(group, [g, g + 1])
        cumulative = np.cumsum(weights[lo:hi])
        at = np.searchsorted(cumulative, np.floor(levels * sizes[g]) + 0.5, side="right")
        out[names[g]] = points[lo:hi][np.minimum(at, hi - lo - 1)].tolist()
    return {"q": Q, "groups": out, "sizes": {names[g]: int(sizes[g]) for g in np.flatnonzero(sizes)}}


def tally(frames: Iterable[pd.DataFrame], log: PredictionLog, max_groups: int | None = None) -> Tally:
    """The whole log's :class:`Tally` from its batches ``frames`` (module docstring); with ``max_groups``, a
    ModelError as soon as a batch brings the groups past it (:func:`app.audits.caps.check_groups`), before that
    batch's groups are counted or summarised."""
    index: dict[str, int] = {}
    representatives: list[dict[str, Any]] = []
    counts = np.zeros((0, 2, 2), np.int64)
    blocks = []
    for frame in frames:
        if len(frame) == 0:
            continue
        scored = log.score_rows(frame)
        new = [name for name in scored.group_names if name not in index]
        if max_groups is not None:
            check_groups(len(index) + len(new), max_groups, at_least=True)
        if new:
            first = np.full(scored.n_groups, -1)
            first[scored.group[::-1]] = np.arange(len(frame))[::-1]  # each local group's first row
            for name in new:
                row = first[scored.group_names.index(name)]
                representatives.append({c: frame[c].iloc[row] for c in log.sensitive})
                index[name] = len(index)
            counts = np.concatenate([counts, np.zeros((len(new), 2, 2), np.int64)])
        group = np.array([index[name] for name in scored.group_names], np.int64)[scored.group]
        counts += cell_counts(scored.y, scored.pred, group, len(index))
        blocks.append(_block(np.asarray(scored.logits, np.float64), group, len(index)))
    if not index:
        raise ModelError("the data has no rows")
    log.check_positives(int(counts[:, 1, :].sum()))
    order, names = build_groups(pd.DataFrame(representatives, columns=log.sensitive), log.sensitive)
    if [names[i] for i in order] != list(index):
        raise ModelError("predictions.sensitive: the log's group values could not be ordered consistently")
    place = np.asarray(order, np.int64)
    ordered = np.zeros_like(counts)
    ordered[place] = counts
    blocks = [(place[g], p, w) for g, p, w in blocks]
    sizes = ordered.sum(axis=(1, 2))
    return Tally(ordered, names, int(sizes.sum()), _summary(blocks, names, sizes))

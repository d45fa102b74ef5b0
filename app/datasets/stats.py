"""Dataset-page statistics from the stored file read a chunk at a time (the API never holds the table):
group sizes and the label rate per group.

One pass counts the rows of every (sensitive value, label value) pair: per chunk a vectorised
``value_counts``, merged into the running counts. Everything the page shows follows from those counts:
the label's values (least frequent first), and per group its size, its share of the rows, its positives
(rows whose label, as text, equals the positive value; a missing label is not positive) and its label
rate. A numeric sensitive column with more than :data:`BIN_ABOVE` distinct values is cut into quintiles
as ``pandas.qcut`` would cut the whole column: the edges are its quantiles Q(0), Q(0.2), ..., Q(1)
(linear interpolation, :func:`app.datasets.table_profile.weighted_quantiles`) over the distinct values weighted
by their counts. The counts (not the table) of the last few (file, sensitive, label) asked are kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from app.datasets.read_options import cache_key
from app.datasets.storage import iter_chunks
from app.datasets.table_profile import weighted_quantiles

MISSING = "(missing)"
MAX_GROUPS = 50
BIN_ABOVE = 20  # a numeric sensitive column with more distinct values is cut into quintiles
MAX_PAIRS = 200_000  # distinct (sensitive, label) pairs tabulated; past that the page says the column has too many


class TooManyValues(ValueError):
    """The chosen columns have too many distinct value pairs to tabulate."""


def pair_counts(chunks: Iterable[pd.DataFrame], sensitive: str, label: str | None) -> pd.DataFrame:
    """Columns ``s`` (the sensitive value, as read), ``l`` (the label as text, or missing) and ``n`` (rows)."""
    merged: pd.DataFrame | None = None
    for chunk in chunks:
        labels = chunk[label].astype("string") if label else pd.Series(pd.NA, index=chunk.index, dtype="string")
        counts = pd.DataFrame({"s": chunk[sensitive], "l": labels}).value_counts(dropna=False).rename("n").reset_index()
        merged = counts if merged is None else (pd.concat([merged, counts], ignore_index=True)
                                                .groupby(["s", "l"], dropna=False, sort=False)["n"].sum().reset_index())
        if len(merged) > MAX_PAIRS:
            raise TooManyValues(f"{sensitive!r} and {label!r} have more than {MAX_PAIRS:,} distinct value pairs")
    return merged if merged is not None else pd.DataFrame({"s": [], "l": pd.Series([], dtype="string"), "n": []})


def stored_pair_counts(path: Path, fmt: str, options: dict[str, Any], sha256: str, sensitive: str,
                       label: str | None) -> pd.DataFrame:
    """:func:`pair_counts` of a stored dataset read with its reading ``options`` (cached by content hash and
    options; callers must not mutate it)."""
    return _cached_pair_counts(str(path), fmt, cache_key(options), sha256, sensitive, label)


@lru_cache(maxsize=32)
def _cached_pair_counts(path: str, fmt: str, options: str, sha256: str, sensitive: str, label: str | None) -> pd.DataFrame:
    read = {k: v for k, v in json.loads(options).items() if v is not None}
    return pair_counts(iter_chunks(Path(path), fmt, read), sensitive, label)


def label_values(counts: pd.DataFrame) -> list[str]:
    """The label's values as text, least frequent first (the usual positive class first)."""
    per_value = counts.dropna(subset=["l"]).groupby("l", sort=False)["n"].sum()
    return [str(v) for v in per_value.sort_values(kind="stable").index]


def group_names(s: pd.Series, n: pd.Series) -> tuple[pd.Series, bool]:
    """The group of each distinct sensitive value ``s`` (``n`` rows each): its text, or its quintile."""
    present = s.notna()
    numeric = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
    if numeric and s[present].nunique() > BIN_ABOVE:
        weights = n[present].groupby(s[present]).sum().sort_index()
        edges = weighted_quantiles(weights.index.to_numpy(float), weights.to_numpy(), list(np.linspace(0, 1, 6)))
        cut = pd.cut(s, bins=np.unique(edges), include_lowest=True, precision=3, duplicates="drop")
        return cut.astype("string").fillna(MISSING), True
    return s.astype("string").fillna(MISSING), False


def group_table(counts: pd.DataFrame, positive: str | None) -> dict[str, Any]:
    """Rows ``{group, size, share, positives, label_rate}`` sorted by size, plus the overall rate."""
    groups, binned = group_names(counts["s"], counts["n"])
    n = int(counts["n"].sum())
    frame = pd.DataFrame({"group": groups.to_numpy(), "n": counts["n"].to_numpy(np.int64)})
    if positive is not None:
        frame["positives"] = np.where((counts["l"] == positive).fillna(False).to_numpy(bool), frame["n"], 0)
        agg = frame.groupby("group", sort=False).agg(size=("n", "sum"), positives=("positives", "sum"))
        agg["label_rate"] = agg["positives"] / agg["size"]
        overall = float(agg["positives"].sum() / n) if n else None
    else:
        agg = frame.groupby("group", sort=False).agg(size=("n", "sum"))
        overall = None
    agg["share"] = agg["size"] / max(n, 1)
    agg = agg.sort_values("size", ascending=False, kind="stable")
    shown = agg.head(MAX_GROUPS)
    rows = [{"group": str(g), "size": int(r["size"]), "share": float(r["share"]),
             "positives": int(r["positives"]) if "positives" in r else None,
             "label_rate": float(r["label_rate"]) if "label_rate" in r else None}
            for g, r in shown.iterrows()]
    rates = agg["label_rate"] if "label_rate" in agg else None
    return {"rows": rows, "n_groups": int(len(agg)), "truncated": len(agg) > MAX_GROUPS, "binned": binned,
            "overall_rate": overall,
            "rate_gap": float(rates.max() - rates.min()) if rates is not None and len(rates) > 1 else None}

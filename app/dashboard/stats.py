"""Dataset-page statistics, vectorised with pandas: group sizes and label rate per group."""

from __future__ import annotations

from typing import Any

import pandas as pd

MISSING = "(missing)"
MAX_GROUPS = 50
BIN_ABOVE = 20  # a numeric sensitive column with more distinct values is cut into quintiles


def label_values(frame: pd.DataFrame, label: str) -> list[str]:
    """The label column's values as strings, least frequent first (the usual positive class first)."""
    counts = frame[label].astype("string").value_counts(dropna=True)
    return [str(v) for v in counts.sort_values(kind="stable").index]


def group_key(col: pd.Series) -> tuple[pd.Series, bool]:
    """Group names of a sensitive column; numeric columns with many values are binned into quintiles."""
    binned = False
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col) and col.nunique() > BIN_ABOVE:
        col = pd.qcut(col, q=5, duplicates="drop").astype("string")
        binned = True
    return col.astype("string").fillna(MISSING), binned


def group_table(frame: pd.DataFrame, sensitive: str, label: str | None, positive: str | None) -> dict[str, Any]:
    """Rows ``{group, size, share, positives, label_rate}`` sorted by size, plus the overall rate."""
    groups, binned = group_key(frame[sensitive])
    n = len(frame)
    if label is not None and positive is not None:
        y = (frame[label].astype("string") == positive).fillna(False).astype("int64")
        agg = y.groupby(groups, sort=False).agg(["size", "sum"])
        agg.columns = ["size", "positives"]
        agg["label_rate"] = agg["positives"] / agg["size"]
        overall = float(y.mean()) if n else None
    else:
        agg = groups.value_counts(sort=False).to_frame("size")
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

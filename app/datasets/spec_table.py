"""The table a job spec is checked against at submission, usually without reading the dataset.

:func:`solvers.check_spec_against_table` reads the column names, the dtype of the sensitive columns,
the distinct values of the target and the groups each sensitive column yields. All of these depend
only on each column's set of distinct values (and whether it has missing values), which the upload's
profile stores (:mod:`app.datasets.table_profile`, ``values``). So the check runs on a stand-in table whose
every column the check reads cycles through its distinct values (plus one missing value when the
column has any): the same distinct values, the same observed groups, the same answer — in a few rows,
however large the dataset. When a column the check reads has no stored values (more than the cap, or
a dataset profiled before they were kept), the stored table is read instead.

Overlapping groups (``overlapping_groups``) are checked against the row frequencies (no group above
``min_group_fraction``, the membership's size), which a stand-in does not have: such a spec is checked against the
stored table itself.

A dataset never changes, so its stand-in tables are kept (the last :data:`CACHED` by dataset and
columns read): resubmitting on a dataset skips building one (about 0.7 ms of the API's CPU).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable

import pandas as pd

from app.models import Dataset
from app.datasets.storage import dataset_path
from app.core.settings import Settings
from app.datasets.storage import iter_chunks, read_table
from solvers import ProblemSpec
from solvers.spec import most_frequent_first, value_counts

DTYPES = {"integer": "int64", "float": "float64", "boolean": "bool", "string": "str"}
CACHED = 256
_stand_ins: OrderedDict[tuple, pd.DataFrame | None] = OrderedDict()
_lock = threading.Lock()  # routes run in a thread pool


def distinct_value_table(columns: list[dict[str, Any]], read: list[str]) -> pd.DataFrame | None:
    """The stand-in table (module docstring), or None when a column in ``read`` has no stored values."""
    by_name = {c["name"]: c for c in columns}
    read = [name for name in dict.fromkeys(read) if name in by_name]  # unknown names: the check reports them
    if any("values" not in by_name[name] or by_name[name]["dtype"] not in DTYPES
           or (by_name[name]["n_missing"] and by_name[name]["dtype"] in ("integer", "boolean")) for name in read):
        return None  # (pandas never reads a column with missing values as integers or booleans)
    cycles = {name: [*by_name[name]["values"], *([None] if by_name[name]["n_missing"] else [])] for name in read}
    rows = max([len(values) for values in cycles.values()] + [1])
    frame = {}
    for name, column in by_name.items():
        values = cycles.get(name) or [None]
        dtype = DTYPES[column["dtype"]] if name in cycles else "object"
        if dtype == "str" and not all(isinstance(v, str) for v in values if v is not None):
            dtype = "object"  # text mixed with numbers: pandas keeps such a column as objects
        frame[name] = pd.Series([values[i % len(values)] for i in range(rows)], dtype=dtype)
    return pd.DataFrame(frame)


def counts_of(settings: Settings, dataset: Dataset) -> Callable[[str], pd.Series]:
    """column ↦ its :func:`solvers.spec.value_counts` over the stored file, one chunk of rows at a time: what the
    check shows when it refuses a target of more than two values (the stand-in's counts are not the data's)."""
    def counts(column: str) -> pd.Series:
        total = pd.Series(dtype="int64")
        for chunk in iter_chunks(dataset_path(settings, dataset), dataset.format, dataset.read_options):
            total = total.add(value_counts(chunk[column]), fill_value=0)
        return most_frequent_first(total)

    return counts


def spec_table(settings: Settings, dataset: Dataset, spec: ProblemSpec) -> pd.DataFrame:
    """What ``spec`` is checked against: the stand-in table when possible, else the dataset itself."""
    if spec.overlapping_groups is not None:  # group sizes: the rows themselves (module docstring)
        return read_table(dataset_path(settings, dataset), dataset.format, dataset.read_options)
    key = (dataset.id, dataset.sha256, spec.target, *spec.sensitive)
    with _lock:
        cached = key in _stand_ins
        if cached:
            _stand_ins.move_to_end(key)
            table = _stand_ins[key]
    if not cached:
        table = distinct_value_table(dataset.columns, [spec.target, *spec.sensitive])
        with _lock:
            _stand_ins[key] = table
            if len(_stand_ins) > CACHED:
                _stand_ins.popitem(last=False)
    if table is not None:
        return table
    return read_table(dataset_path(settings, dataset), dataset.format, dataset.read_options)  # uncached: freed after

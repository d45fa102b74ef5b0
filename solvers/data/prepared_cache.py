"""Prepared tables kept for the next solve on the same rows (a worker's, per process).

:func:`~solvers.pipeline.prepare` (labels, groups, the stratified split, the encoder fitted on the train rows and the
encoded X) is a function of the table and of the spec's :data:`PREPARE_FIELDS` alone. A worker that runs several
jobs on one dataset (a sweep, a user trying solvers, a job and its unconstrained baseline) prepares it once per
(table, those fields): the stratified split and the encoding are then paid once, not by every job.

Keys: ``(table_key, prepare_key(spec))``, where ``table_key`` is the caller's name for the table's content (the
worker: the stored file's SHA-256, its format and reading options, as its table cache,
:func:`app.datasets.storage.load_table`) and :func:`prepare_key` the canonical JSON of the prepare fields: another split
seed, target, feature list or grouping is another entry, and a file of other content another key. A hit still
runs the checks of the spec that depend on its other fields (:func:`~solvers.data.table_check.check_spec_against_table`, the
model's size on the encoder's width), so a spec is refused exactly as without the cache.

Entries are shared by the solves that hit them: nothing downstream writes into a :class:`Prepared`'s arrays
(the solvers read X and copy what they change; a test runs solvers of every model type on a kept entry and
compares its bytes before and after). Bounded: least recently used first out once the entries' bytes exceed
``max_bytes``; an entry larger than the bound alone is not kept.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..pipeline import Prepared, prepare
from .bytes_lru import BytesLRU
from .spec import ProblemSpec
from .table_check import check_spec_against_table

#: the spec fields :func:`~solvers.pipeline.prepare` reads (besides the table)
PREPARE_FIELDS = frozenset({"target", "positive_label", "sensitive", "group_rules", "overlapping_groups",
                            "features", "split"})


def prepare_key(spec: ProblemSpec) -> str:
    """Canonical JSON of the spec's :data:`PREPARE_FIELDS`."""
    return json.dumps(spec.model_dump(mode="json", include=set(PREPARE_FIELDS)), sort_keys=True,
                      separators=(",", ":"), default=str)


def prepared_bytes(data: Prepared) -> int:
    """Bytes of a Prepared's arrays (X dominates: n × d float32)."""
    arrays = [data.X, data.y, data.group, *data.splits.values()]
    if data.order is not None:
        arrays.append(data.order)
    if data.membership is not None:
        arrays.extend(data.membership.pairs)
    return int(sum(np.asarray(a).nbytes for a in arrays))


class PreparedCache:
    """LRU of :class:`Prepared` by ``(table_key, prepare_key(spec))``, at most ``max_bytes`` of arrays in all
    (:class:`~solvers.data.bytes_lru.BytesLRU`)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = int(max_bytes)
        self._entries = BytesLRU(max_bytes)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return self._entries.nbytes

    def prepared(self, table_key: str, table: pd.DataFrame, spec: ProblemSpec) -> Prepared:
        """``prepare(table, spec)``, from the kept entry when there is one."""
        key = (table_key, prepare_key(spec))
        kept = self._entries.get(key)
        if kept is not None:
            check_spec_against_table(spec, table)
            spec.model.check_size(kept.encoder.n_features)
            return kept
        data = prepare(table, spec)
        self._entries.put(key, data, prepared_bytes(data))
        return data

r"""Overlapping groups: a sparse row-to-group membership M ∈ {0,1}^{n×K} (a sample in several groups).

PLADA's Communities & Crime experiment (its Section 5.3 and Appendix) builds groups from thresholds:
with cuts t_{c,1} < ... < t_{c,J_c} on each column c, group (j_1, ..., j_C) is

    I_{(j)} = { i : x_{i,c} ≥ t_{c,j_c} for every column c },

so a community belongs to every threshold group it passes (10 cuts on each of 3 columns: 1000 groups, of
which those with more than 1% of the rows are constrained). M is held as its nonzero pairs (i_p, g_p) in
row-major (CSR) order, ``pairs``; :meth:`Membership.csr` gives the scipy CSR matrix.

Construction is vectorised: k_{i,c} = #{j : t_{c,j} ≤ x_{i,c}} (one ``searchsorted`` per column), and
i ∈ I_{(j)} ⇔ j_c < k_{i,c} for every c, evaluated on blocks of rows against all groups at once (no loop
over groups or samples). A partition is the one-hot special case (:meth:`Membership.from_partition`).

The spec (:class:`ThresholdGroups`) is bounded before anything is allocated: at most
``MAX_THRESHOLD_COLUMNS`` columns, ``MAX_CUTS`` cuts per column and ``MAX_GROUPS`` groups in all.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from .encoding import GROUP_SEPARATOR
from .spec import MAX_GROUPS, Name, Strict

MAX_THRESHOLD_COLUMNS = 8   # columns with cuts
MAX_CUTS = 100              # cuts on one column
_BLOCK_ENTRIES = 1 << 22    # rows × groups × columns compared at once while building


class ThresholdGroups(Strict):
    """Groups that overlap: one group per combination of one cut on each column (``x_c ≥ cut``).

    ``{"thresholds": {"racepctblack": [0.1, 0.2, ...], ...}, "min_group_fraction": 0.01}`` gives
    Π_c len(cuts_c) groups (at most ``MAX_GROUPS``), of which those with more than ``min_group_fraction``
    of the rows are kept."""

    thresholds: dict[Name, list[float]] = Field(min_length=1, max_length=MAX_THRESHOLD_COLUMNS)
    min_group_fraction: float = Field(0.0, ge=0.0, lt=1.0)

    @model_validator(mode="after")
    def _bounded(self) -> "ThresholdGroups":
        for column, cuts in self.thresholds.items():
            if not 1 <= len(cuts) <= MAX_CUTS:
                raise ValueError(f"'thresholds.{column}': between 1 and {MAX_CUTS} cuts")
            if not all(math.isfinite(c) for c in cuts) or len(set(cuts)) != len(cuts):
                raise ValueError(f"'thresholds.{column}': cuts must be finite and distinct")
        if (n := math.prod(len(c) for c in self.thresholds.values())) > MAX_GROUPS:
            raise ValueError(f"'thresholds': {n} groups (more than {MAX_GROUPS})")
        return self


@dataclass
class Membership:
    """M as its nonzero pairs: sample ``rows[p]`` belongs to group ``groups[p]`` (rows ascending)."""

    rows: np.ndarray    # (nnz,) int64
    groups: np.ndarray  # (nnz,) int64
    n_rows: int
    names: list[str]

    @property
    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        return self.rows, self.groups

    @property
    def n_groups(self) -> int:
        return len(self.names)

    @property
    def counts(self) -> np.ndarray:
        """N_g, the rows of every group."""
        return np.bincount(self.groups, minlength=self.n_groups)

    def csr(self):
        """M as a scipy.sparse CSR matrix (n × K, int8)."""
        from scipy.sparse import csr_matrix

        return csr_matrix((np.ones(self.rows.size, dtype=np.int8), (self.rows, self.groups)),
                          shape=(self.n_rows, self.n_groups))

    def take(self, idx: np.ndarray) -> "Membership":
        """The membership of the rows ``idx`` (distinct), renumbered 0..len(idx)-1 in that order."""
        position = np.full(self.n_rows, -1, dtype=np.int64)
        position[idx] = np.arange(len(idx))
        at = position[self.rows]
        keep = at >= 0
        order = np.argsort(at[keep], kind="stable")
        return Membership(at[keep][order], self.groups[keep][order], len(idx), list(self.names))

    @classmethod
    def from_partition(cls, group: np.ndarray, names: list[str]) -> "Membership":
        """The one-hot membership of a partition (one group per row)."""
        group = np.asarray(group, dtype=np.int64)
        return cls(np.arange(group.size, dtype=np.int64), group, group.size, list(names))


def threshold_membership(table: pd.DataFrame, spec: ThresholdGroups | dict) -> Membership:
    """The threshold groups of ``spec`` on ``table`` (module docstring), small groups dropped.

    A missing or non-numeric value passes no cut (the row is in no group of that column)."""
    spec = spec if isinstance(spec, ThresholdGroups) else ThresholdGroups(**spec)
    columns = list(spec.thresholds)
    cuts = [np.sort(np.asarray(spec.thresholds[c], dtype=float)) for c in columns]
    passed = np.stack([  # k_{i,c}: cuts of column c that row i passes
        np.searchsorted(t, np.nan_to_num(pd.to_numeric(table[c], errors="coerce").to_numpy(dtype=float),
                                         nan=-np.inf), side="right")
        for c, t in zip(columns, cuts)], axis=1)
    grid = np.stack(np.unravel_index(np.arange(math.prod(map(len, cuts))), [len(t) for t in cuts]), axis=1)
    n, n_all = len(table), grid.shape[0]
    block = max(1, _BLOCK_ENTRIES // (n_all * len(columns)))
    rows, groups = [], []
    for start in range(0, n, block):  # blocks of rows, all groups at once within each
        hit = (grid[None, :, :] < passed[start:start + block, None, :]).all(axis=2)
        r, g = np.nonzero(hit)
        rows.append(r + start)
        groups.append(g)
    rows = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
    groups = np.concatenate(groups).astype(np.int64) if groups else np.zeros(0, np.int64)
    counts = np.bincount(groups, minlength=n_all)
    kept = np.flatnonzero(counts > spec.min_group_fraction * n)
    renumber = np.full(n_all, -1, dtype=np.int64)
    renumber[kept] = np.arange(kept.size)
    new = renumber[groups]
    mask = new >= 0
    names = [GROUP_SEPARATOR.join(f"{c}>={t[j]:g}" for c, t, j in zip(columns, cuts, grid[g])) for g in kept]
    return Membership(rows[mask], new[mask], n, names)


r"""Overlapping groups: a sparse row-to-group membership M ∈ {0,1}^{n×K} (a sample in several groups).

PLADA's Communities & Crime experiment (its Section 5.3 and Appendix) builds groups from thresholds:
with cuts t_{c,1} < ... < t_{c,J_c} on each column c, group (j_1, ..., j_C) is

    I_{(j)} = { i : x_{i,c} ≥ t_{c,j_c} for every column c },

so a community belongs to every threshold group it passes (10 cuts on each of 3 columns: 1000 groups, of
which those with more than 1% of the rows are constrained). A job spec may also ask for one group per value of
each of several columns (``columns``: a row in one group per column). M is held as its nonzero pairs
(i_p, g_p) in row-major (CSR) order, ``pairs``; :meth:`Membership.csr` gives the scipy CSR matrix.

Construction is vectorised: k_{i,c} = #{j : t_{c,j} ≤ x_{i,c}} (one ``searchsorted`` per column), and
i ∈ I_{(j)} ⇔ j_c < k_{i,c} for every c, evaluated on blocks of rows against all groups at once (no loop
over groups or samples). Before anything of size nnz is allocated, the group sizes and nnz come from k alone:
N_(j) = #{i : k_i > j componentwise} is the C-dimensional histogram of k summed from the top along every axis,
and row i is in Π_c k_{i,c} groups. A partition is the one-hot special case (:meth:`Membership.from_partition`).

The spec (:class:`~solvers.data.spec.OverlappingGroups`, also importable here as ``ThresholdGroups``) is bounded
before anything is allocated; :func:`check_overlapping_groups` checks it against a table (422 material).

Everywhere a split's groups are passed (``group`` of the metrics, the exact values, the report), a
:class:`Membership` may stand where a partition's (n,) index array does (:func:`rows_of` takes a split's rows of
either).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .encoding import GROUP_SEPARATOR, build_groups
from .spec import MAX_GROUPS, MAX_MEMBERSHIP_PAIRS, OverlappingGroups, SpecError

ThresholdGroups = OverlappingGroups  # the name the Communities & Crime bench and its tests use
_BLOCK_ENTRIES = 1 << 22    # rows × groups × columns compared at once while building


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
        """M as a scipy.sparse CSR matrix (n × K, int8), built once."""
        from scipy.sparse import csr_matrix

        if self.__dict__.get("_csr") is None:
            self.__dict__["_csr"] = csr_matrix((np.ones(self.rows.size, dtype=np.int8), (self.rows, self.groups)),
                                               shape=(self.n_rows, self.n_groups))
        return self.__dict__["_csr"]

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


def _passed(table: pd.DataFrame, spec: OverlappingGroups) -> tuple[list[str], list[np.ndarray], np.ndarray]:
    """(columns, sorted cuts, k (n, C)): k_{i,c} the cuts of column c that row i reaches (missing: none)."""
    columns = list(spec.thresholds or {})
    cuts = [np.sort(np.asarray(spec.thresholds[c], dtype=float)) for c in columns]
    passed = np.stack([  # k_{i,c}: cuts of column c that row i passes
        np.searchsorted(t, np.nan_to_num(pd.to_numeric(table[c], errors="coerce").to_numpy(dtype=float),
                                         nan=-np.inf), side="right")
        for c, t in zip(columns, cuts)], axis=1) if columns else np.zeros((len(table), 0), dtype=np.int64)
    return columns, cuts, passed


def _grid_sizes(passed: np.ndarray, cuts: list[np.ndarray]) -> np.ndarray:
    """N_(j) for every group of the grid, row-major (module docstring): O(n + Π J_c), nothing of size nnz."""
    shape = [len(t) + 1 for t in cuts]
    hist = np.bincount(np.ravel_multi_index(passed.T, shape), minlength=math.prod(shape)).reshape(shape)
    for axis in range(hist.ndim):  # #{i : k_i ≥ m componentwise}, then the group j is m = j + 1
        hist = np.flip(np.cumsum(np.flip(hist, axis), axis), axis)
    return hist[tuple(slice(1, None) for _ in shape)].reshape(-1)


def _threshold_pairs(passed: np.ndarray, cuts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(rows, groups) of the whole grid, row-major, by blocks of rows against all groups at once."""
    grid = np.stack(np.unravel_index(np.arange(math.prod(map(len, cuts))), [len(t) for t in cuts]), axis=1)
    n, n_all = len(passed), grid.shape[0]
    block = max(1, _BLOCK_ENTRIES // (n_all * len(cuts)))
    rows, groups = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for start in range(0, n, block):  # blocks of rows, all groups at once within each
        hit = (grid[None, :, :] < passed[start:start + block, None, :]).all(axis=2)
        r, g = np.nonzero(hit)
        rows.append(r + start)
        groups.append(g)
    return np.concatenate(rows).astype(np.int64), np.concatenate(groups).astype(np.int64)


def _threshold_names(columns: list[str], cuts: list[np.ndarray]) -> list[str]:
    grid = np.unravel_index(np.arange(math.prod(map(len, cuts))), [len(t) for t in cuts])
    return [GROUP_SEPARATOR.join(f"{c}>={t[j[g]]:g}" for c, t, j in zip(columns, cuts, grid))
            for g in range(grid[0].size)] if columns else []


def _column_groups(table: pd.DataFrame, columns: list[str]) -> list[tuple[np.ndarray, list[str]]]:
    """Per column of ``columns``: (group index (n,), names ``col=value``), the values as ``sensitive`` names them."""
    out = []
    for column in columns:  # a loop over the spec's few columns
        index, names = build_groups(table, [column])
        out.append((index, [f"{column}={name}" for name in names]))
    return out


def _sizes(table: pd.DataFrame, spec: OverlappingGroups):
    """(names, sizes N_g, row count per group of every candidate group) and what builds the pairs."""
    columns, cuts, passed = _passed(table, spec)
    per_column = _column_groups(table, spec.columns or [])
    names = _threshold_names(columns, cuts) + [n for _, col in per_column for n in col]
    sizes = np.concatenate([_grid_sizes(passed, cuts) if columns else np.zeros(0, np.int64)]
                           + [np.bincount(index, minlength=len(col)) for index, col in per_column]).astype(np.int64)
    return names, sizes, (passed, cuts, per_column)


def overlapping_membership(table: pd.DataFrame, spec: OverlappingGroups | dict) -> Membership:
    """The groups of ``spec`` on ``table`` (module docstring; threshold groups first, then the columns' groups,
    each in order), those with at most ``min_group_fraction`` of the rows dropped."""
    spec = spec if isinstance(spec, OverlappingGroups) else OverlappingGroups(**spec)
    n = len(table)
    names, sizes, (passed, cuts, per_column) = _sizes(table, spec)
    rows, groups = [], []
    offset = 0
    if cuts:
        r, g = _threshold_pairs(passed, cuts)
        rows.append(r)
        groups.append(g)
        offset = math.prod(map(len, cuts))
    for index, col in per_column:  # the spec's few columns: one pair per row each
        rows.append(np.arange(n, dtype=np.int64))
        groups.append(index + offset)
        offset += len(col)
    rows, groups = np.concatenate(rows), np.concatenate(groups)
    kept = np.flatnonzero(sizes > spec.min_group_fraction * n)
    renumber = np.full(len(names), -1, dtype=np.int64)
    renumber[kept] = np.arange(kept.size)
    new = renumber[groups]
    mask = new >= 0
    order = np.argsort(rows[mask], kind="stable")  # CSR order (rows ascending)
    return Membership(rows[mask][order], new[mask][order], n, [names[g] for g in kept])


def threshold_membership(table: pd.DataFrame, spec: OverlappingGroups | dict) -> Membership:
    """The threshold groups of ``spec`` on ``table`` (module docstring), small groups dropped.

    A missing or non-numeric value passes no cut (the row is in no group of that column)."""
    return overlapping_membership(table, spec)


def check_overlapping_groups(spec: OverlappingGroups, table: pd.DataFrame, target: str) -> None:
    """Raise :class:`~solvers.data.spec.SpecError` (at ``overlapping_groups...``) when the groups cannot be built on
    ``table``: an unknown column or the target, a threshold column that is not numeric, more than ``MAX_GROUPS``
    groups, more than ``MAX_MEMBERSHIP_PAIRS`` pairs, or no group above ``min_group_fraction``. Costs O(n · C)
    (:func:`_grid_sizes`): nothing of size nnz is allocated."""
    for kind, columns in (("thresholds", spec.thresholds or {}), ("columns", spec.columns or [])):
        for i, column in enumerate(columns):
            loc = ("overlapping_groups", kind, column if kind == "thresholds" else i)
            if column not in table.columns:
                raise SpecError(loc, f"unknown column {column!r}")
            if column == target:
                raise SpecError(loc, f"{column!r} is the target column: groups must come from other columns")
            dtype = table[column].dtype
            if kind == "thresholds" and not (pd.api.types.is_numeric_dtype(dtype)
                                             and not pd.api.types.is_bool_dtype(dtype)):
                raise SpecError(loc, f"thresholds need a numeric column; {column!r} is {dtype}")
    n_groups = (math.prod(len(c) for c in spec.thresholds.values()) if spec.thresholds else 0) + sum(
        int(table[c].nunique(dropna=False)) for c in spec.columns or [])
    if n_groups > MAX_GROUPS:
        raise SpecError(("overlapping_groups", "columns"), f"{n_groups} groups (more than {MAX_GROUPS})")
    _, sizes, (passed, _, _) = _sizes(table, spec)
    pairs = int(np.prod(passed, axis=1).sum()) if passed.shape[1] else 0
    if (pairs := pairs + len(table) * len(spec.columns or [])) > MAX_MEMBERSHIP_PAIRS:
        raise SpecError(("overlapping_groups",), f"the groups hold {pairs} (row, group) pairs (more than "
                                                 f"{MAX_MEMBERSHIP_PAIRS}): fewer cuts or columns")
    if not (sizes > spec.min_group_fraction * len(table)).any():
        raise SpecError(("overlapping_groups", "min_group_fraction"),
                        f"no group holds more than {spec.min_group_fraction:g} of the {len(table)} rows "
                        f"(largest: {int(sizes.max(initial=0))} rows)")


def rows_of(group, idx: np.ndarray):
    """The groups of the rows ``idx`` (distinct): a partition's index entries, or :meth:`Membership.take`."""
    return group.take(idx) if isinstance(group, Membership) else np.asarray(group)[idx]


def pairs_of(group, n_groups: int | None = None) -> tuple[np.ndarray | None, np.ndarray]:
    """(rows, cells) of a split's groups: a membership's pairs, or (None, the partition's index) — cell c_p of
    pair p and its sample i_p (i_p = p for a partition)."""
    if isinstance(group, Membership):
        return group.rows, group.groups
    return None, np.asarray(group).astype(np.int64)

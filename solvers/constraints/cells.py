"""Vectorised per-cell means, the building block of every group-fairness surrogate.

A *cell* partition assigns each sample i a cell c(i) in {0..C-1} (a group g, or a
group × label pair (g, y)). For values v_i the cell means are

    v̄_c = (1/N_c) Σ_{i: c(i)=c} v_i,

computed with one ``index_add_`` (no loop over samples or cells). Cells with
N_c = 0 are *invalid* and ignored by :func:`spread`.

Overlapping cells (a sample in several groups, e.g. PLADA's threshold groups) are a sparse membership
M ∈ {0,1}^{n×C} given as its nonzero pairs (i_p, c_p), p = 1..nnz (COO / CSR order): ``rows`` = (i_p),
``index`` = (c_p). Then v̄_c = (1/N_c) Σ_{p: c_p=c} v_{i_p} = (Mᵀv)_c / N_c, one ``index_select`` + one
``index_add_``. A partition is the one-hot M with i_p = p: ``rows`` is None there and the gather is skipped,
so both are the same code path at the partition's old cost.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor


@dataclass
class CellIndex:
    index: Tensor   # (n,) long, cell of each sample; overlapping: (nnz,) cell c_p of each membership pair
    n_cells: int
    counts: Tensor  # (C,) float, N_c
    valid: Tensor   # (C,) bool, N_c > 0
    composition: bytes | None = field(default=None, repr=False, compare=False)  # :meth:`counts_key`, once read
    rows: Tensor | None = None  # overlapping: (nnz,) long, sample i_p of each pair; None = partition (i_p = p)

    @classmethod
    def build(cls, index: Tensor, n_cells: int, dtype: torch.dtype = torch.float32,
              rows: Tensor | None = None) -> "CellIndex":
        index = index.long()
        counts = torch.zeros(n_cells, dtype=dtype, device=index.device)
        counts.index_add_(0, index, torch.ones_like(index, dtype=dtype))
        return cls(index=index, n_cells=n_cells, counts=counts, valid=counts > 0,
                   rows=None if rows is None else rows.long())

    @property
    def overlapping(self) -> bool:
        return self.rows is not None

    def sums(self, values: Tensor) -> Tensor:
        """(Mᵀv)_c = Σ_{i∈c} v_i for every cell; differentiable in ``values``."""
        if self.rows is not None:
            values = values.index_select(0, self.rows)
        return values.new_zeros(self.n_cells).index_add_(0, self.index, values)

    def pull(self, per_cell: Tensor, n: int) -> Tensor:
        """(M w)_i = Σ_{c∋i} w_c for every sample (the adjoint of :meth:`sums`; n samples)."""
        picked = per_cell.index_select(0, self.index)
        if self.rows is None:
            return picked
        return picked.new_zeros(n).index_add_(0, self.rows, picked)

    def counts_key(self) -> bytes | None:
        """The counts (N_c)_c as bytes, a hashable key for caches by batch composition; None off the CPU (reading
        the counts there would be a host sync)."""
        if self.composition is None and self.counts.device.type == "cpu":
            self.composition = self.counts.numpy().tobytes()
        return self.composition

    def means(self, values: Tensor) -> Tensor:
        """v̄_c for every cell (0 for empty cells); differentiable in ``values``."""
        return self.sums(values) / self.counts.clamp_min(1.0)

    def to(self, device: torch.device) -> "CellIndex":
        return CellIndex(self.index.to(device), self.n_cells, self.counts.to(device), self.valid.to(device),
                         rows=None if self.rows is None else self.rows.to(device))


def spread(means: Tensor, valid: Tensor) -> Tensor:
    """max_c v̄_c − min_c v̄_c over valid cells (0 when fewer than two are valid).

    For two cells this is exactly |v̄_a − v̄_b|. ``means``/``valid`` may carry
    leading batch dimensions: the spread is taken over the last one. No host sync.
    """
    hi = means.masked_fill(~valid, float("-inf")).amax(-1)
    lo = means.masked_fill(~valid, float("inf")).amin(-1)
    return torch.where(valid.any(-1), hi - lo, torch.zeros_like(hi))


def spread_adjoint(means: Tensor, valid: Tensor) -> Tensor:
    """∂ :func:`spread` / ∂ ``means``, the subgradient autograd takes (same shapes as the arguments):

        e_hi / |hi| − e_lo / |lo|,   hi = argmax_c v̄_c, lo = argmin_c v̄_c over valid cells,

    a tie shared evenly among the tied cells (as ``amax`` / ``amin`` do), 0 on invalid cells and on rows
    without a valid cell. The closed-form vjp of the rate families (:mod:`solvers.constraints`). No host sync.
    """
    masked_hi = means.masked_fill(~valid, float("-inf"))
    masked_lo = means.masked_fill(~valid, float("inf"))
    at_hi = (masked_hi == masked_hi.amax(-1, keepdim=True)) & valid
    at_lo = (masked_lo == masked_lo.amin(-1, keepdim=True)) & valid
    hi = at_hi.to(means.dtype) / at_hi.sum(-1, keepdim=True).clamp_min(1).to(means.dtype)
    lo = at_lo.to(means.dtype) / at_lo.sum(-1, keepdim=True).clamp_min(1).to(means.dtype)
    return hi - lo


def deviation(means: Tensor, valid: Tensor, overall: Tensor, kept: Tensor) -> Tensor:
    """|v̄_g − v̄| for every group g of ``kept`` (0 where g is not ``valid``): one row per kept group. No host
    sync."""
    picked = means.index_select(0, kept)
    return torch.where(valid.index_select(0, kept), (picked - overall).abs(), torch.zeros_like(picked))

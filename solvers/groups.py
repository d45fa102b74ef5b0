"""Vectorised per-cell means, the building block of every group-fairness surrogate.

A *cell* partition assigns each sample i a cell c(i) in {0..C-1} (a group g, or a
group × label pair (g, y)). For values v_i the cell means are

    v̄_c = (1/N_c) Σ_{i: c(i)=c} v_i,

computed with one ``index_add_`` (no loop over samples or cells). Cells with
N_c = 0 are *invalid* and ignored by :func:`spread`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor


@dataclass
class CellIndex:
    index: Tensor   # (n,) long, cell of each sample
    n_cells: int
    counts: Tensor  # (C,) float, N_c
    valid: Tensor   # (C,) bool, N_c > 0
    composition: bytes | None = field(default=None, repr=False, compare=False)  # :meth:`counts_key`, once read

    @classmethod
    def build(cls, index: Tensor, n_cells: int, dtype: torch.dtype = torch.float32) -> "CellIndex":
        index = index.long()
        counts = torch.zeros(n_cells, dtype=dtype, device=index.device)
        counts.index_add_(0, index, torch.ones_like(index, dtype=dtype))
        return cls(index=index, n_cells=n_cells, counts=counts, valid=counts > 0)

    def counts_key(self) -> bytes | None:
        """The counts (N_c)_c as bytes, a hashable key for caches by batch composition; None off the CPU (reading
        the counts there would be a host sync)."""
        if self.composition is None and self.counts.device.type == "cpu":
            self.composition = self.counts.numpy().tobytes()
        return self.composition

    def means(self, values: Tensor) -> Tensor:
        """v̄_c for every cell (0 for empty cells); differentiable in ``values``."""
        sums = values.new_zeros(self.n_cells).index_add(0, self.index, values)
        return sums / self.counts.clamp_min(1.0)

    def to(self, device: torch.device) -> "CellIndex":
        return CellIndex(self.index.to(device), self.n_cells, self.counts.to(device), self.valid.to(device))


def spread(means: Tensor, valid: Tensor) -> Tensor:
    """max_c v̄_c − min_c v̄_c over valid cells (0 when fewer than two are valid).

    For two cells this is exactly |v̄_a − v̄_b|. ``means``/``valid`` may carry
    leading batch dimensions: the spread is taken over the last one. No host sync.
    """
    hi = means.masked_fill(~valid, float("-inf")).amax(-1)
    lo = means.masked_fill(~valid, float("inf")).amin(-1)
    return torch.where(valid.any(-1), hi - lo, torch.zeros_like(hi))

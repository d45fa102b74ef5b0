r"""A mostly-zero training matrix kept beside its dense form as CSR, for the full-batch products of a linear model.

One-hot encoded tables are mostly zero (Adult's train split: 19,536 × 108, 13 % of the entries non-zero). A
linear score model's full-batch forward s = X w + b and its pullback ∇_w (vᵀ s) = Xᵀ v read all n·d entries of
the dense X; with X and Xᵀ also stored as CSR (32-bit indices) each product reads the non-zeros only — on that
split 0.15 ms instead of 0.38 ms of CPU per product (one thread; measured with ``time.process_time`` on a loaded
machine). Both are kept only when the share of non-zero entries is at most :data:`MAX_DENSITY`, so the two copies
take at most 2 · 8 · 0.25 · n·d bytes, the dense float32 X's own size.

The sums run over the non-zeros in another order than the dense kernel's: the products agree with the dense ones
to float rounding, not bit for bit (solvers that branch on a value, as SSG's switch does, can then take another
branch where a value sits at the threshold).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
from torch import Tensor

#: at most this share of non-zero entries: beyond it the CSR copies would outgrow the dense matrix and the
#: per-non-zero product loses its edge over the dense kernel
MAX_DENSITY = 0.25
_INT32 = 2 ** 31 - 1


@dataclass(frozen=True)
class SparseRows:
    """CSR copies of an (n, d) float matrix X and of Xᵀ."""

    rows: Tensor     # X as CSR (n × d)
    columns: Tensor  # Xᵀ as CSR (d × n)

    def mv(self, w: Tensor) -> Tensor:
        """X w, shape (n,)."""
        return self.rows @ w

    def rmv(self, v: Tensor) -> Tensor:
        """Xᵀ v, shape (d,)."""
        return self.columns @ v

    @classmethod
    def of(cls, X: Tensor) -> "SparseRows | None":
        """The CSR copies of ``X``, or None: not a CPU float32 matrix, empty, more than :data:`MAX_DENSITY` of
        its entries non-zero, or too many non-zeros for 32-bit indices."""
        if X.device.type != "cpu" or X.dtype != torch.float32 or X.ndim != 2 or X.numel() == 0:
            return None
        nnz = int(torch.count_nonzero(X))
        if nnz > MAX_DENSITY * X.numel() or nnz >= _INT32 or max(X.shape) >= _INT32:
            return None
        n, d = X.shape
        with warnings.catch_warnings():  # torch: "Sparse CSR tensor support is in beta state"
            warnings.simplefilter("ignore", UserWarning)
            csr, csc = X.to_sparse_csr(), X.to_sparse_csc()
            rows = torch.sparse_csr_tensor(csr.crow_indices().int(), csr.col_indices().int(), csr.values(), (n, d))
            columns = torch.sparse_csr_tensor(csc.ccol_indices().int(), csc.row_indices().int(), csc.values(), (d, n))
        return cls(rows, columns)


def sparse_rows(problem) -> SparseRows | None:
    """:meth:`SparseRows.of` the problem's training matrix, built on first use and kept on the problem (its X is
    fixed once built; auto's candidates share one problem, so one build serves them all)."""
    X = problem.X
    cached = problem.__dict__.get("_sparse_rows")
    if cached is None or cached[0] is not X or cached[1] != X._version:  # (a new or changed X: build again)
        cached = problem.__dict__["_sparse_rows"] = (X, X._version, SparseRows.of(X))
    return cached[2]

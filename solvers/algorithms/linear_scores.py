r"""Fast scores h = Xw + b of a linear model for full-batch inner loops (IDCA's SSG, the
partial-fairness baselines): the one place where the data matrix is touched.

Why: on a9a with cross terms (n ≈ 29k, d = 247, 11 % dense) the autograd path of ``nn.Linear``
reads the dense X twice per step (forward ``Xw``, backward ``gᵀX``) and dominated the inner
step. :class:`LinearScores` keeps X once in the cheapest layout and differentiates in *score
space*:

* forward   h = X w + b             (CSR ``X`` when density ≤ ``SPARSE_DENSITY``, else dense);
* backward  ∂/∂w = Xᵀ g, ∂/∂b = Σ g  (a precomputed CSR ``Xᵀ``, or the dense ``X`` transposed).

Everything downstream of h (objective, DC parts of the constraint families, switching rule)
stays ordinary autograd on n-vectors, so algorithms keep ONE implementation of their update:
they call :meth:`LinearScores.scores` instead of ``model(X)``. Batched Jacobians
(``is_grads_batched``) are not supported by the custom function; callers fall back to one
backward per row (IDCA does so once per outer iteration).
"""
from __future__ import annotations

import warnings

import torch
from torch import Tensor, nn

from ..constraints import FairnessData

SPARSE_DENSITY = 0.5  # CSR pays off below this fraction of non-zeros (CPU, one thread: bank with cross terms,
# density 0.304, n = 24,712, d = 125: CSR Xw 0.35 ms and Xᵀu 0.46 ms vs dense 2.0 ms and 0.49 ms)


def _csr32(A: Tensor) -> Tensor:
    """CSR with int32 indices: the CPU sparse kernels (MKL) take int32, and int64 indices are
    converted (copied) at every product otherwise (2/3 of the product's time on a9a)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "sparse CSR support is in beta"
        S = A.to_sparse_csr()
        return torch.sparse_csr_tensor(S.crow_indices().to(torch.int32), S.col_indices().to(torch.int32),
                                       S.values(), S.shape)


class _Scores(torch.autograd.Function):
    @staticmethod
    def forward(ctx, w: Tensor, b: Tensor, X: Tensor, XT: Tensor, sparse: bool) -> Tensor:
        ctx.XT, ctx.sparse = XT, sparse
        return torch.mv(X, w.reshape(-1)) + b.reshape(())  # CSR mv: ~1.5x faster than sparse.mm on a9a

    @staticmethod
    def backward(ctx, g: Tensor):
        return torch.mv(ctx.XT, g).reshape(1, -1), g.sum().reshape(1), None, None, None


class LinearScores:
    """Scores of ``model`` (a :func:`solvers.models.factory.linear` ScoreModel) on the training set of
    ``problem``, in the order ``perm`` (samples sorted by group); use :attr:`y` and :attr:`data`
    (the labels and fairness data in that order) with them."""

    def __init__(self, model: nn.Module, problem, sparse: bool | None = None) -> None:
        net = model.net
        self.weight, self.bias = net.weight, net.bias
        # Samples sorted by group (stable): every loss here is a sum over samples, so the order is
        # free, and contiguous groups make the per-group means slice sums (solvers.constraints.partial).
        self.perm = torch.argsort(problem.group, stable=True)
        X = problem.X[self.perm]
        self.y = problem.y[self.perm]
        self.data = FairnessData.build(self.y, problem.group[self.perm], len(problem.group_names))
        if sparse is None:
            density = float((X != 0).sum()) / max(X.numel(), 1)
            sparse = density <= SPARSE_DENSITY
        self.sparse = sparse
        if sparse:
            self.X, self.XT = _csr32(X), _csr32(X.t().contiguous())
        else:
            self.X = X.contiguous()
            self.XT = X.t().contiguous()

    @staticmethod
    def applicable(model: nn.Module, model_type: str) -> bool:
        net = getattr(model, "net", None)
        return (model_type == "linear" and isinstance(net, nn.Linear) and net.out_features == 1
                and net.bias is not None)

    def scores(self) -> Tensor:
        return _Scores.apply(self.weight, self.bias, self.X, self.XT, self.sparse)

    def pullback(self, J: Tensor) -> list[Tensor]:
        """Rows ∂f_i/∂h (m, n) → [∂f_i/∂weight (m, 1, d), ∂f_i/∂bias (m, 1)] (Jacobian chain rule)."""
        Jw = torch.sparse.mm(self.XT, J.t().contiguous()) if self.sparse else self.XT @ J.t()
        return [Jw.t().reshape(J.shape[0], *self.weight.shape), J.sum(1).reshape(J.shape[0], 1)]

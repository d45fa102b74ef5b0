r"""The parameters θ = (θ_1, ..., θ_T) as views of ONE contiguous buffer while the driver iterates, and the
parameter sum the driver's divergence check reads each iteration.

The check needs a scalar that is non-finite exactly when some entry of θ is (up to float overflow). Over T
separate tensors it is S(θ) = Σ_t ‖θ_t‖₁, one fused ``_foreach_norm`` plus a stack (about 30 µs for the 6 tensors
of a 64-32 MLP on one core: the cost of a whole forward on a batch of 8). Over one buffer b holding every entry it
is the plain sum S(b) = Σ_j b_j (about 2 µs): a NaN entry makes it NaN, an infinite one makes it ±∞ or, with an
infinity of the other sign, NaN, and finite entries sum to a finite value below float overflow. On the small
networks of the stochastic solvers that is 5 % of an iteration.

:func:`one_buffer` copies θ into b and points each parameter's storage at its slice of b (``p.data = view``: the
Parameter objects, the algorithm's ``params`` list, optimizers and :class:`~solvers.models.score_net.ScoreNet`
keep their references; in-place updates of a parameter write b). Only for algorithms that build no autograd
graph (``needs_autograd`` False) and whose parameters share one dtype and device. At the end each parameter gets
a storage of its own again (a model file holds no shared storage). :func:`parameter_sum` uses b only while
every parameter still lives there (a checkpoint restore copies in place and keeps it; anything that replaced a
storage falls back to the per-tensor sum).
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import torch
from torch import Tensor


class ParameterBuffer:
    """b and the data pointers its views had when made."""

    __slots__ = ("flat", "pointers")

    def __init__(self, flat: Tensor, pointers: list[int]) -> None:
        self.flat = flat
        self.pointers = pointers

    def holds(self, params: list[Tensor]) -> bool:
        return [p.data_ptr() for p in params] == self.pointers


@contextlib.contextmanager
def one_buffer(params: list[Tensor], enabled: bool = True) -> Iterator[ParameterBuffer | None]:
    """θ as views of one buffer inside the block (yields the :class:`ParameterBuffer`, or None when not
    ``enabled`` or the parameters cannot share one: mixed dtypes or devices, sparse or repeated tensors)."""
    if (not enabled or len(params) < 2 or len({id(p) for p in params}) < len(params)
            or len({(p.dtype, p.device) for p in params}) > 1 or any(p.layout != torch.strided for p in params)):
        yield None
        return
    with torch.no_grad():
        flat = torch.cat([p.detach().reshape(-1) for p in params])
        offset = 0
        for p in params:
            p.data = flat[offset:offset + p.numel()].view_as(p)
            offset += p.numel()
    try:
        yield ParameterBuffer(flat, [p.data_ptr() for p in params])
    finally:
        with torch.no_grad():
            for p in params:
                p.data = p.data.clone()


def parameter_sum(params: list[Tensor], buffer: ParameterBuffer | None = None) -> Tensor:
    """A sum of θ's entries, shape (1,), non-finite exactly when some entry is (up to float overflow): Σ_j b_j over
    the buffer while it holds θ, else Σ_t ‖θ_t‖₁ by one fused ``_foreach_norm`` over the tensors."""
    if buffer is not None and buffer.holds(params):
        return buffer.flat.sum(0, keepdim=True)
    if not params:
        return torch.zeros(1)
    if len({(p.dtype, p.device) for p in params}) > 1:  # (the fused norm wants one dtype and device)
        return torch.stack([p.abs().sum() for p in params]).sum().reshape(1)
    return torch.stack(torch._foreach_norm(params, 1)).sum().reshape(1)

r"""Hand-written forward and backward of the library's score models (``linear`` and ``mlp``).

A score model (:mod:`solvers.models.factory`) is f_θ(x) = a_L with

    h_0 = x,   a_l = h_{l−1} W_lᵀ + b_l,   h_l = φ(a_l)   (l = 1..L−1),   φ ∈ {ReLU, tanh}

(``linear`` is L = 1). :meth:`ScoreNet.forward` computes the scores of a batch without autograd and keeps
the tape h_0..h_{L−1}; :meth:`ScoreNet.pullback` is the chain rule written out: for v = ∂ℓ/∂a_L ∈ R^n,

    g_L = v,   ∂ℓ/∂W_l = g_lᵀ h_{l−1},   ∂ℓ/∂b_l = Σ_i g_l,i,   g_{l−1} = (g_l W_l) ⊙ φ'(a_{l−1})

with φ'(a) = 1{h > 0} for ReLU and 1 − h² for tanh (both read from h = φ(a)). On the small networks of
the stochastic benchmark (8,769 parameters, 8–64 rows per batch) running PyTorch's autograd graph costs
several times the arithmetic; algorithms that need only ∇θ of a weighted sum of the scores use these two
calls instead (:mod:`solvers.algorithms.score_space`). :meth:`ScoreNet.of` returns None for any other model
(custom factories, hooks), and callers keep autograd.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.functional import linear

from .factory import ScoreModel
from ..data.sparse_rows import SparseRows

_ACTIVATIONS = {nn.ReLU: "relu", nn.Tanh: "tanh"}


class ScoreNet:
    """The layers (W_1, b_1, ..., W_L, b_L) of a ScoreModel (the model's own parameters, read at each call,
    so in-place updates and checkpoint restores are seen) and its activation φ."""

    __slots__ = ("params", "activation")   # no __dict__: checkpoints do not walk it (the model holds θ)

    def __init__(self, params: list[Tensor], activation: str) -> None:
        self.params = params
        self.activation = activation

    @classmethod
    def of(cls, model: nn.Module) -> "ScoreNet | None":
        if not isinstance(model, ScoreModel) or model._forward_hooks or model._forward_pre_hooks:
            return None
        net = model.net
        layers = [net] if isinstance(net, nn.Linear) else list(net) if isinstance(net, nn.Sequential) else []
        linears, activations = layers[0::2], {_ACTIVATIONS.get(type(m)) for m in layers[1::2]}
        if (not layers or len(layers) % 2 == 0 or None in activations or len(activations) > 1
                or not all(type(m) is nn.Linear and m.bias is not None for m in linears)
                or linears[-1].out_features != 1):
            return None
        return cls([p for m in linears for p in (m.weight, m.bias)], activations.pop() if activations else "relu")

    @property
    def linear(self) -> bool:
        """One layer: f(x) = w·x + b."""
        return len(self.params) == 2

    def forward(self, x: Tensor, rows: SparseRows | None = None) -> tuple[Tensor, list[Tensor]]:
        """(scores a_L of shape (n,), tape [h_0, ..., h_{L−1}]). Meant for grad mode off (the driver turns it off
        for score-space algorithms); with it on, the same values with a needless graph. ``rows``: CSR copies of
        ``x`` (:mod:`solvers.data.sparse_rows`) for a :attr:`linear` net, whose product then reads x's non-zeros only."""
        if rows is not None and self.linear:
            return rows.mv(self.params[0].view(-1)).add_(self.params[1]), [x]
        act = torch.relu_ if self.activation == "relu" else torch.tanh_
        params, tape, h = self.params, [x], x
        last = len(params) // 2 - 1
        for layer in range(last):
            h = act(linear(h, params[2 * layer], params[2 * layer + 1]))   # h_l = φ(a_l), in place
            tape.append(h)
        return linear(h, params[-2], params[-1]).squeeze(-1), tape

    def __call__(self, x: Tensor) -> Tensor:
        return self.forward(x)[0]

    def pullback(self, tape: list[Tensor], v: Tensor, rows: SparseRows | None = None) -> list[Tensor]:
        """∇θ (vᵀ a_L) for the tape of :meth:`forward`, in the order of ``params`` (grad mode as :meth:`forward`);
        ``rows`` as in :meth:`forward` (∇_w = Xᵀ v from the CSR copy of Xᵀ)."""
        params = self.params
        if rows is not None and self.linear:
            return [rows.rmv(v).unsqueeze(0), v.sum(0, keepdim=True)]
        grads: list[Tensor] = [v] * len(params)
        g = v.unsqueeze(-1)                                              # g_L = v, (n, 1)
        for layer in range(len(tape) - 1, -1, -1):
            h = tape[layer]
            grads[2 * layer] = g.t().mm(h)                               # g_lᵀ h_{l−1}
            grads[2 * layer + 1] = g.sum(0)                              # Σ_i g_l,i
            if layer > 0:                                                # (g_l W_l) ⊙ φ'(a_{l−1})
                g = g.mm(params[2 * layer])
                g = (torch.ops.aten.threshold_backward(g, h, 0.0) if self.activation == "relu"
                     else torch.ops.aten.tanh_backward(g, h))
        return grads

r"""The ``auc_square`` objective: square surrogate of 1 − AUC (paper (6), f₀ of (10)).

    F(θ) = E[c₁(h(ξ) − h(ξ') − c₂)² | ζ = 1, ζ' = −1] = c₁[(m₊ − m₋ − c₂)² + Var₊ + Var₋]

computed in O(n). ``per_sample`` returns ℓ_i whose mean is F on the given rows:
ℓ_i = c₁[(m₊ − m₋ − c₂)² + (n/n₊)(h_i − m₊)² 1{y_i=1} + (n/n₋)(h_i − m₋)² 1{y_i=0}]
(the class means are those of the same rows). :mod:`solvers.objectives` names it with c₁ = c₂ = 1; the ``level_set``
/ ``iqrc`` solvers use the (c₁, c₂) of their ``auc_parity`` constraint for f₀.
"""
from __future__ import annotations

from torch import Tensor


def auc_square_per_sample(scores: Tensor, y: Tensor, c1: float = 1.0, c2: float = 1.0) -> Tensor:
    """ℓ_i with mean c₁[(m₊ − m₋ − c₂)² + Var₊ + Var₋]."""
    pos = (y > 0.5).to(scores.dtype)
    neg = 1.0 - pos
    n = scores.new_tensor(float(scores.numel()))
    npos, nneg = pos.sum().clamp_min(1.0), neg.sum().clamp_min(1.0)
    mp, mn = (pos * scores).sum() / npos, (neg * scores).sum() / nneg
    return c1 * ((mp - mn - c2) ** 2 + (n / npos) * pos * (scores - mp) ** 2 + (n / nneg) * neg * (scores - mn) ** 2)


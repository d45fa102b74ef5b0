"""Training objectives F(θ) = (1/N) Σ_i ℓ(f_θ(x_i), y_i), labels y_i ∈ {0,1}.

With ỹ = 2y − 1 ∈ {−1,+1}:

* ``logistic``: ℓ = log(1 + exp(−ỹ f)) (paper eq. 16), computed as softplus(−ỹ f);
* ``hinge``:    ℓ = [1 − ỹ f]^+;
* ``bce``:      ℓ = −y log σ(f) − (1−y) log(1−σ(f)), binary cross-entropy on σ(f).
  Mathematically identical to ``logistic``; computed from the logits for stability
  and kept as its own name because users ask for it.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F_
from torch import Tensor

Objective = Callable[[Tensor, Tensor], Tensor]


def logistic(scores: Tensor, y: Tensor) -> Tensor:
    return F_.softplus(-(2.0 * y - 1.0) * scores).mean()


def hinge(scores: Tensor, y: Tensor) -> Tensor:
    return F_.relu(1.0 - (2.0 * y - 1.0) * scores).mean()


def bce(scores: Tensor, y: Tensor) -> Tensor:
    return F_.binary_cross_entropy_with_logits(scores, y)


OBJECTIVES: dict[str, Objective] = {"logistic": logistic, "hinge": hinge, "bce": bce}


def get_objective(name: str | Objective) -> Objective:
    if callable(name):
        return name
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise ValueError(f"unknown objective {name!r}; known: {', '.join(OBJECTIVES)}") from None

"""Model factories f_θ: R^d → R (a score; predict y = 1 when f_θ(x) > 0).

* ``linear``: f_θ(x) = wᵀx + b, initialised at θ_0 = 0 (deterministic; the PLADA
  paper's linear experiments are convex-in-θ logistic regressions where a zero start
  is the natural choice; the notes suggest θ_0 = 0).
* ``mlp``: x → [Linear → activation] × len(hidden) → Linear(·, 1), PyTorch's default
  initialisation drawn from the solver's seeded generator.

All parameters are float32.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn

ModelFactory = Callable[[int], nn.Module]

_ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh}


class ScoreModel(nn.Module):
    """Wraps a network with one output unit and returns scores of shape (n,)."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def linear(n_features: int) -> nn.Module:
    net = nn.Linear(n_features, 1)
    nn.init.zeros_(net.weight)
    nn.init.zeros_(net.bias)
    return ScoreModel(net).float()


def mlp(n_features: int, hidden: list[int] | tuple[int, ...] = (64, 64), activation: str = "relu") -> nn.Module:
    layers: list[nn.Module] = []
    width = n_features
    for h in hidden:
        layers += [nn.Linear(width, h), _ACTIVATIONS[activation]()]
        width = h
    layers.append(nn.Linear(width, 1))
    return ScoreModel(nn.Sequential(*layers)).float()


def model_factory(spec) -> ModelFactory:
    """Factory ``n_features -> nn.Module`` for a :class:`~solvers.spec.ModelSpec`."""
    if spec.type == "linear":
        return linear
    return lambda d: mlp(d, spec.hidden, spec.activation)

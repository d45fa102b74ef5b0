"""Exact-penalty method: the fixed-multiplier baseline."""
from __future__ import annotations

import torch
import torch.nn.functional as F_
from torch import Tensor

from ..problem import Evaluation
from .base import ALGORITHMS
from .erm import ERM


@ALGORITHMS.implements("penalty")
class Penalty(ERM):
    r"""ℒ(θ) = F(θ) + λ Σ_j [G_j(θ)]^+ ; θ_{k+1} = θ_k − lr · d_k with d_k from a subgradient of ℒ."""

    def __init__(self, problem, config, model, seed: int = 0) -> None:
        super().__init__(problem, config, model, seed)
        m = len(problem.constraint_names)
        self._lambda = torch.full((m,), float(self.config.penalty), device=problem.device)

    def loss(self, current: Evaluation) -> Tensor:
        return current.objective + self.config.penalty * F_.relu(current.constraints).sum()

    def duals(self) -> dict[str, Tensor]:
        return {"lambda": self._lambda}

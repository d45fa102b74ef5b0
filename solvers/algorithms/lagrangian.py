r"""Plain Lagrangian gradient descent–ascent (baseline; discussed in the related work of the
PLADA paper, not run there).

Lagrangian L(θ, λ) = F(θ) + λᵀG(θ), λ ∈ R^m_+. Iteration k (simultaneous GDA):

    θ_{k+1} = Π_Θ(θ_k − η_θ (∇F(θ_k) + ∂G(θ_k)ᵀλ_k))
    λ_{k+1} = max{λ_k + η_λ G(θ_k), 0}

Choices: simultaneous (both updates use the evaluation at θ_k, one F/G evaluation per
iteration); λ_0 = 0; plain (projected) gradient steps, no momentum; the reported model is the
last iterate. Logs ``lambda``.
"""
from __future__ import annotations

import torch

from ..problem import Evaluation
from .base import ALGORITHMS, Algorithm, gradient


@ALGORITHMS.implements("lagrangian")
class Lagrangian(Algorithm):
    def start(self, current: Evaluation) -> None:
        self.lam = torch.zeros_like(current.constraints.detach())

    def step(self, k: int, current: Evaluation):
        c = self.config
        grads = gradient(current.objective + (self.lam * current.constraints).sum(), self.params)
        with torch.no_grad():
            torch._foreach_add_(self.params, grads, alpha=-c.lr_primal)
            self.problem.project_(self.params)
        self.lam = (self.lam + c.lr_dual * current.constraints.detach()).clamp_min(0.0)
        return self.evaluate(), {"lambda": self.lam}

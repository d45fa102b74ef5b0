r"""YNW: the primal-dual (virtual queue) subgradient method of Yu, Neely & Wei, "Online Convex
Optimization with Stochastic Constraints" (NeurIPS 2017) — reference [53] of the IPC paper, its
"(deterministic) subgradient method by [53]" baseline (§5), and the update rules of IPC's
Algorithm 3 applied directly to problem (1) (no proximal terms).

Problem: min_{θ∈Θ} F(θ) s.t. G_i(θ) ≤ 0, i = 1..m (each row of G separately). Iteration k:

    θ_{k+1} = argmin_{θ∈Θ} (V ζ_0 + Σ_i Q_i^k ζ_i)ᵀ(θ − θ_k) + α‖θ − θ_k‖²
            = Π_Θ(θ_k − (V ζ_0 + Σ_i Q_i^k ζ_i)/(2α)),        ζ_0 ∈ ∂F(θ_k), ζ_i ∈ ∂G_i(θ_k)
    Q_i^{k+1} = max{Q_i^k + G_i(θ_k) + ζ_iᵀ(θ_{k+1} − θ_k), 0},  Q^0 = 0
    output θ̄_K = (1/K) Σ_{k=0}^{K−1} θ_k

Choices (documented):

* V = √K, α = K (Algorithm 3 of the IPC paper / [53]) with K = ``horizon`` (default: the run's
  ``max_iterations``). The IPC paper tuned V and α for this baseline and reports no values, so
  both are config fields. Q_i/V plays the role of a Lagrange multiplier and is logged as
  ``lambda`` next to the queues ``Q``.
* ζ_iᵀ(θ_{k+1} − θ_k) for all i at once: a Jacobian-vector product obtained by a second
  backward pass through the (create_graph) gradient of V·F + (Q+u)ᵀG with respect to a dummy
  u = 0 — vectorised over the m constraints, no loop and no host sync.
* Mini-batches: F, G and their subgradients are estimated on the same batch (G is a plug-in
  estimate, not unbiased as [53]'s analysis assumes).
* Output (``output``): ``"average"`` (default, [53]'s running average θ̄_K) or ``"last"``.
  The trajectory records the iterates θ_k.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from ..problem import Evaluation
from .base import ALGORITHMS, Algorithm
from .switching import WeightedAverage, load_


def ynw_step(problem, params: list[Tensor], current: Evaluation, Q: Tensor, *, V: float, alpha: float,
             center: list[Tensor] | None = None, rho_hat: float = 0.0) -> Tensor:
    """One Yu–Neely–Wei step in place (then ``problem.project_``); returns Q^{k+1}.

    With ``center`` = x_t every function gets IPC's proximal term ρ̂/2‖z − x_t‖² (Algorithm 3):
    θ̃_i = θ_i + ρ̂/2‖z−x_t‖², ζ̃_i = ζ_i + ρ̂(z − x_t) for i = 0..m.
    """
    G = current.constraints
    u = torch.zeros_like(G.detach(), requires_grad=True)
    total = V * current.objective + ((Q + u) * G).sum()
    grads = torch.autograd.grad(total, params, create_graph=True, allow_unused=True)
    grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]
    with torch.no_grad():
        theta = G.detach()
        direction = [g.detach() for g in grads]
        if center is not None:
            diff = torch._foreach_sub(params, center)
            sq = torch.stack(torch._foreach_norm(diff)).square().sum()
            theta = theta + 0.5 * rho_hat * sq
            torch._foreach_add_(direction, torch._foreach_mul(diff, (V + Q.sum()) * rho_hat))
        new = torch._foreach_add([p.detach() for p in params], direction, alpha=-1.0 / (2.0 * alpha))
        problem.project_(new)  # on copies: the graph of ``grads`` still needs θ_k for the JVP below
        delta = torch._foreach_sub(new, [p.detach() for p in params])
    # J_G(z_k) Δ  =  d/du [ (V∇F + J_Gᵀ(Q+u)) · Δ ]
    inner = torch.stack([(g * d).sum() for g, d in zip(grads, delta)]).sum()
    jvp = torch.autograd.grad(inner, u, allow_unused=True)[0] if inner.requires_grad else None
    with torch.no_grad():
        torch._foreach_copy_(params, new)
        lin = torch.zeros_like(theta) if jvp is None else jvp.detach()
        if center is not None:
            lin = lin + rho_hat * torch.stack([(a * b).sum() for a, b in zip(diff, delta)]).sum()
        return (Q + theta + lin).clamp_min(0.0)


@ALGORITHMS.implements("ynw")
class YNW(Algorithm):
    def start(self, current: Evaluation) -> None:
        c = self.config
        K = c.horizon or self.horizon or 1
        self.V = c.V if c.V is not None else math.sqrt(K)
        self.alpha = c.alpha if c.alpha is not None else float(K)
        self.Q = torch.zeros_like(current.constraints.detach())
        self.average = WeightedAverage(self.params)

    def step(self, k: int, current: Evaluation):
        if self.config.output == "average":
            self.average.add(self.params)
        self.Q = ynw_step(self.problem, self.params, current, self.Q, V=self.V, alpha=self.alpha)
        return self.evaluate(), {"Q": self.Q, "lambda": self.Q / self.V}

    def finish(self) -> Evaluation | None:
        value = self.average.value() if self.config.output == "average" else None
        if value is None:
            return None
        load_(self.params, value)
        with torch.no_grad():
            return self.problem.evaluate(self.model)

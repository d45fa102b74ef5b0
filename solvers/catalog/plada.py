"""Catalog: the baselines and PLADA of the proximal-perturbed Lagrangian paper (ERM, penalty, GDA, PLADA)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat

from .base import ALGORITHMS, AlgorithmConfig


@ALGORITHMS.declare(
    "erm",
    overlapping_groups=True,
    implementation="solvers.algorithms.erm:ERM",
    aliases=("unconstrained",),
    paper="(baseline) empirical risk minimisation, no fairness constraint",
    description="Minimises F(θ) with full-batch Adam (or plain gradient descent; without a batch_size, "
    "mini-batches of 4,096 rows above 262,144 training rows), ignoring the constraints; "
    "constraint values are still computed and logged so the unfairness of the plain model is visible. A gbdt "
    "model is boosted with LightGBM's logistic objective instead, one tree per iteration.",
    supported_models=("linear", "mlp", "gbdt"),
)
class PrimalConfig(AlgorithmConfig):
    optimizer: Literal["adam", "gd"] = Field(
        "adam", description="'adam' (torch.optim.Adam, default betas) or 'gd' (plain full-batch gradient descent)."
    )
    lr: PositiveFloat = Field(0.05, description="Step size of the θ update.")


@ALGORITHMS.declare(
    "penalty",
    overlapping_groups=True,
    implementation="solvers.algorithms.penalty:Penalty",
    aliases=("exact_penalty",),
    paper="(baseline) exact ℓ1 penalty method, e.g. Nocedal & Wright (2006), ch. 17",
    description="Minimises F(θ) + λ Σ_j max(0, G_j(θ)) by full-batch (sub)gradient steps (Adam or plain GD) "
    "with a fixed penalty weight λ (without a batch_size, mini-batches of 4,096 rows above 262,144 training rows).",
)
class PenaltyConfig(PrimalConfig):
    penalty: NonNegativeFloat = Field(1.0, description="Penalty weight λ on Σ_j max(0, G_j(θ)).")


@ALGORITHMS.declare(
    "lagrangian",
    overlapping_groups=True,
    implementation="solvers.algorithms.lagrangian:Lagrangian",
    aliases=("gda", "lagrangian-gda"),
    paper="(baseline) gradient descent–ascent on the Lagrangian F + λᵀG, λ ≥ 0",
    description="Simultaneous projected gradient descent in θ and projected gradient ascent in λ ≥ 0 on the plain "
    "Lagrangian; constant step sizes lr_primal and lr_dual.",
)
class LagrangianConfig(AlgorithmConfig):
    lr_primal: PositiveFloat = Field(0.1, description="Primal step size η_θ (descent on L in θ).")
    lr_dual: PositiveFloat = Field(0.1, description="Dual step size η_λ (projected ascent on L in λ ≥ 0).")


@ALGORITHMS.declare(
    "plada",
    overlapping_groups=True,
    implementation="solvers.algorithms.plada:PLADA",
    aliases=("p-lagrangian", "proximal-perturbed-lagrangian"),
    paper="A Modified Proximal-Perturbed Lagrangian for Non-Convex Non-Smooth Representatives of Fairness "
    "Constraints (PLADA, Algorithm 1)",
    description="Single-loop primal-dual method on a modified proximal-perturbed Lagrangian: one projected "
    "(sub)gradient step on θ, a projected step on the slack u, a damped step on the auxiliary multiplier μ and "
    "an exact maximisation in λ. Constant α, β, ρ; only γ_k decays.",
)
class PLADAConfig(AlgorithmConfig):
    eta: PositiveFloat | None = Field(
        None, description="Primal step size η (Table 2 η_w). None = paper default: 0.001 for linear models, "
        "0.1 for neural networks.")
    tau: PositiveFloat | None = Field(
        None, description="Slack step size τ (Table 2 η_u). None = paper default: 0.1 linear, 0.01 neural network.")
    alpha: PositiveFloat = Field(10.0, description="Penalty parameter α of the perturbation z (Table 2: 10).")
    beta: PositiveFloat | None = Field(
        None, description="Proximal parameter β on ‖λ−μ‖² (Table 2: 0.1 linear, 0.5 neural network). None = paper default.")
    gamma0: PositiveFloat = Field(0.1, le=1.0, description="Cap γ_0 ∈ (0,1] of the μ step size γ_k (Table 2: 0.1).")
    kappa: PositiveFloat = Field(
        10.0, description="δ_k = κ/(k+1) in γ_k = min{γ_0, ρδ_k/(‖λ_k−μ_k‖²+1)}. Not given in the paper; 10 chosen.")
    row_weights: Literal["auto", "sum", "mean"] = Field(
        "auto", description="Weights of the constraint rows in the θ-step (9), ∂G(θ_k)ᵀ(w ⊙ λ_k): 'sum' w = 1 "
        "(Algorithm 1 as written, ⟨λ, G⟩); 'mean' w_j = 1/m_f for the m_f rows of family f; 'auto' = 'mean' for a "
        "family whose constraint is an expectation over groups (intersectional, eq. 18's E_G: summed, its hundreds of "
        "rows outweigh ∇F, 147× at θ_0 on Communities & Crime, and Table 2's η = 0.1 diverges), 'sum' for every other.")
    u_max: PositiveFloat | None = Field(
        None, description="Upper bound B_G of the slack u ∈ [0, u_max]^m. None = 1 + ε_j for constraint j.")

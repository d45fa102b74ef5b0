"""Catalog: AUC-based fairness (the auc_parity constraint type, level-set / IQRC and the paper's baselines)."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

from .base import ALGORITHMS, CONSTRAINTS, AlgorithmConfig

Variant = Literal["group", "inter", "intra", "aeg_positive", "aeg_negative", "bpsn_bnsp"]


@CONSTRAINTS.declare(
    "auc_parity",
    max_tolerance=1.0,
    implementation="solvers.constraints.auc_parity:AUCParity",
    aliases=("auc_fairness",),
    description="AUC-based fairness (Yao, Lin & Yang 2023): |AUC(G1,G1') − AUC(G2,G2')| ≤ tolerance for the "
    "chosen variant (group / inter / intra / aeg_positive / aeg_negative / bpsn_bnsp); threshold-free.",
)
class AUCParityConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    variant: Variant = Field(
        "group", description="Which AUC fairness metric (paper App. A): 'group' (Ex.1, |AUC(γ=1,γ=−1) − ½|), "
        "'inter' (Ex.2, xAUC), 'intra' (Ex.3, within-group AUC parity), 'aeg_positive' / 'aeg_negative' "
        "(Ex.4, average equality gaps), 'bpsn_bnsp' (Ex.5, |BPSN − BNSP|).")
    protected: str | None = Field(
        None, description="Group name taking γ = +1 (the protected group); every other group is γ = −1. "
        "None = the first group.")
    c1: float = Field(0.5, gt=0, description="c₁ of the square surrogate ℓ(t) = c₁(t − c₂)² (paper: c₁ ∈ {0.5, 1}; "
                      "0.5 satisfies Lemma 2's c₁c₂² ≤ 0.5, so w = 0 is strictly feasible).")
    c2: float = Field(1.0, gt=0, description="Margin c₂ of the square surrogate (paper: 1).")
    n_boot: int = Field(200, ge=0, description="Bootstrap replicates of the 95% confidence intervals of the exact "
                        "metrics (0 = none).")


@ALGORITHMS.declare(
    "level_set",
    implementation="solvers.algorithms.level_set:LevelSet",
    aliases=("sfls", "sfls-smd"),
    paper="Stochastic Methods for AUC Optimization subject to AUC-based Fairness Constraints (Yao, Lin & Yang, "
    "AISTATS 2023), Algorithms 1–2",
    description="Stochastic feasible level-set method (SFLS) with a stochastic mirror-descent oracle on the "
    "per-sample min–max reformulation of the square AUC surrogate: one sample (no pairs) per gradient, "
    "closed-form dual updates, O(n) per epoch. Returns the validation-selected iterate.",
    supported_models=("linear",),
    supported_constraints=("auc_parity",),
)
class LevelSetConfig(AlgorithmConfig):
    batch_size: PositiveInt | None = Field(100, description="Samples per SMD step (paper: 100). None = full batch.")
    eta: PositiveFloat = Field(0.1, description="η in η_t = η/√(t+1) (paper grid {0.01, 0.1, 1}).")
    tau: PositiveFloat = Field(10.0, description="τ in τ_t = τ/√(t+1), the dual (Lemma 3) step (not given in the paper).")
    inner_iterations: PositiveInt = Field(500, description="T, SMD steps per oracle call A(r_k).")
    theta: float = Field(1.1, gt=1.0, description="θ > 1 of SFLS (r_{k+1} = r_k + U/(2θ)); the paper's experiments "
                         "use θ = 1, which its theory excludes.")
    epsilon: PositiveFloat = Field(0.01, description="Relative accuracy ε: stop when U(r_k) ≥ −ε_opt = (1/θ) U(r₀) ε.")
    r0: float | None = Field(None, description="Initial level r₀ > f*. None = c₁c₂² + 0.01.")
    interval: PositiveFloat = Field(2.0, description="I: a, b, α ∈ [−I, I] (the interval I of (9)).")
    c1: PositiveFloat | None = Field(None, description="c₁ (None: from the auc_parity constraint, else 0.5).")
    c2: PositiveFloat | None = Field(None, description="c₂ (None: from the auc_parity constraint, else 1).")
    warm_start: bool = Field(True, description="Start each oracle call at the previous x̄ (False: at x⁽⁰⁾ as in "
                             "Algorithm 2).")
    select_every: PositiveInt = Field(50, description="Evaluate the iterate for model selection every this many steps.")
    rho_hat: float = Field(0.0, ge=0.0, description="ρ̂ of d_x(x) = (ρ̂/2)‖x − x̃‖² (0: convex case).")


@ALGORITHMS.declare(
    "iqrc",
    implementation="solvers.algorithms.iqrc:IQRC",
    aliases=("inexact-quadratically-regularized-constrained",),
    paper="Stochastic Methods for AUC Optimization subject to AUC-based Fairness Constraints (Yao, Lin & Yang, "
    "AISTATS 2023), Algorithm 3 (IQRC of Ma et al. 2020)",
    description="Proximal outer loop (IQRC) calling the level-set SFLS/SMD method on proximally regularised "
    "subproblems: the weakly convex (MLP) version of level_set.",
    supported_models=("mlp", "linear"),
    supported_constraints=("auc_parity",),
)
class IQRCConfig(LevelSetConfig):
    rho_hat: float = Field(1e-5, ge=0.0, description="ρ̂ of the proximal term (paper App. E.3: 1e-5).")
    oracle_calls_per_stage: PositiveInt = Field(
        2, description="SFLS oracle calls per proximal stage s (then x̃⁽ˢ⁺¹⁾ ← x̄, r ← r₀); not given in the paper.")


@ALGORITHMS.declare(
    "proxy_lagrangian",
    implementation="solvers.algorithms.proxy_lagrangian:ProxyLagrangian",
    aliases=("cotter",),
    paper="Cotter, Jiang & Sridharan 2019, Two-player games for efficient non-convex constrained optimization "
    "(baseline of Yao, Lin & Yang 2023)",
    description="Pairwise proxy-Lagrangian: θ on sigmoid pair surrogates, λ by multiplicative weights on the exact "
    "pairwise AUC constraints of the batch (quadratic in the batch / data).",
    supported_constraints=("auc_parity",),
)
class ProxyLagrangianConfig(AlgorithmConfig):
    batch_size: PositiveInt | None = Field(100, description="Mini-batch size (paper: 100); pairs are formed in it.")
    lr: PositiveFloat = Field(0.1, description="θ-player SGD step.")
    lr_lambda: PositiveFloat = Field(0.5, description="λ-player multiplicative-weights step η_λ.")
    temperature: PositiveFloat = Field(1.0, description="s of the sigmoid surrogate σ((h_i − h_j)/s).")
    select_every: PositiveInt = Field(50, description="Model-selection evaluation period (steps).")


@ALGORITHMS.declare(
    "correlation_penalty",
    implementation="solvers.algorithms.correlation_penalty:CorrelationPenalty",
    aliases=("beutel",),
    paper="Beutel et al. 2019, Putting fairness principles into practice (baseline of Yao, Lin & Yang 2023)",
    description="SGD on the square AUC surrogate plus λ·|corr(score, γ)| (group AUC fairness, Ex. 1).",
    supported_constraints=("auc_parity",),
)
class CorrelationPenaltyConfig(AlgorithmConfig):
    batch_size: PositiveInt | None = Field(100, description="Mini-batch size (paper: 100).")
    lam: float = Field(1.0, ge=0.0, description="Penalty weight λ on |corr(h, γ)|.")
    lr: PositiveFloat = Field(0.1, description="SGD step size (paper grid {0.01, 0.1, 1}).")
    select_every: PositiveInt = Field(50, description="Model-selection evaluation period (steps).")
    select_tolerances: list[float] = Field(
        default_factory=list, description="Further κ values for which the selection rule is applied to the same "
        "iterates (one run per λ serves a whole κ grid); the returned model carries "
        "``selected_by_tolerance`` = {κ: {'state_dict', 'selection_auc', 'selection_gap', 'feasible', 'step'}}.")


@ALGORITHMS.declare(
    "auc_postprocess",
    implementation="solvers.algorithms.auc_postprocess:AUCPostprocess",
    aliases=("kallus_zhou", "xauc_postprocess"),
    paper="Kallus & Zhou 2019, The fairness of risk scores beyond classification: bipartite ranking and the "
    "xAUC metric (baseline of Yao, Lin & Yang 2023)",
    description="Unconstrained AUC training, then the protected group's scores become ω₁h + ω₂ with (ω₁, ω₂) "
    "grid-searched on validation for the feasible point of best AUC.",
    supported_constraints=("auc_parity",),
)
class AUCPostprocessConfig(AlgorithmConfig):
    batch_size: PositiveInt | None = Field(100, description="Mini-batch size of the unconstrained training.")
    lr: PositiveFloat = Field(0.1, description="SGD step of the unconstrained AUC training.")

"""Catalog: the stochastic benchmark (SSL-ALM, ALM, Stochastic Ghost, SSw and the SGD-fairret baseline)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt

from .base import ALGORITHMS, AlgorithmConfig


class StochasticConstraintsConfig(AlgorithmConfig):
    constraint_batch: PositiveInt | None = Field(
        None, description="Samples PER GROUP in each constraint estimate (drawn with replacement inside each "
        "group, Sec. 4: equal number of points for every subgroup). None = batch_size per group (the paper's "
        "public code), or the whole training set when batch_size is None (full batch).")


@ALGORITHMS.declare(
    "alm",
    implementation="solvers.algorithms.alm:ALM",
    aliases=("augmented_lagrangian", "stochastic_alm"),
    paper="Kliachkin et al., Benchmarking Stochastic Approximation Algorithms for Fairness-Constrained Training "
    "of Deep Neural Networks (ALM = Algorithm 2 with μ = 0, Sec. 4)",
    description="Stochastic linearized augmented Lagrangian with slacks: SSL-ALM without the proximal smoothing "
    "term (μ = 0); dual ascent with reset when ‖y‖ ≥ M_y and one projected stochastic gradient step on L_ρ.",
)
class ALMConfig(StochasticConstraintsConfig):
    eta: PositiveFloat = Field(0.05, description="Dual step size η of y_{k+1} = y_k + η c(x_k, ζ1) (Sec. 4: 0.05).")
    tau: PositiveFloat = Field(0.01, description="Primal step size τ of x_{k+1} = proj(x_k − τ𝒢) (Sec. 4: 0.01).")
    rho: NonNegativeFloat = Field(1.0, description="Augmented-Lagrangian penalty ρ ≥ 0 (Sec. 4: 1.0).")
    M_y: PositiveFloat = Field(10.0, description="Dual safeguard: y is reset to 0 when ‖y‖ ≥ M_y (Alg. 2 line 6; "
                               "Sec. 4: 10).")


@ALGORITHMS.declare(
    "ssl_alm",
    implementation="solvers.algorithms.alm:SSLALM",
    aliases=("ssl-alm", "sslalm", "smoothed_linearized_alm"),
    paper="Kliachkin et al., Benchmarking Stochastic Approximation Algorithms for Fairness-Constrained Training "
    "of Deep Neural Networks (SSL-ALM, Algorithm 2; Huang, Zhang & Alacaoglu 2025)",
    description="Stochastic smoothed and linearized augmented Lagrangian: slacks turn G ≤ 0 into equalities; "
    "one stochastic dual ascent step with reset when ‖y‖ ≥ M_y, one projected stochastic gradient step on the "
    "proximal augmented Lagrangian K_{ρ,μ}, and a damped move of the proximal centre z.",
)
class SSLALMConfig(ALMConfig):
    mu: NonNegativeFloat = Field(2.0, description="Proximal (smoothing) weight μ of (μ/2)‖x − z‖² (Sec. 4: 2.0; "
                                 "μ = 0 is ALM).")
    beta: float = Field(0.5, gt=0.0, le=1.0, description="Proximal-centre step β of z_{k+1} = z_k + β(x_k − z_k) "
                        "(Sec. 4: 0.5).")


@ALGORITHMS.declare(
    "ghost",
    implementation="solvers.algorithms.ghost:StochasticGhost",
    aliases=("stochastic_ghost", "stgh"),
    paper="Kliachkin et al., Benchmarking Stochastic Approximation Algorithms for Fairness-Constrained Training "
    "of Deep Neural Networks (Stochastic Ghost, Algorithm 1; Facchinei & Kungurtsev 2023)",
    description="Stochastic ghost-penalty SQP: a strongly convex QP direction with linearised constraints relaxed "
    "by κ (from an LP), estimated without bias by a multilevel Monte-Carlo combination of four mini-batch "
    "subproblems with geometric batch sizes, and a diminishing step α_k. Subproblems: exact closed forms for "
    "m ≤ 2 constraints, else SciPy (HiGHS LP, SLSQP on the QP dual).",
)
class GhostConfig(StochasticConstraintsConfig):
    p0: float = Field(0.4, gt=0.0, lt=1.0, description="Parameter p0 of N ~ Geom(p0) in the multilevel estimator "
                      "(9) (Sec. 4: 0.4).")
    alpha0: PositiveFloat = Field(0.05, description="Initial step size α0 (Sec. 4: 0.05).")
    alpha_hat: NonNegativeFloat = Field(0.05, description="Decay α̂ of α_k = α_{k−1}(1 − α̂α_{k−1}) (Sec. 4: 0.05).")
    rho: PositiveFloat = Field(0.8, description="Radius ρ of the ‖d‖_∞ ≤ ρ box in the κ-LP (Sec. 4: 0.8).")
    lam: float = Field(0.5, ge=0.0, le=1.0, description="Weight λ of t* in κ = (1−λ)max{0, max c} + λt* "
                       "(Sec. 4: 0.5).")
    tau: PositiveFloat = Field(1.0, description="Proximal weight τ of (τ/2)‖d‖² in the QP (7)/(8) (Sec. 4: 1).")
    beta: PositiveFloat = Field(10.0, description="Trust-region radius β of ‖d‖_∞ ≤ β in (7)/(8) (Sec. 4: 10).")
    max_level: NonNegativeInt | None = Field(
        None, description="Cap L on the level N (N ~ Geom(p0) truncated to {0..L}, weighted by the truncated "
        "probability). None = largest N with batch_size·2^{N+1} ≤ n_train (at least 0).")


@ALGORITHMS.declare(
    "ssw",
    implementation="solvers.algorithms.ssw:SSw",
    aliases=("stochastic_switching_subgradient", "stochastic-switching-subgradient"),
    paper="Kliachkin et al., Benchmarking Stochastic Approximation Algorithms for Fairness-Constrained Training "
    "of Deep Neural Networks (SSw, Algorithm 3; Huang & Lin 2023)",
    description="Stochastic switching subgradient: if the estimated max constraint is within a decaying tolerance "
    "ε_k take a projected stochastic subgradient step on F, otherwise on max_i c_i (fresh constraint batch).",
)
class SSwConfig(StochasticConstraintsConfig):
    eta_f: PositiveFloat = Field(0.5, description="Objective step size η^f_k (constant; Sec. 4: 0.5).")
    eta_c: PositiveFloat = Field(0.05, description="Constraint step size η^c_k (constant; Sec. 4: 0.05).")
    eps0: NonNegativeFloat = Field(1e-4, description="Infeasibility tolerance ε_k for k < decay_start "
                                   "(Sec. 4: 1e-4).")
    eps_decay: float = Field(0.97, gt=0.0, le=1.0, description="ε_k = eps_decay·ε_{k−1} for k ≥ decay_start "
                             "(Sec. 4: 0.97).")
    decay_start: NonNegativeInt = Field(500, description="Iteration (within an epoch) from which ε_k decays "
                                        "(Sec. 4: 500).")
    tol_per_epoch: bool = Field(True, description="Reset ε_k to eps0 at each epoch (Sec. 4 'at each epoch'; "
                                "public code). False: one global schedule.")


@ALGORITHMS.declare(
    "fairret_penalty",
    implementation="solvers.algorithms.fairret:FairretPenalty",
    aliases=("sgd_fairret", "fairret"),
    paper="Kliachkin et al., Benchmarking Stochastic Approximation Algorithms for Fairness-Constrained Training "
    "of Deep Neural Networks (baseline SGD-Fairret; fairret NormLoss, Buyl et al. 2024)",
    description="ERM plus a fixed-weight fairret penalty ‖γ_g/γ̄ − 1‖_p on a group statistic (accuracy, positive "
    "rate or TPR/FPR), minimised by mini-batch SGD or Adam; constraints are logged, not enforced.",
)
class FairretConfig(AlgorithmConfig):
    lr: PositiveFloat = Field(0.05, description="Step size (public code of the paper: 5e-2).")
    penalty: NonNegativeFloat = Field(0.5, description="Weight ω of the fairret term (public code: 0.5).")
    statistic: Literal["accuracy", "positive_rate", "tpr_fpr"] = Field(
        "accuracy", description="Group statistic γ: 'accuracy' (the paper's choice), 'positive_rate' "
        "(demographic parity) or 'tpr_fpr' (equalized odds).")
    p: PositiveFloat = Field(1.0, description="Order of the norm over groups (fairret NormLoss default 1).")
    optimizer: Literal["sgd", "adam"] = Field("sgd", description="torch.optim.SGD (the paper's SGD-Fairret) or Adam.")
    penalty_batch: PositiveInt | None = Field(
        None, description="Samples per group for the fairret term. None = ⌈batch_size / #groups⌉ (public code), "
        "or the whole training set when full batch.")

"""Catalog: partial fairness on percentile intervals (pSP / pDP constraint types, IDCA and the paper's baselines)."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt, field_validator

from ..metrics.percentile_intervals import validate_interval
from .auc import Variant
from .base import ALGORITHMS, CONSTRAINTS, AlgorithmConfig, ConstraintConfig


class PartialConfig(ConstraintConfig):
    interval: Any = Field(
        ..., description="Percentile interval I = [alpha, beta] (fractions, top-down within each group: [0, 0.2] "
        "is each group's top 20%), a union [[a1, b1], [a2, b2]], per-group {group: [a, b], '*': [a, b]} "
        "(Remark 5.3), or 'auto' (App. B rule: among candidate intervals covering p = Pr(h_w* > threshold) of "
        "the unconstrained model w*, the one where w* is least fair).")
    grid_size: PositiveInt = Field(10, le=1000, description="|Î|, number of grid percentiles p (auxiliary θ_p) of "
                                   "problem (15) (paper: 10). Used by partial_statistical_parity only.")
    surrogate: Literal["clipped_linear", "sigmoid"] = Field(
        "clipped_linear", description="σ ≈ 1{x>0}: 'clipped_linear' max{min{x+0.5,1},0} (all the paper's "
        "experiments) or 'sigmoid' e^x/(1+e^x).")
    threshold: float = Field(0.0, description="Decision threshold θ̂ on the score h_w (logit) for pDP, and for "
                             "p in the 'auto' rule (paper: 0).")
    auto_candidates: list[Annotated[list[float], Field(min_length=2, max_length=2)]] | None = Field(
        None, max_length=200, description="Candidate intervals for interval='auto' (None: every [a, b] on a 5% "
        "grid with 0.2 <= b − a <= 0.5 covering p).")
    auto_iterations: PositiveInt = Field(300, le=100_000, description="Iterations of the unconstrained fit for 'auto'.")

    @field_validator("interval")
    @classmethod
    def _interval(cls, value: Any) -> Any:
        return validate_interval(value)


@CONSTRAINTS.declare(
    "partial_statistical_parity",
    max_tolerance=1.0,
    implementation="solvers.constraints.partial:PartialStatisticalParity",
    aliases=("psp", "partial_sp"),
    description="Partial statistical parity on a percentile interval I (He et al., problem (15)): the score "
    "distributions of all groups, restricted to each group's own percentiles in I, are within KS distance "
    "`tolerance` (κ). Auxiliary thresholds θ_p on a grid Î of |Î| = grid_size percentiles.",
)
class PartialStatisticalParityConfig(PartialConfig):
    """No fields of its own beyond those it inherits."""


@CONSTRAINTS.declare(
    "partial_demographic_parity",
    max_tolerance=1.0,
    implementation="solvers.constraints.partial:PartialDemographicParity",
    aliases=("pdp", "partial_dp"),
    description="Partial demographic parity on a percentile interval I (He et al., problem (21)): among each "
    "group's scores with within-group percentile in I, the share above the threshold θ̂ differs by at most "
    "`tolerance` (κ) between groups.",
)
class PartialDemographicParityConfig(PartialConfig):
    """No fields of its own beyond those it inherits."""


@ALGORITHMS.declare(
    "idca",
    implementation="solvers.algorithms.idca:IDCA",
    aliases=("inexact-dca",),
    paper="He, Huang, Yao & Lin, Enforcing Fair Predicted Scores on Intervals of Percentiles by Difference-of-Convex "
    "Constraints (Algorithm 1 with the switching subgradient inner solver, Algorithm 2)",
    description="Inexact difference-of-convex algorithm: each outer iteration linearises the concave parts of the "
    "DC constraints (partial SP/DP) at the current point and solves the strongly convex subproblem inexactly with "
    "a switching subgradient method (Polyak steps), keeping every outer iterate nearly feasible.",
)
class IDCAConfig(AlgorithmConfig):
    inner_iterations: PositiveInt = Field(
        200, description="T, inner SSG iterations per outer iteration (paper G.2.2: chosen from {150, 200}).")
    epsilon: PositiveFloat = Field(
        1e-3, description="ε_k = ε, SSG's infeasibility tolerance and objective step ε/‖g_0'‖² (paper G.2.2: chosen "
        "from {5e-4, 1e-3, 2e-3, 5e-3}).")
    feasible_iterates: bool = Field(
        False, description="False (default): Algorithm 2 on subproblem (31) as written, as in the paper's "
        "experiments: SSG's tolerance ε makes every outer iterate ε-feasible (f_i ≤ ε; for pSP a rate, e.g. "
        "ε = 5e-3 against the whole band κ(β − α) = 2.5e-3 at κ = 0.01, I = [5%, 30%]). True: every outer iterate "
        "feasible, f_i(w^(k)) ≤ 0 (the conclusion of Lemma E.3): SSG runs on (31) with its constraints tightened "
        "by ε (g_i + ε ≤ 0). Needs ε well below the constraints' own slack at the start (pSP: κ(β − α)/2), else "
        "the start is the only point the tightened subproblem allows and IDCA stops there (bank, κ = 0.01: the "
        "constant model). Applies to the SSG inner solver.")
    mu: NonNegativeFloat = Field(
        1e-4, description="μ added as μ/2‖·‖² to every f⁺ and f⁻ (Assumption 6.3A); equals a proximal term "
        "μ/2‖v − w^(k)‖² in subproblem (31). Unspecified in the paper; 1e-4 chosen.")
    inner: Literal["ssg", "primal_dual"] | None = Field(
        None, description="Inner solver of (31): 'ssg' (Algorithm 2, full batch) or 'primal_dual' (§G.9, "
        "stochastic, for neural networks). None = 'ssg' for linear models, 'primal_dual' otherwise.")
    pd_batch_size: PositiveInt = Field(64, description="Mini-batch of the primal-dual inner solver (§G.9: 64).")
    pd_lr: PositiveFloat = Field(0.01, description="Primal step of the primal-dual inner solver (not in the paper).")
    pd_dual_lr: PositiveFloat = Field(0.5, description="Dual step of the primal-dual inner solver (not in the paper).")
    initial_score: float | None = Field(
        None, description="None: w(0) = 0 (paper G.2.2). A number b: start at the constant score h ≡ b (weights 0, "
        "bias b; pSP thresholds θ_p shifted by b), also trivially fair. For pDP on an interval starting at the "
        "top (α = 0) the start h ≡ 0 has S_k = σ(0) = 0.5 ≥ β, where φ_k is flat: the linearised subproblem then "
        "keeps every S_k ≥ β(1 − κ), far above a low positive rate (bank: 0.11); b = −1 (S_k = 0) avoids it.")
    fast_linear: bool = Field(
        True, description="Linear model, full batch: the inner SSG in score space with closed-form gradients "
        "(:class:`~solvers.algorithms.linear_scores.LinearScores`: CSR X when sparse; the families' dc_plus / "
        "dc_plus_row_grad oracles). Same iterates as the plain autograd path up to float rounding.")


@ALGORITHMS.declare(
    "partial_regularized",
    implementation="solvers.algorithms.partial_regularized:PartialRegularized",
    aliases=("partial-penalty",),
    paper="He, Huang, Yao & Lin, Enforcing Fair Predicted Scores on Intervals of Percentiles by Difference-of-Convex "
    "Constraints, App. G.4 (regularisation baseline, problems (114) and (119), subgradient descent)",
    description="Penalty baseline for partial SP/DP: minimise the loss plus λ times the pSP (114) or pDP (119) "
    "surrogate by subgradient descent; the last iterate is returned.",
    supported_constraints=("partial_statistical_parity", "partial_demographic_parity"),
)
class PartialRegularizedConfig(AlgorithmConfig):
    lam: NonNegativeFloat = Field(
        0.3, description="λ of (114)/(119) (paper G.4.2: a9a pSP {0.2, 0.3, 0.37, 1}, pDP {0.13, 0.17, 0.2, "
        "0.23, 1}; bank pSP {0.4, 0.405, 0.41, 1, 1.5}, pDP {0.005, 0.015, 0.018, 0.1, 2}).")
    lr: PositiveFloat = Field(
        1e-3, description="Subgradient step η (paper G.4.2: chosen from {5e-4, 1e-3, 2e-3, 5e-3} by validation "
        "accuracy).")
    fast_linear: bool = Field(True, description="Linear model: score-space gradients through a CSR X (same iterates).")


@ALGORITHMS.declare(
    "pairwise_auc_pg",
    implementation="solvers.algorithms.pairwise_auc_pg:PairwiseAUCPG",
    aliases=("pairwise-auc-pg", "auc_pairwise_pg"),
    paper="He, Huang, Yao & Lin, Enforcing Fair Predicted Scores on Intervals of Percentiles by Difference-of-Convex "
    "Constraints, App. G.3 (baselines (102) group AUC, (105) inter-group pairwise, (107) intra-group pairwise; "
    "quadratic surrogate (103); projected gradient (108)–(110))",
    description="Baselines for partial fairness: minimise the loss under group-AUC, inter-group or intra-group "
    "pairwise constraints with the quadratic surrogate (a convex QCQP in the weights of a linear model), by "
    "projected gradient with the projection solved by SLSQP; every iterate is feasible.",
    supported_models=("linear",),
    supported_constraints=("partial_statistical_parity", "partial_demographic_parity"),
)
class PairwiseAUCPGConfig(AlgorithmConfig):
    variant: Variant = Field(
        "group", description="Which constraint set (paper App. G.3.1): 'group' = group AUC fairness (102), "
        "'inter' = inter-group pairwise fairness (105), 'intra' = intra-group pairwise fairness (107); all with "
        "the quadratic surrogate σ(x) = ½(1 + x)² (103), one row per ordered group pair.")
    kappa: NonNegativeFloat | None = Field(
        None, description="κ of (102)/(105)/(107). None = the variant's default, the middle of the paper's a9a "
        "pSP grid (G.3.2): group 1.0 ({0.7, 1, 2, 3.5}), inter 3.0 ({1.5, 3, 3.5, 6}), intra 5.0 ({3, 5, 8}); "
        "the paper tunes κ per dataset to match IDCA's validation fairness (bank group pSP {0.1, 0.3, 0.56, "
        "0.7, 1}, inter {1.5, 1.8, 2, 3}, intra {2, 3, 4}; pDP grids in G.3.2). σ is unbounded, so κ may "
        "exceed 1. κ ≥ 0 keeps w(0) = 0 feasible.")
    lr: PositiveFloat | None = Field(
        None, description="Step η_k (constant) of (108)–(110); the paper does not give it. None = 1/L with "
        "L = λ_max(X̃ᵀX̃/n)/4 the gradient-Lipschitz constant of the logistic loss (X̃ = [X, 1]), the step "
        "for which projected gradient decreases f0 monotonically; required for other objectives.")
    projection_max_iter: PositiveInt = Field(
        1000, description="SLSQP iteration cap of each projection (paper G.3.2: fmincon 'MaxIterations' = 1000).")
    projection_tol: PositiveFloat = Field(
        1e-6, description="SLSQP tolerance ('ftol') of each projection, relative to the step length (paper "
        "G.3.2: fmincon 'OptimalityTolerance' = 'ConstraintTolerance' = 1e-6). Feasibility is then made exact "
        "by a pull-back to the previous iterate.")
    stop_tol: NonNegativeFloat = Field(
        0.0, description="Stop once |f0(w(k+1)) − f0(w(k))| < stop_tol (0 = off: run the full budget K, as the "
        "paper, which takes K = 1000 on a9a and bank and 500 on law school, enough for a change < 1e-5).")
    fast_linear: bool = Field(True, description="Score-space gradient through a CSR X (same iterates).")

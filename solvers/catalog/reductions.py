"""Catalog: the reductions approach (Agarwal et al. 2018) through fairlearn's ExponentiatedGradient and GridSearch."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt
from pydantic.json_schema import SkipJsonSchema

from .base import ALGORITHMS, AlgorithmConfig

#: the constraint types with a fairlearn moment (``solvers.algorithms.reductions.MOMENTS``); fairlearn's
#: ErrorRateParity has no FairSolve constraint type to map to.
REDUCTION_CONSTRAINTS = ("demographic_parity", "equal_opportunity", "equalized_odds")


@ALGORITHMS.declare(
    "reductions",
    implementation="solvers.algorithms.reductions:Reductions",
    aliases=("fairlearn", "exponentiated_gradient", "grid_search"),
    paper="Agarwal, Beygelzimer, Dudík, Langford & Wallach, A Reductions Approach to Fair Classification (ICML "
    "2018), through fairlearn's ExponentiatedGradient and GridSearch",
    description="Fair classification as a game between the learner (cost-sensitive classification oracle: our "
    "model type fitted to reweighted, relabelled rows) and the λ-player (exponentiated gradient on the Lagrange "
    "multipliers of the moment constraints). Returns the randomised classifier Q = Σ_k w_k h_k; its score is "
    "logit(Σ_k w_k 1{h_k(x) = 1}); a prediction is one deterministic draw of Q per row (decision 'draw', the "
    "default) or the weighted majority of the h_k (decision 'majority').",
    supported_models=("linear", "gbdt"),
    supported_constraints=REDUCTION_CONSTRAINTS,
    constraint_count=(1, 1),
)
class ReductionsConfig(AlgorithmConfig):
    method: Literal["exponentiated_gradient", "grid_search"] = Field(
        "exponentiated_gradient", description="'exponentiated_gradient' (Agarwal et al. 2018, Algorithm 1: a "
        "randomised classifier) or 'grid_search' (their §3.4 grid over λ: the best single classifier).")
    decision: Literal["majority", "draw"] = Field(
        "draw", description="How Q = Σ_k w_k h_k decides a row: 'draw' (default: the paper's randomised classifier) = "
        "one draw of Q per row, deterministic (u(x) from a seeded hash of the row's features; the score is the "
        "draw's margin), so the predictions keep Q's rates and its fairness; 'majority' = 1{Σ_k w_k h_k(x) > ½} (the "
        "score stays Q's probability P(ŷ = 1 | x), but the majority vote does not keep Q's rates; "
        "docs/architecture.md, 'Measured choices').")
    batch_size: SkipJsonSchema[None] = Field(None, description="Not used: every oracle call fits the whole training "
                                             "split (only None is accepted; not listed in the schema).")
    difference_bound: NonNegativeFloat | None = Field(
        None, le=1.0, description="fairlearn's bound c on every group's distance to the overall rate. None = the "
        "largest c for which fairlearn's constraints keep the spec's spread max − min ≤ tolerance ε: ε · max_g p_g "
        "(p_g the group's share of the rows the rate is taken over; the least over the rates of equalized odds) "
        "for two groups, where the two constraint sets are the same; ε/2 for more groups. ε = fairlearn's own "
        "use of the tolerance (its spread may reach ε / max_g p_g).")
    eps: PositiveFloat | None = Field(
        None, description="ExponentiatedGradient's eps (ν-approximate saddle point with ‖λ‖₁ ≤ B = 1/eps). None = "
        "the constraint's tolerance (fairlearn's default 0.01 when the tolerance is 0).")
    max_iter: PositiveInt = Field(50, le=10_000, description="ExponentiatedGradient's max_iter (fairlearn: 50).")
    nu: PositiveFloat | None = Field(
        None, description="Duality-gap threshold ν of the stopping rule. None = fairlearn's automatic setting "
        "½ · std|h₀(x) − y| / √n.")
    eta0: PositiveFloat = Field(2.0, description="Initial learning rate η₀ of the λ-player (η = η₀/B; fairlearn: 2).")
    run_linprog_step: bool = Field(
        True, description="After each step, the saddle point over the convex hull of the classifiers found so far "
        "(fairlearn: True).")
    grid_size: PositiveInt = Field(10, le=10_000, description="GridSearch's number of λ vectors (fairlearn: 10).")
    grid_limit: PositiveFloat = Field(2.0, le=1e6, description="GridSearch's λ range [−limit, limit] (fairlearn: 2).")
    constraint_weight: float = Field(
        0.5, ge=0.0, le=1.0, description="GridSearch's selection (1 − w) · error + w · max violation (fairlearn: ½).")
    C: PositiveFloat = Field(1.0, description="Linear model: scikit-learn LogisticRegression's inverse L2 strength C.")
    estimator_max_iter: PositiveInt = Field(
        1000, le=100_000, description="Linear model: LogisticRegression's max_iter (scikit-learn's 100 stops lbfgs "
        "before convergence on one-hot tabular features).")

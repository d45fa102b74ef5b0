"""Catalog: the group-fairness constraint types (DP, EOp, EO, loss gap, intersectional, minority rate)."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import CONSTRAINTS, RateConfig

LossName = Literal["bce", "logistic", "hinge", "truncated_logistic"]


@CONSTRAINTS.declare(
    "demographic_parity",
    max_tolerance=1.0,
    implementation="solvers.constraints.demographic_parity:DemographicParity",
    aliases=("dp", "statistical_parity"),
    description="Demographic parity: the positive-prediction rates Pr(f>0 | s=g) of all groups "
    "lie within `tolerance` of each other (surrogate: paper eq. 15, max − min over K groups).",
)
class GroupRateConfig(RateConfig):
    """The rate families that compare the groups' rates (DP, equal opportunity): against each other or against
    the overall rate."""

    reference: Literal["groups", "overall"] = Field(
        "groups",
        description="'groups': one constraint, max_g r_g − min_g r_g ≤ ε (paper eq. 15 for K groups). 'overall': "
        "one constraint per group g with training rows, |r_g − r| ≤ ε with r the rate of all rows (PLADA's "
        "Communities & Crime form, eq. 18: each group against the population; natural for overlapping groups).",
    )


class DemographicParityConfig(GroupRateConfig):
    """No fields of its own beyond those it inherits."""


@CONSTRAINTS.declare(
    "equal_opportunity",
    max_tolerance=1.0,
    implementation="solvers.constraints.equal_opportunity:EqualOpportunity",
    aliases=("eopp", "tpr_parity", "fnr_parity"),  # FNR_g = 1 − TPR_g: the same spread
    description="Equal opportunity: the true-positive rates Pr(f>0 | s=g, y=1) of all groups lie within "
    "`tolerance` of each other (surrogate: max − min over K groups of the mean σ(f) on y=1 samples).",
)
class EqualOpportunityConfig(GroupRateConfig):
    """No fields of its own beyond those it inherits."""


@CONSTRAINTS.declare(
    "equalized_odds",
    max_tolerance=1.0,
    implementation="solvers.constraints.equalized_odds:EqualizedOdds",
    aliases=("eo",),
    description="Equalized odds: true-positive rates and false-positive rates of all groups "
    "lie within `tolerance` of each other (surrogate: paper eq. 17, max − min over K groups).",
)
class EqualizedOddsConfig(RateConfig):
    aggregate: Literal["max", "separate"] = Field(
        "max",
        description="'max': one constraint max(TPR gap, FPR gap) ≤ ε as in paper eq. 17; "
        "'separate': two constraints, TPR gap ≤ ε and FPR gap ≤ ε (each with its own multiplier).",
    )


@CONSTRAINTS.declare(
    "loss_gap",
    implementation="solvers.constraints.loss_gap:LossGap",
    aliases=("group_loss_gap",),
    description="Loss gap: each group's mean loss exceeds the overall mean loss (one_sided) or any other "
    "group's mean loss (two_sided) by at most `tolerance` (stochastic benchmark eq. 4, PLADA eq. 18).",
)
class LossGapConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["one_sided", "two_sided"] = Field(
        "one_sided",
        description="'one_sided': one constraint per group g, L_g − L ≤ δ (L = overall mean loss; PLADA eq. 18 "
        "form). 'two_sided': for every pair of groups (a, b) both L_a − L_b ≤ δ and L_b − L_a ≤ δ "
        "(the stochastic benchmark's |L_a − L_b| ≤ δ split in two); K groups give K(K−1) constraints.",
    )
    loss: LossName = Field(
        "bce",
        description="Per-sample loss ℓ(f, y) (same definitions as the objectives): 'bce' / 'logistic' "
        "(identical; the benchmark's BCE), 'hinge' ([1 − ỹf]^+, PLADA eq. 18), 'truncated_logistic'.",
    )
    min_group_fraction: float = Field(
        0.0, ge=0.0, lt=1.0,
        description="Only groups holding MORE than this fraction of the training samples get constraints "
        "(0: every group present in the training data).",
    )


@CONSTRAINTS.declare(
    "intersectional",
    implementation="solvers.constraints.intersectional:Intersectional",
    aliases=("intersectional_loss_gap",),
    description="Intersectional fairness (PLADA eq. 18): for every group (intersection of the sensitive "
    "columns' groups) holding more than `min_group_fraction` of the training data, its mean hinge loss "
    "exceeds the overall mean hinge loss by at most `tolerance`.",
)
class IntersectionalConfig(LossGapConfig):
    mode: Literal["one_sided"] = Field("one_sided", description="Always one-sided (eq. 18 has no absolute value).")
    loss: LossName = Field("hinge", description="Per-sample loss; eq. 18 uses the hinge [1 − ỹf]^+.")
    min_group_fraction: float = Field(
        0.01, ge=0.0, lt=1.0,
        description="Only groups holding MORE than this fraction of the training data get a constraint "
        "(PLADA's Communities & Crime setup: > 1%).",
    )


@CONSTRAINTS.declare(
    "minority_rate",
    max_tolerance=1.0,
    implementation="solvers.constraints.minority_rate:MinorityRate",
    aliases=("minority_positive_rate",),
    description="Minority rate (IPC paper Sec. 5): the minority group receives at least a fraction `c` of the "
    "positive predictions: c·Σ_S σ(f) − Σ_{S_min} σ(f) ≤ 0, scaled by 1/|S|.",
)
class MinorityRateConfig(RateConfig):
    c: float = Field(
        0.2, gt=0.0, lt=1.0,
        description="Fairness parameter c ∈ (0, 1): the minority must receive at least the fraction c of all "
        "(surrogate) positive predictions. Default 0.2, the IPC paper's value for bank-marketing "
        "(it uses 0.4 for loan, 0.08 for a9a).",
    )
    minority: str | None = Field(
        None, description="Name of the minority group S_min; None = the smallest group of the training data.")

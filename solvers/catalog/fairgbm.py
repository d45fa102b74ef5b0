"""Catalog: FairGBM (Cruz et al., ICLR 2023), constrained gradient boosting of gbdt models."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat

from .base import ALGORITHMS, AlgorithmConfig


@ALGORITHMS.declare(
    "fair_boosting",
    implementation="solvers.algorithms.fair_boosting:FairBoosting",
    aliases=("fairgbm",),
    paper="Cruz, Belém, Jesus, Bravo, Saleiro & Bizarro, FairGBM: Gradient Boosting with Fairness Constraints "
    "(ICLR 2023)",
    description="Proxy-Lagrangian boosting: every round fits one LightGBM tree to the gradient of the loss plus the "
    "multiplier-weighted cross-entropy proxies of the group rates (descent), then raises the multipliers by the "
    "exact constraint violations (projected ascent). gbdt models only.",
    supported_models=("gbdt",),
    supported_constraints=("demographic_parity", "equal_opportunity", "equalized_odds"),
)
class FairBoostingConfig(AlgorithmConfig):
    batch_size: None = Field(None, description="Boosting is full batch: every round fits a tree to all rows.")
    multiplier_learning_rate: PositiveFloat = Field(
        0.1, description="Step η_λ of the ascent λ ← max(0, λ + η_λ / (G − 1) · c(f)) on the exact constraint values, "
        "one λ per ordered pair of the G groups, so a group's summed weight grows as the paper's one λ per group "
        "(FairGBM's multiplier_learning_rate, default 0.1; here λ weighs the MEAN loss, see the implementation's "
        "docstring).")
    init_multipliers: NonNegativeFloat = Field(0.0, description="λ_0 of every constraint (FairGBM: 0).")
    proxy_margin: PositiveFloat = Field(
        1.0, description="Vertical margin m of the cross-entropy proxy φ(z) = log(1 + e^{z + log(e^m − 1)}), "
        "φ(0) = m (FairGBM's stepwise_proxy_margin, default 1: φ ≥ 1{z ≥ 0}).")
    proxy: Literal["bound", "rates"] = Field(
        "bound", description="Cross-entropy proxy of each constraint max_a r_a − r_b: 'bound' = the worst group's "
        "rate through its upper bound φ and the subtracted rate through the lower bound 1 − φ(−z) (c̃ ≥ c, convex); "
        "'rates' = φ for every rate (FairGBM's implementation; unstable, see solvers.models.gbdt.proxy_rates).")
    max_delta_step: NonNegativeFloat = Field(
        0.0, description="LightGBM's bound on a leaf's Newton step |−Σg/Σh| before shrinkage (0: none).")
    hessian: Literal["loss", "lagrangian"] = Field(
        "lagrangian", description="Second-order term of the trees: 'lagrangian' = σ(f)(1 − σ(f)) of the logistic "
        "loss plus the diagonal Hessian of the multiplier-weighted proxy terms (Newton steps on the model player's "
        "objective); 'loss' = the logistic loss's alone (FairGBM's implementation: its steps grow with N / n_g on "
        "small groups, see the implementation's docstring).")
    output: Literal["best", "last"] = Field(
        "best", description="Output rule: 'best' = the trees up to the best round on the training rows (feasible "
        "on the exact rates with the least loss, else the least exact violation; Cotter et al. 2019's best "
        "iterate), 'last' = every tree (FairGBM's final ensemble).")

"""Catalog: post-processing of scores by group-specific (randomised) thresholds, solved as an exact LP."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from .plada import PrimalConfig
from .base import ALGORITHMS


@ALGORITHMS.declare(
    "group_thresholds",
    implementation="solvers.algorithms.group_thresholds:GroupThresholds",
    aliases=("thresholds", "threshold_optimizer", "hardt"),
    paper="Hardt, Price & Srebro 2016, Equality of Opportunity in Supervised Learning (§4, K groups); "
    "Cruz & Hardt 2024, Unprocessing Seven Years of Algorithmic Fairness (relaxed group thresholds)",
    description="Post-processing: a base model (erm on the train split, or an existing job's via base_job_id), "
    "then per-group, possibly randomised thresholds of maximal validation accuracy (or balanced accuracy) under "
    "DP / equal opportunity / equalized odds ≤ tolerance, solved exactly as a linear programme over the groups' "
    "ROC points (HiGHS). The model reads the group from the sensitive columns' features.",
    supported_models=("linear", "mlp", "gbdt"),
    supported_constraints=("demographic_parity", "equal_opportunity", "equalized_odds", "partial_demographic_parity"),
    keeps_exact=True,
)
class GroupThresholdsConfig(PrimalConfig):
    objective: Literal["accuracy", "balanced_accuracy"] = Field(
        "accuracy", description="What the thresholds maximise on the selection split: accuracy, or balanced "
        "accuracy ½(TPR + TNR).")
    randomized: bool | None = Field(
        None, description="True: mixtures of thresholds, the LP's exact optimum over the ROC hulls, each row's "
        "component a fixed draw from its features (the drawn rule meets the tolerance on validation up to the "
        "draw's noise). False: one threshold per group, exact on validation (one rate band, DP or equal "
        "opportunity: an exact sweep; equalized odds: a mixed-integer solve). None: False for DP / equal "
        "opportunity (on Adult it gives up less than 0.001 validation accuracy to the LP) and whenever "
        "partial_demographic_parity is asked (deterministic only), True for equalized odds and several constraints.")
    time_limit_s: float = Field(
        60.0, gt=0.0, le=600.0, description="Time limit of the mixed-integer solve (randomized: false); the best "
        "rule found is kept when it runs out.")
    base_job_id: str | None = Field(
        None, min_length=32, max_length=32, pattern="^[0-9a-f]{32}$",
        description="Post-process this succeeded job's model instead of training one (same dataset, split, target, "
        "features and model); no training iteration is run.")

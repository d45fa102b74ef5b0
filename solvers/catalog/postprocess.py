"""Catalog: post-processing of scores by group-specific (randomised) thresholds, solved as an exact LP."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from .plada import PrimalConfig
from .base import ALGORITHMS

#: the most of each tolerance group_thresholds' safety margin may give up (its default and largest value): near 1 the
#: deterministic rule is the constant one (why: solvers.fairness.threshold_margin); declared here, where the API
#: reads it without importing SciPy
SHARE_LIMIT = 0.9


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
        "draw's noise). False: one threshold per group, exact on validation (one or two rate bands — DP, equal "
        "opportunity, equalized odds — or two groups: exact sweeps; three bands or more over three groups or "
        "more: a mixed-integer solve). None: False for DP / equal "
        "opportunity (on Adult it gives up less than 0.001 validation accuracy to the LP) and whenever "
        "partial_demographic_parity is asked (deterministic only), True for equalized odds and several constraints.")
    time_limit_s: float = Field(
        60.0, gt=0.0, le=600.0, description="Time limit of one mixed-integer solve (randomized: false, three "
        "rate bands or more over three groups or more), at most what is left of the job's own time_limit_s; the "
        "best rule found is kept when it runs out (or, with none found, the better constant rule), and the job "
        "warns.")
    cross_fit: int | None = Field(
        None, ge=0, le=10, description="Folds of cross-fitting (gbdt bases this job trains): the thresholds are "
        "chosen on every train and validation row, each scored by a model boosted on the other folds "
        "(solvers.models.gbdt.cross_fit); K + 1 more LightGBM fits. None or 0: off (the validation split alone: with the "
        "tuned base as accurate on Adult, COMPAS and bank, bench/quality/results/gbdt_defaults.md). 1 is refused.")
    threshold_rows: Literal["validation", "train_validation"] = Field(
        "validation", description="Without cross-fitting, the rows whose base scores choose the thresholds: "
        "'validation' (held out from the base), or 'train_validation' (every train and validation row, the train "
        "rows scored in sample: for a linear base, whose in-sample scores are distributed as on unseen rows up to "
        "O(d/n), the rates the rule is fitted on come from all the fitting rows and the population margin "
        "shrinks accordingly). Refused for an mlp or gbdt base trained by the job (their in-sample scores are "
        "optimistic; gbdt: cross_fit).")
    cross_fit_model: Literal["train", "refit"] | None = Field(
        None, description="With cross-fitting, the stored base model: 'refit' (boosted again on train + "
        "validation with the same rounds: the more accurate at a lower test gap, docs/architecture.md, 'Measured "
        "choices') or 'train' (the model boosted on the train split, on as many rows as the fold models whose "
        "scores chose the rule). None: 'train' for a randomised rule (equalized odds, several constraints), "
        "'refit' for deterministic thresholds (solvers.algorithms.group_thresholds, 'Cross-fitting').")
    base_model: Literal["tuned", "spec", "select"] = Field(
        "tuned", description="gbdt base trained by the job: 'tuned' boosts 100 trees of 15 leaves on half the "
        "features (solvers.models.gbdt.threshold_base) in place of the model's n_estimators / num_leaves / colsample_bytree "
        "where they are LightGBM's defaults: about half the fit time and more accurate after the thresholds on "
        "Adult, COMPAS and bank (bench/quality/results/gbdt_defaults.md); 'spec': the model's hyper-parameters as "
        "they are; 'select' (with cross_fit; what auto asks): both the tuned base and LightGBM's own defaults (100 "
        "trees of 31 leaves on every feature) are cross-fitted, and the one whose out-of-fold scores give the more "
        "accurate rule is stored (it memorises rows that the population repeats; the report's base_selection).")
    repeats: bool | None = Field(
        None, description="With cross-fitting and the refitted base stored, fit the rule to the scores the "
        "population shows that model: a fitting row's in-sample score with probability ρ (Good–Turing's share of "
        "future rows whose features repeat a fitting row's: one minus the share of rows whose features occur once), "
        "else its out-of-fold score (solvers.data.repeats; the report's repeats). False: the out-of-fold scores "
        "alone. None: on for deterministic thresholds, off for a randomised rule (measured: "
        "solvers.algorithms.group_thresholds, 'Repeated rows').")
    margin_delta: float | None = Field(
        0.1, gt=0.0, le=0.5, description="Safety margin: the thresholds are chosen at a tolerance ε' ≤ ε such that "
        "the rule's exact gap on the population the rows come from (or on an unseen sample of margin_rows rows) "
        "exceeds ε with probability at most this: the margin is the sampling error of the rates it is fitted on "
        "(normal bound on the groups' rates, solvers.fairness.threshold_margin; at most margin_max_share of ε is "
        "given up). None: chosen at exactly ε.")
    margin_max_share: float | None = Field(
        None, gt=0.0, le=SHARE_LIMIT, description="The most of each tolerance the safety margin may give up "
        "(ε' ≥ ε (1 − this)); where even that leaves the bound above margin_delta (small groups), the rule at this "
        "share is kept and the report says the bound is not met. None: 0.9, the largest (near 1 the deterministic "
        "rule that keeps ε' ≈ 0 is the constant one; on Adult its accuracy is 0.76).")
    coins: bool = Field(
        True, description="Demographic parity: where the margin cannot be met at margin_max_share (groups too small "
        "for a threshold of their own), decide the smallest groups (at most 10 % of the rows) by a draw at the other "
        "groups' middle rate whatever their score, where that meets it (solvers.fairness.group_coins; the report's "
        "margin.coins). False: every group keeps a threshold on its scores, and the report says the margin is not "
        "met.")
    margin_rows: int | None = Field(
        None, ge=1, le=10**9, description="The promise's rows: None (the default) = the population the rows come "
        "from (the rule's population gap ≤ ε with probability ≥ 1 − margin_delta); a number = a fresh sample of "
        "that many rows (its own noise widens the margin).")
    base_job_id: str | None = Field(
        None, min_length=32, max_length=32, pattern="^[0-9a-f]{32}$",
        description="Post-process this succeeded job's model instead of training one (same dataset, split, target, "
        "features and model); no training iteration is run.")

    @field_validator("cross_fit")
    @classmethod
    def _folds(cls, k: int | None) -> int | None:
        if k == 1:
            raise ValueError("cross_fit: 0 (off) or 2 to 10 folds")
        return k

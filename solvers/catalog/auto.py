"""Catalog: ``auto``, the portfolio that keeps the user's tolerance (the default solver of a job spec)."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, ValidationError, field_validator

from .base import ALGORITHMS

#: the general-purpose solvers auto tries, in this order, each with settings meant for standardised tabular
#: data (PLADA's paper η = 0.001 cannot move a linear model in a few hundred steps; its η is searched instead)
DEFAULT_PORTFOLIO = ("ssg", "plada", "lagrangian", "penalty")
#: per model type, the dedicated solvers tried first, cheapest first (auto stops after the first candidate that
#: keeps every tolerance with margin). gbdt: group_thresholds boosts one base (about one LightGBM fit), fair_boosting
#: one ensemble with the proxy gradients, reductions one LightGBM fit per oracle call
#: (``python -m bench.quality.frontier --headline``)
CHEAPEST_FIRST = {"gbdt": ("group_thresholds", "fair_boosting")}
#: per model type, the solvers tried before :data:`DEFAULT_PORTFOLIO` (when they handle the spec's constraints).
#: linear: group_thresholds over a logistic base, its thresholds on every train and validation row
#: (``threshold_rows``, :data:`solvers.auto.MODEL_SETTINGS`) with the population margin, which ends the portfolio
#: when met: more accurate on the population than SSG first (``python -m bench.quality.population``; figures in
#: docs/architecture.md, "Measured choices")
LEADS = {"linear": ("group_thresholds",)}


@ALGORITHMS.declare(
    "auto",
    overlapping_groups=True,
    implementation="solvers.auto:Auto",
    aliases=("portfolio",),
    supported_models=("linear", "mlp", "gbdt"),
    paper="(FairSolve) a portfolio of the library's solvers, selected on the validation split",
    description="Runs a small portfolio (SSG, PLADA with a short step-size search, the Lagrangian and the exact "
    "penalty, and the dedicated solvers of the spec's constraint types) within the job's time limit, "
    "tightening each one's training tolerance and continuing from its current model while the EXACT metric on "
    "the training or validation split exceeds the tolerance; skips diverged and near-constant models; returns "
    "the most accurate model on validation whose exact validation metric keeps every tolerance, and records "
    "every candidate it tried.",
)
class AutoConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    portfolio: list[str] | None = Field(
        None, min_length=1, max_length=12,
        description="Solver names to try, in order (None = ssg, plada, lagrangian, penalty, then the dedicated "
        "solvers of the spec's constraint types). Each runs with auto's settings for it, else its paper defaults.")
    iterations: PositiveInt = Field(
        500, le=100_000, description="Iterations of each candidate's first solve (at most the job's max_iterations).")
    refinements: NonNegativeInt = Field(
        3, le=10, description="Times a candidate's training tolerance is tightened (and its solve continued from "
        "its current model) while its exact train or validation metric exceeds the tolerance.")
    refine_iterations: PositiveInt = Field(
        100, le=100_000, description="Iterations of each continued solve (warm-started: on Adult, sex, DP ≤ 0.02, "
        "linear, 100 give the accuracy and gap of 200 with 700 iterations in all instead of 1,100).")

    budget_s: float | None = Field(
        None, gt=0, le=86_400, description="Seconds the portfolio may spend, at most the job's time_limit_s. None: "
        "proportional to the training data (5 s + 5 s per million training cells, rows × encoded features: about "
        "15 s on Adult), or the time limit when exhaustive. No candidate after the first (with its settings and refinements) may take "
        "more than a third of it; the first runs to its own stopping rule within the time limit, so a loaded "
        "machine gives the same lead model.")
    exhaustive: bool = Field(
        False, description="Run every candidate of the portfolio. False: stop after the first candidate whose model "
        "keeps every tolerance with margin (exact value ≤ 0.85 ε on the validation and training splits).")
    settings: dict[str, list[dict[str, Any]]] = Field(
        {}, description="Per solver, the params to search, in order (the next only when one diverges or gives a "
        "near-constant model), replacing auto's own for that solver, e.g. {\"plada\": [{\"eta\": 0.5}, "
        "{\"eta\": 0.05}]}.")

    @field_validator("settings")
    @classmethod
    def _valid_params(cls, settings: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
        out = {}
        for name, options in settings.items():
            if name not in ALGORITHMS or ALGORITHMS.entry(name).name == "auto":
                raise ValueError(f"unknown solver {name!r}")
            if not 1 <= len(options) <= 10:
                raise ValueError(f"{name!r}: give 1 to 10 settings")
            entry = ALGORITHMS.entry(name)
            for params in options:
                try:
                    entry.Config(**params)
                except ValidationError as err:
                    first = err.errors()[0]
                    raise ValueError(f"{name!r}: invalid param {'.'.join(map(str, first['loc']))!r}: "
                                     f"{first['msg']}") from None
            out[entry.name] = options
        return out

    @field_validator("portfolio")
    @classmethod
    def _known(cls, names: list[str] | None) -> list[str] | None:
        if names is None:
            return None
        for name in names:
            if name not in ALGORITHMS or ALGORITHMS.entry(name).name == "auto":
                raise ValueError(f"unknown portfolio solver {name!r}")
        return [ALGORITHMS.entry(name).name for name in names]


def portfolio_names(config: AutoConfig, model_type: str, families: list[str], generic: bool = False,
                    leads: bool = True) -> list[str]:
    """The solvers auto tries, in order: ``config.portfolio`` or :data:`DEFAULT_PORTFOLIO` followed by every solver
    declared only for constraint types of the spec, keeping those that handle ``model_type`` and every family
    (for gbdt: the dedicated group_thresholds, fair_boosting and reductions, in the order of
    :data:`CHEAPEST_FIRST`) and, when ``generic`` (overlapping groups, per-group rate rows:
    :func:`solvers.data.spec.needs_generic_path`), the ``overlapping_groups`` ones; ``leads``: :data:`LEADS` first (not
    under a guarantee, whose candidates are judged on train). Empty: auto cannot serve the spec."""
    if config.portfolio is not None:
        names = list(config.portfolio)
    else:
        dedicated = [e.name for e in ALGORITHMS.entries()
                     if e.supported_constraints is not None and families and e.name != "auto"
                     and all(f in e.supported_constraints for f in families)]
        first = CHEAPEST_FIRST.get(model_type, ())
        dedicated.sort(key=lambda name: first.index(name) if name in first else len(first))  # stable: the rest keep
        names = list(LEADS.get(model_type, ()) if leads else ()) + list(DEFAULT_PORTFOLIO) + dedicated
    out = []
    for name in dict.fromkeys(names):
        entry = ALGORITHMS.entry(name)
        supported = entry.supported_constraints
        if model_type in entry.supported_models and (supported is None or all(f in supported for f in families)) \
                and (entry.overlapping_groups or not generic):
            out.append(name)
    return out

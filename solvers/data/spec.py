"""Declarative problem specification (what the API accepts and the worker runs).

Everything here is pydantic v2. Constraint types and solver names are checked
against the registries, their extra fields / params against the family's or the
algorithm's own ``Config``; a ``ValueError`` naming the bad field is raised.
:func:`solvers.data.table_check.check_spec_against_table` checks the spec against an actual table and
raises :class:`SpecError` with a ``loc`` path into the spec.
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from ..catalog import ALGORITHMS, CONSTRAINTS

# Sizes of a spec, checked when it is parsed (before anything is allocated for it). Columns and their names: a
# table has at most FAIRSOLVE_MAX_UPLOAD_COLUMNS (default 2,000) columns.
MAX_NAME = 255             # characters of a column or group name
MAX_VALUE = 1000           # characters of a label or group value
MAX_COLUMNS = 10_000       # features listed
MAX_SENSITIVE = 16         # sensitive columns (their groups multiply)
MAX_GROUPS = 1000          # named groups of one group rule, or overlapping groups of a spec
MAX_THRESHOLD_COLUMNS = 8  # overlapping groups: columns with cuts ...
MAX_CUTS = 100             # ... cuts on one column ...
MAX_MEMBERSHIP_PAIRS = 20_000_000  # ... and (row, group) pairs of the membership (int64 pairs: 320 MB)
MAX_RULE_VALUES = 100_000  # raw values of one group rule, all its groups together
MAX_CONSTRAINTS = 64       # constraint families of one spec (each yields up to one row per group)
MAX_HIDDEN_LAYERS = 16     # an MLP's hidden layers ...
MAX_HIDDEN_WIDTH = 4096    # ... of at most this many units ...
MAX_PARAMETERS = 10_000_000  # ... and this many parameters (float32: 40 MB, and as much per copy an algorithm keeps)
MAX_TREES = 5000           # boosting rounds of one gbdt solve ...
MAX_LEAVES = 4096          # ... leaves per tree ...
MAX_TREE_LEAVES = 100_000  # ... and trees x leaves of one solve (LightGBM's text model: about 115 bytes per leaf)
MAX_GBDT_TEXT_BYTES = 64 * 2**20  # a stored gbdt model (exact enforcement's continuations add trees to a solve's)
GBDT_OBJECTIVES = ("logistic", "bce")  # LightGBM's binary objective: the logistic loss on the raw score
GBDT_FIELDS = ("n_estimators", "learning_rate", "num_leaves", "max_depth", "min_child_samples", "min_child_weight",
               "reg_lambda", "colsample_bytree", "max_bin")

Name = Annotated[str, Field(max_length=MAX_NAME)]
Scalar = Annotated[str, Field(max_length=MAX_VALUE)] | int | float | bool
#: A seed numpy's and torch's generators both take as given: 0 ≤ seed < 2³² (a negative one was accepted, then
#: failed inside the split as "too few rows").
Seed = Annotated[int, Field(ge=0, le=2**32 - 1)]


class Strict(BaseModel):
    """A request body part: a key it does not know (e.g. ``max_iteration``) is an error naming it."""

    model_config = ConfigDict(extra="forbid")


def _describe_error(err: ValidationError) -> str:
    first = err.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "<root>"
    return f"{field!r}: {first['msg']}"


class GroupRule(Strict):
    """Maps a raw sensitive column to named groups.

    ``values``: group name -> raw values (compared as stripped strings, integral
    floats as integers, so 1, 1.0 and "1" match); ``ranges``: group name ->
    [low, high) with None unbounded (numeric columns only). Unmatched values
    (and missing values) go to ``other``. Exactly one of values / ranges.
    """

    values: dict[Name, list[Scalar]] | None = Field(None, max_length=MAX_GROUPS)
    ranges: dict[Name, tuple[float | None, float | None]] | None = Field(None, max_length=MAX_GROUPS)
    other: Name = "other"

    @model_validator(mode="after")
    def _exactly_one(self) -> "GroupRule":
        if (self.values is None) == (self.ranges is None):
            raise ValueError("exactly one of 'values' or 'ranges' must be given")
        if sum(map(len, (self.values or {}).values())) > MAX_RULE_VALUES:
            raise ValueError(f"'values': at most {MAX_RULE_VALUES} raw values in all")
        for name, (low, high) in (self.ranges or {}).items():
            if low is not None and high is not None and not low < high:
                raise ValueError(f"range {name!r}: low must be < high")
        return self


class OverlappingGroups(Strict):
    r"""Groups a row can belong to several of (a sparse membership, :mod:`solvers.data.membership`), instead of the
    partition ``sensitive`` makes:

    * ``thresholds`` (PLADA's Communities & Crime groups): with cuts t_{c,1} < ... < t_{c,J_c} on each numeric
      column c, one group per combination (j_1, ..., j_C), I_(j) = {i : x_{i,c} ≥ t_{c,j_c} for every c}
      (Π_c J_c groups; a row is in every group whose cuts it reaches; a missing value reaches no cut);
    * ``columns``: one group per value of each column (``race=Black``, ``sex=Female``, ...): a row is in one
      group per column, so groups of different columns overlap.

    Both may be given (their union). Groups holding at most ``min_group_fraction`` of the table's rows are
    dropped. Bounded before anything is allocated: at most ``MAX_THRESHOLD_COLUMNS`` columns with at most
    ``MAX_CUTS`` cuts each and ``MAX_GROUPS`` threshold groups; against the table, at most ``MAX_GROUPS`` groups
    in all and ``MAX_MEMBERSHIP_PAIRS`` (row, group) pairs."""

    thresholds: dict[Name, list[float]] | None = Field(None, min_length=1, max_length=MAX_THRESHOLD_COLUMNS)
    columns: list[Name] | None = Field(None, min_length=1, max_length=MAX_SENSITIVE)
    min_group_fraction: float = Field(0.0, ge=0.0, lt=1.0)

    @field_validator("thresholds")
    @classmethod
    def _bounded(cls, thresholds: dict[str, list[float]] | None) -> dict[str, list[float]] | None:
        for column, cuts in (thresholds or {}).items():
            if not 1 <= len(cuts) <= MAX_CUTS:
                raise ValueError(f"'thresholds.{column}': between 1 and {MAX_CUTS} cuts")
            if not all(math.isfinite(c) for c in cuts) or len(set(cuts)) != len(cuts):
                raise ValueError(f"'thresholds.{column}': cuts must be finite and distinct")
        if thresholds and (n := math.prod(len(c) for c in thresholds.values())) > MAX_GROUPS:
            raise ValueError(f"'thresholds': {n} groups (more than {MAX_GROUPS})")
        return thresholds

    @model_validator(mode="after")
    def _some(self) -> "OverlappingGroups":
        if self.thresholds is None and self.columns is None:
            raise ValueError("give 'thresholds' or 'columns' (or both)")
        if self.columns is not None and len(set(self.columns)) != len(self.columns):
            raise ValueError("'columns': a column is listed twice")
        return self


class ModelSpec(Strict):
    """``linear`` (optionally with its weights w in the ball ‖w‖_p ≤ radius, p = 1 or 2; the
    bias is free), ``mlp`` (``hidden`` sizes, ``activation``) or ``gbdt`` (gradient-boosted trees on LightGBM,
    :mod:`solvers.models.gbdt`; its hyper-parameters carry LightGBM's names and defaults, ``n_estimators`` = boosting
    rounds of a solve).

    Bounded before anything is built: at most ``MAX_HIDDEN_LAYERS`` hidden layers of at most
    ``MAX_HIDDEN_WIDTH`` units, and at most ``MAX_PARAMETERS`` parameters (:meth:`parameter_count`;
    here counted for one input feature, the full count once the encoder's width d is known); a gbdt model at most
    ``MAX_TREES`` trees of ``MAX_LEAVES`` leaves and ``MAX_TREE_LEAVES`` leaves in all."""

    type: Literal["linear", "mlp", "gbdt"] = "linear"
    hidden: list[Annotated[int, Field(gt=0, le=MAX_HIDDEN_WIDTH)]] = Field([64, 64], max_length=MAX_HIDDEN_LAYERS)
    activation: Literal["relu", "tanh"] = "relu"
    ball: Literal["l1", "l2"] | None = Field(
        None, description="Feasible set of a linear model's weights: 'l1' or 'l2' ball of `radius` (None: R^d).")
    radius: float | None = Field(None, gt=0, description="Radius of `ball` (required with it).")
    n_estimators: int = Field(200, ge=1, le=MAX_TREES, description="gbdt: boosting rounds (trees) of one solve.")
    learning_rate: float = Field(0.1, gt=0, le=1, description="gbdt: shrinkage of every tree.")
    num_leaves: int = Field(31, ge=2, le=MAX_LEAVES, description="gbdt: most leaves of a tree.")
    max_depth: int = Field(-1, ge=-1, le=64, description="gbdt: most depth of a tree (-1: bounded by num_leaves).")
    min_child_samples: int = Field(20, ge=1, le=1_000_000, description="gbdt: fewest training rows in a leaf.")
    min_child_weight: float = Field(1e-3, ge=0, le=1e6, description="gbdt: least Hessian sum in a leaf.")
    reg_lambda: float = Field(0.0, ge=0, le=1e6, description="gbdt: L2 penalty on the leaf values.")
    colsample_bytree: float = Field(1.0, gt=0, le=1, description="gbdt: share of the features each tree draws "
                                    "(seeded).")
    max_bin: int = Field(255, ge=2, le=1023, description="gbdt: most histogram bins of a feature.")

    @model_validator(mode="after")
    def _ball(self) -> "ModelSpec":
        if (self.ball is None) != (self.radius is None):
            raise ValueError("'ball' and 'radius' must be given together")
        if self.ball is not None and self.type != "linear":
            raise ValueError("'ball' applies to linear models only")
        # a gbdt hyper-parameter set to another value than its default on another model type is a mistake; its
        # default is not (a stored spec, dumped with every field, reads back)
        if self.type != "gbdt" and (given := [f for f in GBDT_FIELDS if f in self.model_fields_set and
                                              getattr(self, f) != type(self).model_fields[f].default]):
            raise ValueError(f"{given[0]!r} applies to gbdt models only")
        if self.type == "gbdt" and (leaves := self.n_estimators * self.num_leaves) > MAX_TREE_LEAVES:
            raise ValueError(f"'n_estimators': {self.n_estimators} trees of {self.num_leaves} leaves have {leaves} "
                             f"leaves (more than {MAX_TREE_LEAVES})")
        if (n := self.parameter_count(1)) > MAX_PARAMETERS:
            raise ValueError(f"'hidden': the model has {n} parameters (more than {MAX_PARAMETERS})")
        return self

    def parameter_count(self, n_features: int) -> int:
        """Weights and biases of the model on ``n_features`` inputs: linear d + 1; an MLP with widths
        h_1..h_L has Σ_{l=1..L+1} (h_{l-1} + 1) · h_l with h_0 = d and h_{L+1} = 1; gbdt: the leaves of its trees
        (n_estimators · num_leaves, whatever d)."""
        if self.type == "gbdt":
            return self.n_estimators * self.num_leaves
        widths = [n_features, *(self.hidden if self.type == "mlp" else []), 1]
        return sum((a + 1) * b for a, b in zip(widths, widths[1:]))

    def check_size(self, n_features: int) -> None:
        """Raise :class:`SpecError` (at ``model``) when the model on ``n_features`` inputs is too large."""
        if (n := self.parameter_count(n_features)) > MAX_PARAMETERS:
            raise SpecError(("model", "hidden") if self.type == "mlp" else ("features",),
                            f"the {self.type} model on {n_features} encoded features has {n} parameters "
                            f"(more than {MAX_PARAMETERS})")


class ConstraintSpec(BaseModel):
    """``{"type": ..., "tolerance": ε, **family fields}``; G(θ) = surrogate gap − ε ≤ 0."""

    model_config = ConfigDict(extra="allow")

    type: str
    tolerance: float = Field(ge=0)

    @model_validator(mode="after")
    def _check_family(self) -> "ConstraintSpec":
        if self.type not in CONSTRAINTS:
            raise ValueError(f"unknown constraint type {self.type!r}; known: {', '.join(CONSTRAINTS.names())}")
        largest = CONSTRAINTS.entry(self.type).max_tolerance
        if largest is not None and self.tolerance > largest:
            raise ValueError(f"tolerance {self.tolerance:g} of {self.type!r} exceeds {largest:g}, the largest gap its "
                             "metric can take: the constraint would never bind")
        try:
            CONSTRAINTS.entry(self.type).Config(**(self.model_extra or {}))
        except ValidationError as err:
            raise ValueError(f"constraint {self.type!r}: invalid field {_describe_error(err)}") from None
        return self

    def build(self):
        """The constraint family (imports its implementation, and torch)."""
        family = CONSTRAINTS.get(self.type)
        return family(self.tolerance, family.Config(**(self.model_extra or {})))


class SolverSpec(Strict):
    """Algorithm name (or alias) and its params, validated against the algorithm's Config. The default,
    ``auto``, is a portfolio that keeps the tolerance (:mod:`solvers.auto`); a named solver runs with its
    paper's defaults."""

    name: str = "auto"
    params: dict[str, Any] = {}

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in ALGORITHMS:
            raise ValueError(f"unknown solver {name!r}; known: {', '.join(ALGORITHMS.names())}")
        return name

    @field_validator("params")
    @classmethod
    def _check_params(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        name = info.data.get("name")
        if name is None:  # the name itself failed; that error is reported
            return params
        try:
            ALGORITHMS.entry(name).Config(**params)
        except ValidationError as err:
            raise ValueError(f"solver {name!r}: invalid param {_describe_error(err)}") from None
        return params

    @property
    def entry(self):
        """The solver's catalog entry (Config and metadata; no torch)."""
        return ALGORITHMS.entry(self.name)

    @property
    def algorithm(self):
        """The implementing class (imports it, and torch)."""
        return self.entry.load()

    def config(self):
        return self.entry.Config(**self.params)


class SplitSpec(Strict):
    test: float = Field(0.2, gt=0, lt=1)
    validation: float = Field(0.2, ge=0, lt=1)
    seed: Seed = 0

    @model_validator(mode="after")
    def _fractions(self) -> "SplitSpec":
        if self.test + self.validation >= 1:
            raise ValueError("test + validation must be < 1")
        return self


class GuaranteeSpec(Strict):
    """A high-confidence fairness guarantee (Seldonian): the returned model is accepted only if a one-sided
    upper confidence bound of every constraint on the validation split is ≤ its tolerance
    (:mod:`solvers.fairness.guarantee` states the bound)."""

    confidence: float = Field(0.95, ge=0.5, lt=1.0, description="Probability 1 − α with which every constraint "
                              "of the accepted model holds on the data distribution (union bound over the "
                              "constraints, their groups and the candidates tested).")
    max_tests: int = Field(1, ge=1, le=20, description="Most candidates tested on the validation (safety) split; "
                           "each test runs at level α / max_tests so that the accepted one keeps the stated "
                           "confidence. The default 1: the candidate is selected on the training rows and only it is "
                           "tested, so no confidence is split between candidates.")
    when_unverifiable: Literal["tightest", "tolerance"] = Field(
        "tightest", description="When the bound's width predicted at the validation split's size is at least the "
        "tolerance, no model can pass the test (the job ends with met: false): 'tightest' trains and enforces the "
        "smallest exact gap the training split resolves (a few rows of its smallest group), 'tolerance' the "
        "tolerance itself, as without a guarantee.")


#: continued solves exact enforcement may run (:data:`solvers.fairness.enforce.MAX_TIGHTEN_ROUNDS`, kept equal by
#: a test): the default ``enforcement_iterations`` is theirs
PROMISE_ROUNDS = 3


class ProblemSpec(Strict):
    """A whole job: min_θ F(θ) on the train split subject to, for every constraint j, its exact fairness metric
    Δ_j(θ) ≤ ε_j over the groups (the solver works on a surrogate, the promise is kept on Δ_j).

    Groups: ``sensitive`` (with ``group_rules``) makes a partition, one group per observed intersection;
    ``overlapping_groups`` makes groups a row can belong to several of (:class:`OverlappingGroups`). Exactly one
    of the two is given.

    Parameters
    ----------
    target : str
        The label column.
    positive_label : str, int, float or bool
        The target's value that is y = 1.
    binarize : bool
        A target with more than two values: ``positive_label`` against all the others.
    overlapping_groups : OverlappingGroups or None
        Groups a row may belong to several of, instead of ``sensitive``.
    sensitive : list of str
        Sensitive columns; their observed intersections are the groups.
    features : list of str or None
        Model inputs; None means every column except ``target`` (the sensitive columns ARE then used as model
        inputs too: list ``features`` explicitly to exclude them).
    group_rules : dict of str to GroupRule
        Per sensitive column: bins or value merges that form its groups.
    model : ModelSpec
        ``linear``, ``mlp`` or ``gbdt`` and their hyper-parameters.
    objective : str
        The training loss F: ``logistic``, ``hinge``, ``bce``, ``truncated_logistic`` or ``auc_square``.
    constraints : list of ConstraintSpec
        Each a constraint type of the catalog, its tolerance ε and its config.
    solver : SolverSpec
        The algorithm (default ``auto``) and its parameters.
    split : SplitSpec
        Train / validation / test fractions, stratified by group × label.
    seed : int
        Seeds the split, the initialisation and the solver.
    max_iterations : int
        Most iterations of the solve (a named solver's run, or all of ``auto``'s candidates together).
    enforcement_iterations : int or None
        Most iterations keeping the promise may add after the solve (None: what exact enforcement may take).
    time_limit_s : float
        Wall-clock budget of the whole run, set-up included.
    device : str
        ``auto``, ``cpu`` or ``cuda``.
    guarantee : GuaranteeSpec or None
        A high-confidence guarantee (Seldonian test on the validation split), e.g. ``{"confidence": 0.95}``.
    exact_enforcement : bool
        Enforce the exact constraint after the solve (False keeps the paper's output).
    """

    target: Name
    positive_label: Scalar
    binarize: bool = Field(
        False, description="The target has more than two values: train positive_label against all the others "
        "(y = 1 where the target equals positive_label). Without it such a target is refused (422 naming "
        "positive_label with the column's value counts).")
    overlapping_groups: OverlappingGroups | None = Field(
        None, description="Groups that overlap (threshold groups, or one group per value of several columns), "
        "instead of `sensitive`: {\"thresholds\": {\"col\": [cuts...]}, \"min_group_fraction\": 0.01}.")
    sensitive: list[Name] = Field([], max_length=MAX_SENSITIVE, validate_default=True)
    features: list[Name] | None = Field(None, max_length=MAX_COLUMNS)
    group_rules: dict[Name, GroupRule] = Field({}, max_length=MAX_SENSITIVE)
    model: ModelSpec = ModelSpec()
    objective: Literal["logistic", "hinge", "bce", "truncated_logistic", "auc_square"] = "logistic"
    constraints: list[ConstraintSpec] = Field([], max_length=MAX_CONSTRAINTS)
    solver: SolverSpec = SolverSpec()
    split: SplitSpec = SplitSpec()
    seed: Seed = 0
    max_iterations: int = Field(2000, ge=1, description="Most iterations of the solve: a named solver's run, or "
                                "all of auto's candidates and their refinements together.")
    enforcement_iterations: int | None = Field(
        None, ge=0, description="Most iterations keeping the promise may add after the solve, in all: exact "
        "enforcement's continued solves and threshold correction, the guarantee's candidates. None: what exact "
        "enforcement may take, 3 continued solves of max_iterations // 2 and a threshold correction. A job's "
        "progress counts against max_iterations plus this.")
    time_limit_s: float = Field(600, gt=0)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    guarantee: GuaranteeSpec | None = Field(
        None, description="Ask for a high-confidence fairness guarantee, e.g. {\"confidence\": 0.95}; needs "
        "constraints and a validation split.")
    exact_enforcement: bool = Field(
        True, description="After the solve, enforce the exact constraint (not only its surrogate) on the training "
        "split: tighten the surrogate and continue, then a per-group threshold correction where possible. "
        "False keeps the algorithm's output as the paper defines it.")

    @field_validator("sensitive")
    @classmethod
    def _groups_given(cls, sensitive: list[str], info: ValidationInfo) -> list[str]:
        overlapping = info.data.get("overlapping_groups")
        if overlapping is None and "overlapping_groups" in info.data and not sensitive:
            raise ValueError("give at least one sensitive column (or 'overlapping_groups')")
        if overlapping is not None and sensitive:
            raise ValueError("'sensitive' and 'overlapping_groups' are mutually exclusive: give one")
        return sensitive

    @model_validator(mode="after")
    def _guarantee_needs(self) -> "ProblemSpec":
        if self.guarantee is not None and not self.constraints:
            raise ValueError("guarantee: needs at least one constraint")
        if self.guarantee is not None and self.split.validation == 0:
            raise ValueError("guarantee: needs a validation split (split.validation > 0)")
        if self.group_rules and self.overlapping_groups is not None:
            raise ValueError("group_rules: apply to 'sensitive' columns, not to 'overlapping_groups'")
        if self.model.type == "gbdt" and self.objective not in GBDT_OBJECTIVES:
            raise ValueError(f"objective: gbdt models boost the logistic loss ({', '.join(GBDT_OBJECTIVES)}), "
                             f"not {self.objective!r}")
        return self

    def promise_iterations(self) -> int:
        """The iterations keeping the promise may add after the solve (``enforcement_iterations``, default
        :data:`PROMISE_ROUNDS` continued solves of ``max_iterations // 2`` and one threshold correction), 0 when
        nothing runs after it (:func:`solvers.pipeline.keep_promise`: no constraints, ``erm``, or neither a guarantee
        nor exact enforcement of a solver that does not keep it by itself)."""
        entry = self.solver.entry
        if not self.constraints or entry.name == "erm" or (
                self.guarantee is None and (not self.exact_enforcement or entry.keeps_exact)):
            return 0
        if self.enforcement_iterations is None:
            return PROMISE_ROUNDS * max(1, self.max_iterations // 2) + 1
        return self.enforcement_iterations

    def iteration_total(self) -> int:
        """The most iterations a run of this spec makes, every phase counted: its progress' total."""
        return self.max_iterations + self.promise_iterations()

    def feature_columns(self, columns) -> list[str]:
        if self.features is not None:
            return list(self.features)
        return [c for c in columns if c != self.target]


class SpecError(Exception):
    """A spec that does not fit the table; ``loc`` is the path of the bad field."""

    def __init__(self, loc: tuple[str | int, ...], msg: str) -> None:
        super().__init__(f"{'.'.join(map(str, loc))}: {msg}")
        self.loc = tuple(loc)
        self.msg = msg


def check_solver_supports(spec: ProblemSpec) -> None:
    """Raise :class:`SpecError` when the solver does not handle the model type or a constraint type."""
    algorithm = spec.solver.entry
    if spec.model.type not in algorithm.supported_models:
        raise SpecError(("model", "type"), f"solver {spec.solver.name!r} supports models "
                                           f"{', '.join(algorithm.supported_models)}, not {spec.model.type!r}")
    check_generic_groups(spec)  # before the counts: a solver that needs a partition is the first thing to say
    fewest, most = algorithm.constraint_count
    if not fewest <= len(spec.constraints) <= (most if most is not None else len(spec.constraints)):
        count = f"exactly {fewest}" if fewest == most else f"at least {fewest}" if most is None else \
            f"{fewest} to {most}"
        raise SpecError(("constraints",), f"solver {spec.solver.name!r} takes {count} constraint(s), "
                                          f"not {len(spec.constraints)}")
    supported = algorithm.supported_constraints
    for i, constraint in enumerate(spec.constraints):
        kind = CONSTRAINTS.entry(constraint.type).name
        if supported is not None and kind not in supported:
            raise SpecError(("constraints", i, "type"), f"solver {spec.solver.name!r} handles "
                                                        f"{', '.join(supported)}, not {kind!r}")
    if algorithm.name == "group_thresholds":   # cross-fitting re-boosts the base: a gbdt the job trains
        params = spec.solver.config()
        if params.cross_fit and (spec.model.type != "gbdt" or params.base_job_id is not None):
            raise SpecError(("solver", "params", "cross_fit"), "cross_fit applies to a gbdt base trained by the "
                                                               "job (not to base_job_id or a linear / mlp base)")
        if params.threshold_rows == "train_validation" and (params.cross_fit or (
                spec.model.type != "linear" and params.base_job_id is None)):
            raise SpecError(("solver", "params", "threshold_rows"), "threshold_rows 'train_validation' applies to a "
                                                                    "linear base without cross_fit (an mlp or gbdt "
                                                                    "base scores its own train rows optimistically)")
    if algorithm.name == "auto":
        from ..catalog.auto import portfolio_names

        kinds = [CONSTRAINTS.entry(c.type).name for c in spec.constraints]
        if not portfolio_names(spec.solver.config(), spec.model.type, kinds, generic=needs_generic_path(spec)):
            raise SpecError(("solver",), f"auto has no solver for a {spec.model.type} model with constraints "
                                         f"{', '.join(kinds) or '(none)'}; name a solver")


#: constraint types defined on overlapping groups (their surrogates and exact metrics go through the membership)
OVERLAPPING_CONSTRAINTS = ("demographic_parity", "equal_opportunity", "loss_gap", "intersectional")


def _per_group_rows(constraint: ConstraintSpec) -> bool:
    return (constraint.model_extra or {}).get("reference") == "overall"


def needs_generic_path(spec: ProblemSpec) -> bool:
    """Whether only solvers that see the groups through the constraint families' G(θ) alone (catalog flag
    ``overlapping_groups``) can serve the spec: overlapping groups, or a rate constraint per group against the
    overall rate (``reference: "overall"``), which the dedicated solvers (reductions, post-processing) do not
    know."""
    return spec.overlapping_groups is not None or any(map(_per_group_rows, spec.constraints))


def check_generic_groups(spec: ProblemSpec) -> None:
    """Raise :class:`SpecError` when the spec needs the generic constraint path (:func:`needs_generic_path`) and
    its solver does not take it, or a constraint type is not defined on overlapping groups."""
    entry = spec.solver.entry
    if spec.overlapping_groups is not None:
        if not entry.overlapping_groups:
            raise SpecError(("solver",), f"solver {spec.solver.name!r} needs a partition of groups ('sensitive'); "
                                         "with overlapping_groups use one of " + ", ".join(generic_solvers()))
        for i, constraint in enumerate(spec.constraints):
            if (kind := CONSTRAINTS.entry(constraint.type).name) not in OVERLAPPING_CONSTRAINTS:
                raise SpecError(("constraints", i, "type"), f"{kind!r} needs a partition of groups; on overlapping "
                                                            f"groups: {', '.join(OVERLAPPING_CONSTRAINTS)}")
    for i, constraint in enumerate(spec.constraints):
        if _per_group_rows(constraint) and not entry.overlapping_groups:
            raise SpecError(("constraints", i, "reference"), f"solver {spec.solver.name!r} knows only the spread "
                            "of the group rates; reference 'overall' needs one of " + ", ".join(generic_solvers()))


def generic_solvers() -> list[str]:
    """The solvers that take overlapping groups and per-group rate rows (catalog flag ``overlapping_groups``)."""
    return [e.name for e in ALGORITHMS.entries() if e.overlapping_groups]


def positive_label_error(spec: ProblemSpec, distinct) -> SpecError:
    """The refusal of a positive label that no row's (normalised) target value equals, naming a few of the values
    (Adult's test file spells ">50K." where the training file has ">50K": every row would be negative)."""
    shown = ", ".join(repr(str(v)) for v in list(distinct)[:5])
    return SpecError(("positive_label",), f"{spec.positive_label!r} does not occur in column {spec.target!r} "
                                          f"(its values include {shown})")


#: value counts a refusal of a many-valued target shows
SHOWN_COUNTS = 10


def value_counts(series: pd.Series) -> pd.Series:
    """Occurrences of each normalised value (:func:`~solvers.data.encoding.normalise_values`; missing ones left out),
    in :func:`most_frequent_first` order."""
    from .encoding import MISSING, normalise_values

    values = pd.Series(normalise_values(series), dtype=object)
    return most_frequent_first(values[values != MISSING].value_counts())


def most_frequent_first(counts: pd.Series) -> pd.Series:
    """``counts`` (value ↦ occurrences) as int64, largest first, ties in the order of the values' text."""
    counts = counts.astype("int64").rename(None)
    return counts.iloc[np.lexsort((counts.index.astype(str), -counts.to_numpy()))]


def binarize_error(spec: ProblemSpec, counts: pd.Series) -> SpecError:
    """The refusal of a target with more than two values without ``binarize: true``, naming ``positive_label``
    with the column's value counts (the most frequent :data:`SHOWN_COUNTS`): binarising silently made
    ``target: "age", positive_label: 40`` a model of "is 40 years old"."""
    shown = ", ".join(f"{value!s}: {int(n)}" for value, n in counts.head(SHOWN_COUNTS).items())
    more = f", ... ({len(counts) - SHOWN_COUNTS} more)" if len(counts) > SHOWN_COUNTS else ""
    return SpecError(("positive_label",), f"column {spec.target!r} has {len(counts)} distinct values, not 2 "
                                          f"(value counts: {shown}{more}); set \"binarize\": true to train "
                                          f"{spec.positive_label!r} against all the others")


def labels_of(spec: ProblemSpec, table: pd.DataFrame):
    """y_i = 1 where the row's target equals the positive label (:func:`encode_labels`); :class:`SpecError` when
    no row does. The one check shared by the jobs' spec check, the audit runs and ``fairsolve audit run``."""
    from .encoding import MISSING, encode_labels, normalise_values

    y = encode_labels(table[spec.target], spec.positive_label)
    if not y.any():
        target = normalise_values(table[spec.target])
        raise positive_label_error(spec, pd.unique(target[target != MISSING]))
    return y

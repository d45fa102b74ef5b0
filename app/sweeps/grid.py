"""Expanding a sweep request into job specs.

Every combination (solver [with each value of the ``params`` grid it accepts],
seed, tolerance) becomes one job. A tolerance replaces the tolerance of every
constraint of the base spec; a seed sets both the model/batch seed and the split
seed (so the spread over seeds covers the data split too). With
``include_unconstrained`` one ``erm`` job per seed gives the unconstrained point.
With ``warm_start`` the jobs of one (solver, params, seed) form a chain ordered
from the loosest tolerance to the tightest, each starting from the previous
one's solution, as the papers' tolerance paths do.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, ValidationError

from app.schemas import JobCreate
from solvers import ALGORITHMS, SolverSpec, SpecError
from solvers.data.spec import Seed, check_generic_groups

MAX_JOBS = 500          # without allow_large
HARD_MAX_JOBS = 5000    # even with allow_large
MAX_VALUES = 100        # entries of each grid list (tolerances, seeds, each param's values)
MAX_SOLVERS = 20
MAX_PARAMS = 16


class SweepGrid(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tolerances: list[NonNegativeFloat] | None = Field(None, min_length=1, max_length=MAX_VALUES,
                                                      description="Replace every constraint's tolerance.")
    solvers: list[SolverSpec] | None = Field(None, min_length=1, max_length=MAX_SOLVERS,
                                             description="Default: the base spec's solver.")
    seeds: list[Seed] | None = Field(None, min_length=1, max_length=MAX_VALUES,
                                     description="Default: the base spec's seed.")
    params: dict[str, Annotated[list[Any], Field(min_length=1, max_length=MAX_VALUES)]] = Field(
        default_factory=dict, max_length=MAX_PARAMS,
        description="Solver parameter → values, applied to solvers that have it.")
    include_unconstrained: bool = Field(True, description="Add one unconstrained (erm) job per seed.")


class SweepCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base: JobCreate
    grid: SweepGrid = SweepGrid()
    warm_start: bool = Field(False, description="Start each tolerance from the looser tolerance's solution.")
    allow_large: bool = Field(False, description=f"Allow more than {MAX_JOBS} jobs (at most {HARD_MAX_JOBS}).")


class GridError(ValueError):
    def __init__(self, loc: tuple, msg: str) -> None:
        super().__init__(msg)
        self.loc, self.msg = loc, msg


@dataclass
class PlannedJob:
    spec: JobCreate
    point: dict[str, Any]          # solver, params, tolerance, seed
    chain: str | None = None       # warm-start chain key (jobs of one chain run in tolerance order)


def _param_sets(solver: SolverSpec, grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    fields = ALGORITHMS.entry(solver.name).Config.model_fields
    names = [n for n in grid if n in fields]
    return [{**solver.params, **dict(zip(names, values))} for values in itertools.product(*(grid[n] for n in names))]


def grid_size(request: SweepCreate) -> int:
    """The number of jobs :func:`expand` makes, by arithmetic alone (nothing is built):

        n = (Σ_solvers Π_{p ∈ params the solver has} |values_p|) · |seeds| · |tolerances| + [unconstrained] · |seeds|

    Raises :class:`GridError` for a parameter no solver has, for tolerances without a constraint, and
    for more than :data:`MAX_JOBS` jobs (:data:`HARD_MAX_JOBS` with ``allow_large``)."""
    base, grid = request.base, request.grid
    solvers = grid.solvers or [base.solver]
    fields = [ALGORITHMS.entry(s.name).Config.model_fields for s in solvers]
    for name in grid.params:
        if not any(name in f for f in fields):
            raise GridError(("grid", "params", name), f"no solver of the sweep has a parameter {name!r}")
    if grid.tolerances and not base.constraints:
        raise GridError(("grid", "tolerances"), "the base spec has no constraint to apply tolerances to")
    n_seeds, n_tolerances = len(grid.seeds or [base.seed]), len(grid.tolerances or [None])
    combos = sum(math.prod(len(values) for name, values in grid.params.items() if name in f) for f in fields)
    n_jobs = combos * n_seeds * n_tolerances + (n_seeds if grid.include_unconstrained else 0)
    if n_jobs > HARD_MAX_JOBS:
        raise GridError(("grid",), f"the grid expands to {n_jobs} jobs (more than {HARD_MAX_JOBS}, the most a "
                                   "sweep may have); split it into several sweeps")
    if n_jobs > MAX_JOBS and not request.allow_large:
        raise GridError(("grid",), f"the grid expands to {n_jobs} jobs (more than {MAX_JOBS}); "
                                   "set allow_large: true to run it")
    return n_jobs


def expand(request: SweepCreate) -> list[PlannedJob]:
    """The sweep's jobs, each spec validated; raises :class:`GridError` naming the field (the size is
    checked by :func:`grid_size` before any job is built)."""
    grid_size(request)
    base, grid = request.base, request.grid
    solvers = grid.solvers or [base.solver]
    tolerances = grid.tolerances or [None]
    seeds = grid.seeds or [base.seed]
    combos = [(i, s, p) for i, s in enumerate(solvers) for p in _param_sets(s, grid.params)]
    raw = base.model_dump(mode="json")
    _refuse_repeats(grid, combos)
    planned: list[PlannedJob] = []
    for (i, solver, params), seed in itertools.product(combos, seeds):
        chain = json.dumps([solver.name, params, seed], sort_keys=True) if request.warm_start else None
        for tol in sorted(tolerances, key=lambda t: -1.0 if t is None else -t):  # loosest first
            spec = {**raw, "seed": seed, "split": {**raw["split"], "seed": seed},
                    "solver": {"name": solver.name, "params": params}}
            if tol is not None:
                spec["constraints"] = [{**c, "tolerance": tol} for c in raw["constraints"]]
            try:
                job = JobCreate.model_validate(spec)
                check_generic_groups(job)  # a grid solver that needs a partition, on overlapping groups
            except ValidationError as exc:
                err = exc.errors()[0]
                raise GridError(("grid", "solvers", i, *err["loc"][1:]) if err["loc"][:1] == ("solver",)
                                else ("base", *err["loc"]), err["msg"]) from exc
            except SpecError as exc:
                raise GridError(("grid", "solvers", i) if exc.loc[:1] == ("solver",) else ("base", *exc.loc),
                                exc.msg) from exc
            planned.append(PlannedJob(job, {"solver": solver.name, "params": params, "seed": seed,
                                            "tolerance": tol if tol is not None else _tolerance(raw)}, chain))
    if grid.include_unconstrained:
        for seed in seeds:
            spec = {**raw, "seed": seed, "split": {**raw["split"], "seed": seed},
                    "solver": {"name": "erm", "params": {}}}
            planned.append(PlannedJob(JobCreate.model_validate(spec),
                                      {"solver": "erm", "params": {}, "seed": seed, "tolerance": None}))
    return planned


def _refuse_repeats(grid: SweepGrid, combos: list[tuple[int, SolverSpec, dict[str, Any]]]) -> None:
    """A value listed twice (a tolerance, a seed, a parameter's value), or two solvers that come out the same once
    the ``params`` grid is applied, would make the same job twice: :class:`GridError` naming it."""
    for field, values in (("tolerances", grid.tolerances or []), ("seeds", grid.seeds or []),
                          *((("params", name), values) for name, values in grid.params.items())):
        keys = [json.dumps(v, sort_keys=True) for v in values]
        if len(set(keys)) != len(keys):
            twice = next(values[j] for j, k in enumerate(keys) if k in keys[:j])
            loc = ("grid", *field) if isinstance(field, tuple) else ("grid", field)
            raise GridError(loc, f"{repr(twice)[:100]} is listed twice: each point of a sweep is one job")
    seen: dict[str, int] = {}
    for i, solver, params in combos:
        key = json.dumps([solver.name, params], sort_keys=True)
        if key in seen and seen[key] != i:
            raise GridError(("grid", "solvers", i), f"solver {solver.name!r} with {str(params)[:200]} is also "
                            f"solver {seen[key]} of the sweep: each point of a sweep is one job")
        seen.setdefault(key, i)


def _tolerance(raw_spec: dict) -> float | None:
    constraints = raw_spec.get("constraints") or []
    return constraints[0]["tolerance"] if constraints else None

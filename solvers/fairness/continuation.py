"""Continue a solve from the current model with other (tighter) surrogate tolerances — the step shared
by exact enforcement (:mod:`.enforce`) and the high-confidence guarantee (:mod:`.guarantee`).

Rules:

* the families are copies of the job's families with only the tolerance changed (re-bound by the new
  :class:`~solvers.problem.Problem`, so every cached −ε is rebuilt); the model is warm-started (trained in place);
* a continuation runs at most ``max(1, max_iterations // 2)`` iterations and never past the job's deadline
  (``time_limit_s`` counted from the start of the job's solve), nor past the run's iteration total ``limit``
  (:meth:`~solvers.data.spec.ProblemSpec.iteration_total`: ``max_iterations`` for the solve, ``enforcement_iterations``
  for everything after it): the job's ``iterations`` counts every stage and never exceeds it. One iteration of the total is kept back for a threshold correction's record;
  a model change with none left is listed in ``stages`` (``recorded: false``) without a trajectory point;
  ``time_limit_s`` is the budget of the whole job;
* the observer sees one trajectory: iteration numbers and elapsed seconds continue those of the previous
  stage, constraint rows read against the user's tolerances, exact traces continue, ``on_start`` is not repeated,
  checkpoints are not taken (a resumed job restarts from the main solve's checkpoint and enforces again), and
  cancellation is forwarded; a model change outside a solver (a threshold correction) is one more iterate
  (:meth:`Continuation.record_change`).
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from ..observer import IterationRecord, Observer


class _ContinuedObserver(Observer):
    """Forwards to ``inner`` with iteration and elapsed-time offsets (one trajectory over all stages); each
    record's constraint rows G = surrogate − τ are shifted by ``shift`` = τ − ε to read against the USER's
    tolerance ε, like the main solve's records."""

    def __init__(self, inner: Observer, iteration: int, elapsed_s: float, shift: list[float]) -> None:
        self.inner, self.iteration, self.elapsed_s, self.shift = inner, iteration, elapsed_s, shift

    def on_iteration(self, record: IterationRecord) -> None:
        constraints = [g + d for g, d in zip(record.constraints, self.shift)]
        self.inner.on_iteration(replace(record, iteration=record.iteration + self.iteration,
                                        elapsed_s=record.elapsed_s + self.elapsed_s, constraints=constraints,
                                        max_violation=max([0.0, *constraints])))

    def should_stop(self) -> str | None:
        return self.inner.should_stop()

    def exact_trace_every(self) -> int:  # the continued stages carry the exact traces the caller asked for
        return self.inner.exact_trace_every()


@dataclass
class Continuation:
    """What a continued solve needs: the job's families, a builder of the train Problem for a list of
    families, a solve function ``solve(problem, model, observer, max_iterations, time_limit_s)`` and the
    budget. ``iterations`` / ``solver_time_s`` accumulate over the stages (start: the main solve's)."""

    families: Sequence
    make_problem: Callable[[list], object]
    solve: Callable[..., object]
    max_iterations: int
    deadline: float                       # time.monotonic() value after which nothing more is solved
    observer: Observer | None = None
    #: model ↦ (objective, constraint rows G against the user's ε, exact trace or None): the record of a model
    #: change that is not an iteration of a solver (a threshold correction), see :meth:`record_change`
    describe: Callable[[object], tuple[float, list[float], dict | None]] | None = None
    iterations: int = 0
    solver_time_s: float = 0.0
    stages: list[dict] = field(default_factory=list)
    limit: int | None = None              # the run's iteration total, every stage counted (None: unbounded)

    @property
    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    @property
    def iterations_left(self) -> float:
        return float("inf") if self.limit is None else self.limit - self.iterations

    def families_at(self, tolerances: Sequence[float], temperatures: Sequence[float] | None = None) -> list:
        """Copies of the job's families with tolerances ``tolerances`` and, for families whose config has a
        ``temperature`` (the rate families' σ(f/T)), ``temperatures`` (NaN or None: unchanged)."""
        out = []
        temperatures = [float("nan")] * len(self.families) if temperatures is None else temperatures
        for family, tol, temp in zip(self.families, tolerances, temperatures):
            twin = copy.deepcopy(family)
            twin.tolerance = float(tol)
            if temp == temp and "temperature" in type(twin.config).model_fields:
                twin.config = twin.config.model_copy(update={"temperature": float(temp)})
            out.append(twin)
        return out

    def resolve(self, model, tolerances: Sequence[float], temperatures: Sequence[float] | None = None):
        """Continue training ``model`` (in place) under surrogate tolerances ``tolerances`` (and temperatures,
        :meth:`families_at`); returns the SolveResult, or None when no time is left or the observer asked to stop."""
        remaining = self.remaining_s
        iterations = int(min(max(1, self.max_iterations // 2), self.iterations_left - 1))  # 1 kept for a change
        if remaining <= 0 or iterations < 1 or (self.observer is not None and self.observer.should_stop()):
            return None
        shift = [t - f.tolerance for f, t in zip(self.families, tolerances) for _ in f.names]
        observer = None if self.observer is None else _ContinuedObserver(self.observer, self.iterations,
                                                                         self.solver_time_s, shift)
        result = self.solve(self.make_problem(self.families_at(tolerances, temperatures)), model, observer,
                            iterations, remaining)
        self.iterations += result.iterations
        self.solver_time_s += result.solver_time_s
        self.stages.append({"surrogate_tolerances": [float(t) for t in tolerances], "iterations": result.iterations,
                            "stop_reason": result.stop_reason})
        return result

    def record_change(self, model, what: str) -> None:
        """Report a model change made outside a solver (``what``, e.g. a threshold correction) as one more
        iterate of the trajectory, so its last point (and exact trace) is the returned model; with no iteration
        left of ``limit``, only a stage (module docstring)."""
        if self.iterations_left < 1:
            self.stages.append({"change": what, "iteration": self.iterations, "recorded": False})
            return
        self.iterations += 1
        self.stages.append({"change": what, "iteration": self.iterations})
        if self.observer is None or self.describe is None:
            return
        objective, constraints, exact = self.describe(model)
        samples = getattr(getattr(self.observer, "last", None), "samples_seen", 0)
        self.observer.on_iteration(IterationRecord(
            iteration=self.iterations, elapsed_s=self.solver_time_s, samples_seen=samples, objective=objective,
            constraints=constraints, max_violation=max([0.0, *constraints]), duals=None, exact=exact))

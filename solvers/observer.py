"""Observer protocol: how a solver reports its iterates and is asked to stop.

The solver calls :meth:`Observer.on_start` once, :meth:`Observer.on_iteration`
after EVERY iteration with an :class:`IterationRecord`, and polls
:meth:`Observer.should_stop` after every iteration; a non-``None`` string is the
stop reason (e.g. ``"cancelled"``) and the solver stops cleanly after the
current iterate. Batching (e.g. of database writes) is the observer's job.
An observer whose :meth:`Observer.exact_trace_every` is k > 0 gets, every k-th
iteration (and the first and last), the exact constraint values on the train and
validation splits in ``IterationRecord.exact`` (:mod:`solvers.fairness.exact_trace`).
"""
from __future__ import annotations

from dataclasses import dataclass, field


class StoppedInSetup(Exception):
    """The run stopped before its first iteration: ``reason`` is the observer's stop reason (``"cancelled"``)
    or ``"time_limit"`` (set-up alone used up ``time_limit_s``)."""

    def __init__(self, reason: str, elapsed_s: float) -> None:
        super().__init__(f"stopped during set-up ({reason}) after {elapsed_s:.3g} s")
        self.reason, self.elapsed_s = reason, elapsed_s


@dataclass
class IterationRecord:
    """One completed iteration k (``iteration`` = k, 1-based).

    ``objective`` is F(θ_k); ``constraints`` are G_j(θ_k) = surrogate gap_j − ε_j
    (≤ 0 means satisfied); ``max_violation`` = max(0, max_j G_j); ``duals`` are the
    algorithm's multipliers (PLADA: lambda, mu, abs_lambda_minus_mu, u, z;
    penalty: lambda; ERM: None). ``exact``: on traced iterations only (see
    :meth:`Observer.exact_trace_every`), the exact value of each constraint family per
    split, ``{"train": [...], "validation": [...]}``; None otherwise.
    """

    iteration: int
    elapsed_s: float
    samples_seen: int
    objective: float
    constraints: list[float]
    max_violation: float
    duals: dict[str, list[float]] | None
    exact: dict[str, list[float | None]] | None = None


class Observer:
    """Base observer; every hook is a no-op. Subclass and override what you need."""

    def on_start(self, info: dict) -> None:
        """``info``: max_iterations, constraint_names, device, n_train, n_features, groups."""

    def on_iteration(self, record: IterationRecord) -> None:
        """Called once per iteration, in order."""

    def exact_trace_every(self) -> int:
        """Trace the exact constraint values every this many iterations (0: never)."""
        return 0

    def should_stop(self) -> str | None:
        """Return a reason (e.g. ``"cancelled"``) to stop after the current iterate. Also asked between
        the set-up steps of :func:`solvers.run`, before :meth:`on_start`."""
        return None

    def checkpoint_due(self) -> bool:
        """Return True to be handed a :class:`~solvers.formats.checkpoint.Checkpoint` of the current iterate."""
        return False

    def on_checkpoint(self, checkpoint) -> None:
        """Called with the run's state when :meth:`checkpoint_due` said so."""


@dataclass
class RecordingObserver(Observer):
    """Keeps every record in memory (handy in notebooks and tests)."""

    info: dict = field(default_factory=dict)
    records: list[IterationRecord] = field(default_factory=list)
    exact_every: int = 0

    def exact_trace_every(self) -> int:
        return self.exact_every

    def on_start(self, info: dict) -> None:
        self.info = info

    def on_iteration(self, record: IterationRecord) -> None:
        self.records.append(record)


class RunTotal(Observer):
    """Forwards everything to ``inner`` (other attributes too, e.g. ``last``) but tells it, in ``on_start``, the
    whole run's iteration total (:meth:`~solvers.data.spec.ProblemSpec.iteration_total`: the solve and what keeping
    the promise may add) as ``max_iterations``, so that a progress read against it never exceeds it."""

    def __init__(self, inner: Observer, total: int) -> None:
        self.inner, self.total = inner, int(total)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def on_start(self, info: dict) -> None:
        self.inner.on_start({**info, "max_iterations": self.total})

    def on_iteration(self, record: IterationRecord) -> None:
        self.inner.on_iteration(record)

    def exact_trace_every(self) -> int:
        return self.inner.exact_trace_every()

    def should_stop(self) -> str | None:
        return self.inner.should_stop()

    def checkpoint_due(self) -> bool:
        return self.inner.checkpoint_due()

    def on_checkpoint(self, checkpoint) -> None:
        self.inner.on_checkpoint(checkpoint)

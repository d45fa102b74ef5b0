"""Entry points: :func:`solve` (tensors in, model out) and :func:`run` (table + spec in,
everything the worker stores out)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch
from scipy.special import expit
from torch import nn

from .algorithms import SolveResult, run_algorithm
from .models.thresholded import restore_model
from .formats.checkpoint import Checkpoint
from .data.encoding import TableEncoder, build_groups, encode_labels
from .fairness.continuation import Continuation
from .fairness.enforce import enforce_exact
from .fairness.exact import tolerances
from .fairness.guarantee import safety_split, seldonian
from .fairness.promise import certification, not_certifiable_warning, promise_sentence
from .fairness.report import fairness_entries, warnings_for
from .data.membership import Membership, overlapping_membership, rows_of
from .metrics.classification import classification_metrics, rate_deviation
from .models.factory import ball_domain, model_factory, scores_in_blocks
from .observer import Observer, RunTotal, StoppedInSetup
from .problem import Problem
from .data.spec import ProblemSpec, SolverSpec, SpecError
from .data.table_check import check_spec_against_table
from .data.splitting import split_indices


def solve(
    problem: Problem,
    solver: SolverSpec | str | dict | None = None,
    observer: Observer | None = None,
    *,
    max_iterations: int = 2000,
    time_limit_s: float = 600.0,
    seed: int = 0,
    model: nn.Module | None = None,
    validation: Problem | None = None,
    resume: Checkpoint | None = None,
) -> SolveResult:
    """Run the named algorithm (default ``auto``, :mod:`solvers.auto`) on a built :class:`Problem`.

    The algorithm minimises F(θ) subject to G_j(θ) ≤ 0 for every row j of the problem's constraint families
    (``G = surrogate gap − tolerance``), stepping in the shared driver loop (:mod:`solvers.algorithms.driver`).

    Parameters
    ----------
    problem : Problem
        Tensors, model factory, objective and constraint families (bound to the training groups).
    solver : SolverSpec, str, dict or None
        A :class:`SolverSpec`, an algorithm name, or ``{"name": ..., "params": ...}``; None is ``auto``.
    observer : Observer or None
        Sees every iteration's record, may stop the run and receives checkpoints.
    max_iterations : int
        The most driver iterations.
    time_limit_s : float
        Wall-clock budget of the solve in seconds.
    seed : int
        Seeds the model's initialisation and the algorithm's randomness.
    model : torch.nn.Module or None
        A warm start (otherwise ``problem.make_model()`` under ``seed``).
    validation : Problem or None
        Held-out rows (same features and groups, no constraints needed) for algorithms whose output rule
        selects an iterate on validation data (``level_set``, ``iqrc``).
    resume : Checkpoint or None
        A :class:`~solvers.formats.checkpoint.Checkpoint` of this same solve to continue from.

    Returns
    -------
    SolveResult
        The model, the trajectory's last record, the iterations run and the stop reason.
    """
    if solver is None:
        solver = SolverSpec()
    elif isinstance(solver, str):
        solver = SolverSpec(name=solver)
    elif isinstance(solver, dict):
        solver = SolverSpec(**solver)
    if solver.entry.name == "auto":  # a portfolio of the algorithms below (no checkpoints: ``resume`` is None)
        from .auto import solve_auto

        return solve_auto(problem, solver.config(), observer, max_iterations=max_iterations,
                          time_limit_s=time_limit_s, seed=seed, model=model, validation=validation)
    return run_algorithm(solver.algorithm, problem, solver.config(), observer, max_iterations=max_iterations,
                         time_limit_s=time_limit_s, seed=seed, model=model, validation=validation, resume=resume)


class SolverDiverged(ArithmeticError):
    """The iterates left the finite numbers (a step size too large for the problem)."""


@dataclass
class RunOutput:
    status: str                              # "completed" | "stopped"
    stop_reason: str | None
    iterations: int
    solver_time_s: float
    device: str
    metrics: dict[str, Any]                  # {"train": {...}, "validation": {...}, "test": {...}}
    state_dict: dict[str, torch.Tensor]      # CPU, contiguous (safetensors-ready)
    predictions: pd.DataFrame                # test split: row, group, label, score, prediction
    constraint_names: list[str]
    groups: list[str]
    feature_names: list[str]
    tolerances: list[float]
    encoder: dict[str, Any] = field(default_factory=dict)  # TableEncoder.to_dict(), JSON-serialisable
    # What the user's promise needs; every entry JSON-serialisable:
    fairness: list[dict[str, Any]] = field(default_factory=list)  # one per constraint: exact metric per split, CIs, kept
    warnings: list[str] = field(default_factory=list)             # near-trivial model, validation over tolerance, ...
    enforcement: dict[str, Any] | None = None                     # how the exact constraint was enforced, if it was
    guarantee: dict[str, Any] | None = None                       # {"confidence", "met", "best_bound", ...} when asked
    tried: list[dict[str, Any]] = field(default_factory=list)     # auto's portfolio: solver, params, val accuracy, gap
    promise: dict[str, Any] | None = None                         # the population-level promise in words (.fairness.promise)


@torch.no_grad()
def predict_scores(model: nn.Module, X: np.ndarray, device: torch.device) -> np.ndarray:
    """The raw scores f_θ(x) for every row (float64 numpy); P(y=1|x) = σ(f_θ(x)); by row blocks
    (:func:`~solvers.models.factory.scores_in_blocks`), so neither an MLP's activations nor the device copy of X is whole."""
    return scores_in_blocks(model, torch.as_tensor(X, dtype=torch.float32), device).double().cpu().numpy()


@dataclass
class Prepared:
    """A table turned into what a solve needs: groups, labels, splits, the fitted encoder and X.

    Rows are in split order (train, then validation, then test; each split's rows in table order), so every
    split of X is a contiguous block: :meth:`features` is a view, never a copy of the split's rows.
    ``order[i]`` is the table position of row i (None: the table's own order)."""

    group: np.ndarray                 # (n,) group index of every row
    group_names: list[str]
    y: np.ndarray                     # (n,) labels in {0, 1}
    splits: dict[str, np.ndarray]     # "train", ["validation",] "test" -> row positions (in X, y, group)
    encoder: TableEncoder             # fitted on the train split only
    X: np.ndarray                     # (n, d) float32 encoded features of every row
    order: np.ndarray | None = None   # (n,) table position of each row; None = the identity
    membership: Membership | None = None  # groups that overlap (rows in this order); ``group`` is then all 0

    @property
    def grouping(self) -> np.ndarray | Membership:
        """The rows' groups: the membership when they overlap, else the (n,) group index."""
        return self.group if self.membership is None else self.membership

    def groups(self, split: str) -> np.ndarray | Membership:
        """The groups of one split's rows (:func:`~solvers.data.membership.rows_of`)."""
        return rows_of(self.grouping, self.splits[split])

    @property
    def train_counts(self) -> np.ndarray:
        if self.membership is not None:
            return self.groups("train").counts
        return np.bincount(self.group[self.splits["train"]], minlength=len(self.group_names))

    def features(self, split: str) -> np.ndarray:
        """X of one split: a view when its rows are contiguous (always, from :func:`prepare`), else a copy."""
        return self.features_at(self.splits[split])

    def features_at(self, idx: np.ndarray) -> np.ndarray:
        """X of the rows ``idx`` (ascending): a view when they are contiguous (a split, or train ∪ validation, which
        :func:`prepare` puts side by side), else a copy."""
        if idx.size and idx[-1] - idx[0] + 1 == idx.size and bool(np.all(np.diff(idx) == 1)):
            return self.X[idx[0]:idx[-1] + 1]
        return self.X[idx]

    def table_rows(self, split: str) -> np.ndarray:
        """Table positions of one split's rows."""
        idx = self.splits[split]
        return idx if self.order is None else self.order[idx]


def prepare(table: pd.DataFrame, spec: ProblemSpec) -> Prepared:
    """Check the spec, build groups and labels, split stratified by group × label (by label alone when the groups
    overlap: a row has no single group), encode (fit on train).

    Memory: X is one float32 (n, d) array filled block by block (:meth:`TableEncoder.transform`), in split
    order so that the splits are views of it; the encoder is fitted column by column on the train rows."""
    check_spec_against_table(spec, table)
    y = encode_labels(table[spec.target], spec.positive_label)
    membership = None
    if spec.overlapping_groups is not None:
        membership = overlapping_membership(table, spec.overlapping_groups)
        group, group_names, strata = np.zeros(len(table), dtype=np.int64), membership.names, y
    else:
        group, group_names = build_groups(table, spec.sensitive, spec.group_rules)
        strata = 2 * group + y
    parts = dict(zip(("train", "validation", "test"),
                     split_indices(strata, spec.split.test, spec.split.validation, spec.split.seed)))
    if spec.split.validation == 0:
        del parts["validation"]
    encoder = TableEncoder(spec.feature_columns(table.columns)).fit(table, rows=parts["train"])
    if (problem := encoder.width_problem()) is not None:  # before X (n × d) is allocated
        raise SpecError(("features",), f"{problem}; list `features` without it")
    spec.model.check_size(encoder.n_features)
    order = np.concatenate(list(parts.values()))
    bounds = np.cumsum([0] + [len(idx) for idx in parts.values()])
    splits = {name: np.arange(bounds[i], bounds[i + 1]) for i, name in enumerate(parts)}
    return Prepared(group[order], list(group_names), y[order], splits, encoder, encoder.transform(table, rows=order),
                    order, None if membership is None else membership.take(order))


def _metric_options(spec: ProblemSpec, constraints, group_names: list[str], train_counts: np.ndarray) -> dict[str, Any]:
    """Settings of the loss / minority / intersectional metrics taken from the spec's constraints:
    the loss of the first ``loss_gap`` (else the objective), the minority of the first
    ``minority_rate`` (else the smallest training group), the first ``intersectional``'s size filter."""
    by_type: dict[str, Any] = {}
    for family in constraints:
        by_type.setdefault(family.name, family)
    present = train_counts > 0
    smallest = group_names[int(np.argmin(np.where(present, train_counts, np.iinfo(np.int64).max)))]
    return {
        "loss": by_type["loss_gap"].config.loss if "loss_gap" in by_type else spec.objective,
        "minority": by_type["minority_rate"].minority if "minority_rate" in by_type else smallest,
        "intersectional_min_fraction": (by_type["intersectional"].config.min_group_fraction
                                        if "intersectional" in by_type else None),
    }


def setup_check(observer: Observer | None, started: float, time_limit_s: float) -> float:
    """Between set-up steps: raise :class:`StoppedInSetup` on the observer's stop request or once the time
    limit is spent (set-up counts against ``time_limit_s``); else return the seconds left for the solve."""
    elapsed = time.perf_counter() - started
    reason = observer.should_stop() if observer is not None else None
    if reason is None and elapsed >= time_limit_s:
        reason = "time_limit"
    if reason is not None:
        raise StoppedInSetup(str(reason), elapsed)
    return time_limit_s - elapsed


def _describer(problem: Problem, validation: Problem | None, observer: Observer | None):
    """model ↦ (F, G rows against the user's tolerances, exact trace or None) on the train split, for the
    trajectory record of a model change outside a solver (:meth:`Continuation.record_change`)."""
    from .fairness.exact_trace import ExactTracer

    every = observer.exact_trace_every() if observer is not None else 0
    tracer = ExactTracer.for_problem(problem, validation, 1, 1) if every > 0 else None

    @torch.no_grad()
    def describe(model: nn.Module) -> tuple[float, list[float], dict | None]:
        evaluation = problem.evaluate(model)
        return (float(evaluation.objective), [float(g) for g in evaluation.constraints],
                tracer(model) if tracer is not None else None)

    return describe


def continuation_solver(solver: SolverSpec, tried: list[dict[str, Any]]) -> SolverSpec:
    """The solver that continues a solve for exact enforcement or the guarantee: the named one, or for
    ``auto`` the candidate it selected (its solver and params), not a second portfolio."""
    selected = selected_row(solver, tried)
    return solver if selected is None else SolverSpec(name=selected["solver"], params=selected["params"])


def selected_row(solver: SolverSpec, tried: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``auto``'s selected row of ``tried`` (its solver, params, training tolerances and temperatures); None for
    a named solver."""
    if solver.entry.name != "auto":
        return None
    return next((t for t in tried if t.get("selected")), None)


OVERLAPPING_LABEL = "(overlapping groups)"  # the predictions' group column when a row is in several groups

SURROGATE_MET = 0.1  # G_j ≤ this · ε_j + 1e-3 on the train split for every row j: the solve met its surrogate


def train_problem(data: Prepared, spec: ProblemSpec, families: list) -> Problem:
    """The train split as a :class:`Problem` with constraint families ``families``."""
    train = data.splits["train"]
    return Problem(
        X=data.features("train"), y=data.y[train], group=data.group[train], group_names=data.group_names,
        model_factory=model_factory(spec.model), model_type=spec.model.type, objective=spec.objective,
        constraints=families, device=spec.device, domain=ball_domain(spec.model),
        membership=None if data.membership is None else data.groups("train"),
    )


def continuation_of(result: SolveResult, data: Prepared, spec: ProblemSpec, problem: Problem, deadline: float,
                    observer: Observer | None = None, seen: Problem | None = None,
                    traced: Problem | None = None) -> Continuation:
    """How :func:`keep_promise` continues the solve that gave ``result``: the train split of ``data`` under
    tightened families, with :func:`continuation_solver` (auto's pick, else the spec's solver) and the spec's
    seed, within ``deadline`` (a ``time.monotonic()`` value). ``seen``: the validation rows the solver may use
    (None under a guarantee); ``traced``: the validation rows of the exact trace of model changes."""
    continue_with = continuation_solver(spec.solver, result.tried)
    if spec.guarantee is not None and continue_with.name == "group_thresholds":   # the guarantee aims its candidates
        continue_with = SolverSpec(name=continue_with.name,                       # for the safety rows' noise itself
                                   params={**(continue_with.params or {}), "margin_delta": None})
    return Continuation(
        families=problem.constraints, make_problem=lambda families: train_problem(data, spec, families),
        solve=lambda p, m, obs, iterations, limit: solve(p, continue_with, obs, max_iterations=iterations,
                                                         time_limit_s=limit, seed=spec.seed, validation=seen, model=m),
        max_iterations=spec.max_iterations, deadline=deadline, observer=observer,
        describe=_describer(problem, traced, observer), iterations=result.iterations,
        solver_time_s=result.solver_time_s, limit=spec.iteration_total())


def keep_promise(result: SolveResult, spec: ProblemSpec, data: Prepared, continuation: Continuation,
                 problem: Problem) -> tuple[nn.Module, dict[str, Any] | None, dict[str, Any] | None]:
    """After the solve: the Seldonian loop when ``spec.guarantee`` is set, else, when ``spec.exact_enforcement``
    and the surrogate is met on the train split (G_j ≤ ``SURROGATE_MET`` · ε_j + 10⁻³ for every row j), exact
    enforcement there (for ``auto``, tightening from its selected row's training tolerances and temperatures;
    not for solvers that keep the exact constraint by construction, ``keeps_exact``: their model's
    ``net.report``, if any, is the record)
    (:mod:`solvers.fairness`); nothing after a cancellation, without constraints or for ``erm`` (the
    unconstrained baseline, e.g. a sweep's reference job). Returns (model, enforcement, guarantee)."""
    model, device = result.model, problem.device
    if not continuation.families or result.stop_reason == "cancelled" or spec.solver.entry.name == "erm":
        return model, None, None
    y, names = data.y, data.group_names

    def rows(*splits: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | Membership]:
        idx = np.concatenate([data.splits[s] for s in splits])
        return data.features_at(idx), y[idx], rows_of(data.grouping, idx)

    def scores(m: nn.Module, features: np.ndarray) -> np.ndarray:
        return predict_scores(m, features, device)

    if spec.guarantee is not None:
        return seldonian(model, continuation, spec.guarantee.confidence, spec.guarantee.max_tests, rows("train"),
                         rows("validation"), names, scores, enforce=spec.exact_enforcement, seed=spec.seed,
                         when_unverifiable=spec.guarantee.when_unverifiable, pooled=rows("train", "validation"))
    from .models.thresholded import report_of

    if spec.solver.entry.keeps_exact or report_of(model) is not None:  # chosen by the exact rates already (e.g. the
        return model, report_of(model), None                         # threshold LP, also as auto's pick): its record
    if not spec.exact_enforcement:
        return model, None, None
    X_tr, y_tr, g_tr = rows("train")
    with torch.no_grad():
        rows_g = problem.constraint_values(scores_in_blocks(model, problem.X)).double().cpu().numpy()
    surrogate = float(rows_g.max())
    if not np.all(rows_g <= SURROGATE_MET * np.asarray(problem.tolerances) + 1e-3):  # reported, not enforced
        return model, {"method": "none", "surrogate_met": False,
                       "surrogate_max_violation": surrogate if np.isfinite(surrogate) else None}, None
    row = selected_row(spec.solver, result.tried) or {}  # auto: tighten from where its selected row's surrogate was
    model, enforcement = enforce_exact(model, continuation, tolerances(continuation.families), X_tr, y_tr, g_tr,
                                       names, lambda m: scores(m, X_tr), surrogate=row.get("training_tolerances"),
                                       temperature=row.get("temperatures"))
    return model, enforcement, None


def evaluate_split(spec: ProblemSpec, constraints, y: np.ndarray, logits: np.ndarray, group: np.ndarray | Membership,
                   group_names: list[str], train_counts: np.ndarray) -> dict[str, Any]:
    """Every metric of one split: :func:`~solvers.metrics.classification.classification_metrics` of σ(f) with the
    spec's loss / minority / intersectional settings, plus each constraint family's own exact metrics (and, for
    a rate constraint against the overall rate, :func:`~solvers.metrics.classification.rate_deviation` under
    ``<type>_overall``). ``group`` a :class:`Membership`: groups that overlap."""
    options = _metric_options(spec, constraints, group_names, train_counts)
    metrics = classification_metrics(y, expit(logits), group, group_names, logits=logits, **options)
    pred = (logits > 0).astype(int)
    for family in constraints:  # families whose exact metric is not among the always-computed ones
        if getattr(family.config, "reference", "groups") == "overall":
            deviation = rate_deviation(y, pred, group, group_names, family.name)
            metrics.update({f"{family.name}_overall": deviation[family.name],
                            f"{family.name}_overall_by_group": deviation[f"{family.name}_by_group"]})
        metrics.update(family.exact_metrics(y, logits, group, group_names) or {})
    return metrics


def run(table: pd.DataFrame, spec: ProblemSpec, observer: Observer | None = None,
        initial_state: dict[str, torch.Tensor] | None = None, resume: Checkpoint | None = None,
        prepare_with: Callable[[pd.DataFrame, ProblemSpec], Prepared] | None = None) -> RunOutput:
    """:func:`prepare`, solve on the train split, evaluate every split, predict the test split.

    The solve minimises the objective F(θ) on the train split subject to every constraint's surrogate
    G_j(θ) = Δ̂_j(θ) − ε_j ≤ 0; the promise is then kept on the EXACT metric (exact enforcement, the optional
    Seldonian guarantee, :mod:`solvers.fairness`), and each split is reported with its exact values and
    confidence intervals. Set-up (encoding, building the problem) counts against ``spec.time_limit_s`` and
    honours the observer's stop request: :class:`~solvers.observer.StoppedInSetup` is raised before the first
    iteration.

    Parameters
    ----------
    table : pandas.DataFrame
        The rows: the target column, the sensitive (or overlapping-group) columns and the features.
    spec : ProblemSpec
        The problem: target, groups, constraints with tolerances, model, solver, split and budgets.
    observer : Observer or None
        Sees every iteration (numbered over all stages; ``max_iterations`` is ``spec.iteration_total()``).
    initial_state : dict of str to torch.Tensor or None
        A state dict of the same model architecture to start from (a warm start, e.g. the solution at a
        looser tolerance); None = the seeded initialisation.
    resume : Checkpoint or None
        A checkpoint of this same run (same table and spec) to continue from.
    prepare_with : callable or None
        What gives ``prepare(table, spec)`` (default :func:`prepare`; a worker's
        :meth:`~solvers.data.prepared_cache.PreparedCache.prepared`, which keeps it for the next job on the same
        rows and checks the spec against the table on a hit); its Prepared is read, never written.

    Returns
    -------
    RunOutput
        The trained model, metrics and fairness report per split, test predictions, enforcement and
        guarantee records, warnings.

    Raises
    ------
    SpecError
        The spec does not fit the table (a missing column, a group too small to split, …).
    SolverDiverged
        The solver reached non-finite parameters.
    """
    started = time.perf_counter()
    deadline = time.monotonic() + spec.time_limit_s  # the whole run's, set-up included
    if observer is not None:  # progress counts against every phase's iterations
        observer = RunTotal(observer, spec.iteration_total())
    data = (prepare_with or prepare)(table, spec)
    data = _guarantee_split(spec, data)   # a guarantee: its safety rows, sized for the tolerance
    setup_check(observer, started, spec.time_limit_s)
    group, group_names, y, splits, X = data.group, data.group_names, data.y, data.splits, data.X
    problem = train_problem(data, spec, [c.build() for c in spec.constraints])
    validation = None
    if "validation" in splits:  # held-out rows for output rules that select an iterate (level_set, iqrc)
        val = splits["validation"]
        validation = Problem(X=data.features("validation"), y=y[val], group=group[val], group_names=group_names,
                             model_factory=problem.model_factory, model_type=spec.model.type, device=problem.device,
                             membership=None if data.membership is None else data.groups("validation"))
    model = None
    if initial_state is not None:
        model = restore_model(problem.make_model(), initial_state)  # post-processed states keep their shift
    remaining = setup_check(observer, started, spec.time_limit_s)
    seen = None if spec.guarantee is not None else validation  # the Seldonian test's rows stay unseen
    certified = _certification(spec, data, problem)   # before training: can the guarantee be certified here?
    result = solve(problem, spec.solver, observer, max_iterations=spec.max_iterations,
                   time_limit_s=remaining, seed=spec.seed, validation=seen, model=model, resume=resume)
    if result.diverged:
        raise SolverDiverged(result.message or f"solver {spec.solver.name!r} diverged: the model has non-finite "
                             f"parameters after {result.iterations} iterations; lower its step size")
    continuation = continuation_of(result, data, spec, problem, deadline, observer, seen, validation)
    trained, enforcement, guarantee = keep_promise(result, spec, data, continuation, problem)

    logits = predict_scores(trained, X, problem.device)
    proba = expit(logits)
    constraints, train_counts = problem.constraints, data.train_counts
    metrics = {name: evaluate_split(spec, constraints, y[idx], logits[idx], data.groups(name), list(group_names),
                                    train_counts)
               for name, idx in splits.items()}
    fairness = fairness_entries(constraints, y, logits, data.grouping, list(group_names), splits, seed=spec.seed)
    test = splits["test"]
    names = np.asarray(group_names, dtype=object)
    predictions = pd.DataFrame({
        "row": table.index.to_numpy()[data.table_rows("test")],
        "group": OVERLAPPING_LABEL if data.membership is not None else names[group[test]].astype(str),
        "label": y[test].astype(np.int64),
        "score": proba[test],
        "prediction": (proba[test] > 0.5).astype(np.int64),
    })
    warnings = warnings_for(fairness, metrics, enforcement)
    if guarantee is not None and certified is not None:
        guarantee.update(certified)
        if not certified["certifiable"]:
            warnings.append(not_certifiable_warning(certified, [f.tolerance for f in problem.constraints], len(y)))
    if guarantee is not None and not guarantee["met"]:
        warnings.append(guarantee["message"])
    promise = promise_sentence([(f.name, float(f.tolerance)) for f in problem.constraints], guarantee, enforcement)
    return RunOutput(
        status=result.status, stop_reason=result.stop_reason, iterations=continuation.iterations,
        solver_time_s=continuation.solver_time_s, device=problem.device.type, metrics=metrics,
        state_dict={k: v.detach().cpu().contiguous() for k, v in trained.state_dict().items()},
        predictions=predictions, constraint_names=problem.constraint_names, groups=list(group_names),
        feature_names=data.encoder.feature_names, tolerances=problem.tolerances, encoder=data.encoder.to_dict(),
        fairness=fairness, warnings=warnings, enforcement=enforcement, guarantee=guarantee,
        tried=result.tried, promise=promise,
    )


def _guarantee_split(spec: ProblemSpec, data: Prepared) -> Prepared:
    """Under a guarantee (a validation split, disjoint groups): ``data`` with train ∪ validation split again into
    candidate and safety rows (:func:`solvers.fairness.guarantee.safety_split`); a copy, the cached one unchanged."""
    if spec.guarantee is None or "validation" not in data.splits or data.membership is not None:
        return data
    splits, _ = safety_split(data.splits, data.y, data.group, len(data.group_names),
                             [c.build() for c in spec.constraints], spec.guarantee.confidence,
                             spec.guarantee.max_tests, spec.split.seed)
    return replace(data, splits=splits)


def _certification(spec: ProblemSpec, data: Prepared, problem: Problem) -> dict[str, Any] | None:
    """:func:`solvers.fairness.promise.certification` of a guarantee from the train ∪ validation rows at the safety
    split's sizes (None without a guarantee, a validation split or disjoint groups)."""
    if spec.guarantee is None or "validation" not in data.splits or data.membership is not None:
        return None
    rows = np.concatenate([data.splits["train"], data.splits["validation"]])
    out = certification(problem.constraints, [f.tolerance for f in problem.constraints], data.y[rows],
                        data.group[rows], len(data.group_names), len(data.splits["validation"]), len(data.y),
                        spec.guarantee.confidence, spec.guarantee.max_tests,
                        candidate_rows=len(data.splits["train"]))
    return {**out, "safety_share": round(len(data.splits["validation"]) / len(rows), 4)}

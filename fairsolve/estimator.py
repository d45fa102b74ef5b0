"""``FairClassifier``: the service's solvers as a scikit-learn estimator, in-process (no server).

    clf = FairClassifier(constraints=[{"type": "demographic_parity", "tolerance": 0.05}], solver="ssg")
    clf.fit(X, y, sensitive_features=A).predict(X_new)

``fit`` does what a job does on its train split (:mod:`solvers.api`, the solve and the exact
enforcement after it): groups from
``sensitive_features`` (several columns → their observed intersections, ``group_rules`` as in a
job), y = 1 for ``classes_[1]`` (the larger label, scikit-learn's convention), the job's
:class:`~solvers.encoding.TableEncoder` fitted on X (one-hot categoricals, standardised numbers,
missing values imputed), then one solve of

    min_θ (1/n) Σ ℓ(f_θ(x_i), y_i)   s.t.   Δ̂_k(θ) − ε_k ≤ 0 for every constraint k.

So for the same rows, spec and seed the model equals the service's job (see the tests). ``tolerance``
overrides every constraint's tolerance, so a grid search over tolerances is
``GridSearchCV(clf, {"tolerance": [...]})``.

Groups: ``fit(X, y, sensitive_features=...)`` (column name(s) of X, or the values), or the constructor's
``sensitive_columns`` (column names of X; an array's columns are ``x0``, ``x1``, ...), which makes
``cross_val_score``, ``GridSearchCV`` and pipelines work with no fit parameter to pass (the columns stay model
inputs, as in ``fit(X, y, sensitive_features="sex")``). Constraints without groups are a ``ValueError`` naming
``sensitive_features`` (every row in one group would keep any constraint trivially); without constraints,
every row is one group. Under scikit-learn's metadata routing (``sklearn.set_config(enable_metadata_routing=
True)``) ``fit`` requests ``sensitive_features`` by default, so a meta-estimator routes it when it is passed
(``cross_val_score(clf, X, y, params={"sensitive_features": A})``) and slices it with the rows.

``overlapping_groups`` (the job spec's field: threshold groups or one group per value of several columns, read
from X's columns, or from ``sensitive_features`` when it is a table) replaces the partition: a row is then in
several groups (:mod:`solvers.membership`), as in a job with ``overlapping_groups``.

``fairness_`` lists, per constraint, its exact value on the training data with its 95 % CI and whether
the tolerance is kept (the service's ``RunOutput.fairness`` entries, ``train`` only); ``metrics_`` is
the service's full metric dictionary on the training data; :meth:`metric_frame` gives per-group
metrics of any data as a DataFrame (a MetricFrame-like view).
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
from pydantic import ValidationError
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from solvers.spec import ProblemSpec, SpecError, check_solver_supports

SINGLE_GROUP = "all"


@contextmanager
def torch_threads(n_jobs: int | None) -> Iterator[None]:
    """Within: torch on ``n_jobs`` intra-op threads (None: 1; negative: cores + 1 + n_jobs, scikit-learn's
    convention, so -1 is every core); the process's count is restored after."""
    import torch

    if n_jobs == 0:
        raise ValueError("n_jobs: 0 threads; give None (1), a positive count or -1 (every core)")
    cores = os.cpu_count() or 1
    wanted = 1 if n_jobs is None else n_jobs if n_jobs > 0 else max(1, cores + 1 + n_jobs)
    before = torch.get_num_threads()
    torch.set_num_threads(int(wanted))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _as_frame(X: Any, columns: list[str] | None) -> pd.DataFrame:
    """X as the table the encoder reads: a DataFrame with string column names keeps them; an array, or a
    DataFrame with other names (which scikit-learn too treats as unnamed), gets x0..x{d-1}."""
    if isinstance(X, pd.DataFrame):
        if all(isinstance(c, str) for c in X.columns):
            return X
        return X.set_axis(columns or [f"x{j}" for j in range(X.shape[1])], axis=1)
    X = np.asarray(X)
    return pd.DataFrame(X, columns=columns or [f"x{j}" for j in range(X.shape[1])])


def _named_columns(names: str | list[str], X: pd.DataFrame, field: str) -> pd.DataFrame:
    """The columns of X named ``names`` (ValueError naming ``field`` for an unknown one)."""
    names = [names] if isinstance(names, str) else [str(c) for c in names]
    unknown = [c for c in names if c not in X.columns]
    if unknown:
        raise ValueError(f"{field}: unknown column(s) {', '.join(map(repr, unknown))} of X ({', '.join(X.columns)})")
    return X[names].reset_index(drop=True)


def _sensitive_table(sensitive_features: Any, X: pd.DataFrame, n: int) -> pd.DataFrame:
    """The sensitive column(s) as a DataFrame of n rows: column name(s) of X, a Series, a DataFrame or an array."""
    if isinstance(sensitive_features, str) or (
            isinstance(sensitive_features, list) and sensitive_features and all(isinstance(c, str) for c in sensitive_features)
            and len(sensitive_features) != n):
        return _named_columns(sensitive_features, X, "sensitive_features")
    if isinstance(sensitive_features, pd.DataFrame):
        table = sensitive_features.set_axis([str(c) for c in sensitive_features.columns], axis=1)
    elif isinstance(sensitive_features, pd.Series):
        table = sensitive_features.to_frame(str(sensitive_features.name or "sensitive"))
    else:
        values = np.asarray(sensitive_features, dtype=object)
        if values.ndim == 1:
            values = values.reshape(-1, 1)
        if values.ndim != 2:
            raise ValueError("sensitive_features: must be 1-D or 2-D")
        table = pd.DataFrame(values, columns=[f"sensitive{j}" for j in range(values.shape[1])])
    if len(table) != n:
        raise ValueError(f"sensitive_features: {len(table)} rows, X has {n}")
    return table.reset_index(drop=True)


class FairClassifier(ClassifierMixin, BaseEstimator):
    """Binary classifier trained under fairness constraints by a FairSolve solver.

    Parameters
    ----------
    constraints : list of dict, optional
        The job's ``constraints``: ``{"type": ..., "tolerance": ε, **family fields}``.
    solver : str
        Solver name or alias (``GET /api/v1/solvers``); ``"auto"`` picks one per problem.
    solver_params : dict, optional
        The solver's params (validated against its Config).
    model : str or dict
        ``"linear"``, ``"mlp"`` or a model spec ``{"type": "mlp", "hidden": [32]}``.
    objective : str
        The loss ℓ: ``logistic``, ``hinge``, ``bce``, ``truncated_logistic`` or ``auc_square``.
    tolerance : float, optional
        Overrides every constraint's tolerance (for grid searches).
    group_rules : dict, optional
        Sensitive column → ``{"values": ...}`` / ``{"ranges": ...}`` as in a job.
    overlapping_groups : dict, optional
        Groups that overlap, as a job's ``overlapping_groups`` (``{"thresholds": {"col": [cuts]}, "columns": [...],
        "min_group_fraction": ...}``), built from the columns of X (or of the ``sensitive_features`` table).
    sensitive_columns : str or list of str, optional
        The sensitive columns of X by name (an array's columns are ``x0``, ``x1``, ...), used when ``fit`` gets
        no ``sensitive_features``.
    n_jobs : int, optional
        Torch's intra-op threads while fitting and predicting (restored after): None = 1, as a worker process
        on a machine whose cores its pool shares; -1 = every core; k = k threads. More threads only help large
        tensor operations on an idle machine: on a busy one they wait on each other (Adult, 24k rows, SSG:
        ``bench/system/results/estimator_speed.md``).
    max_iter, time_limit_s, random_state, device, exact_enforcement
        The job's ``max_iterations``, ``time_limit_s``, ``seed``, ``device`` and ``exact_enforcement`` (after
        the solve, the exact constraint enforced on the training data as the service does).
    """

    #: under metadata routing, ``fit`` asks for ``sensitive_features`` unless told otherwise (``set_fit_request``)
    __metadata_request__fit = {"sensitive_features": True}

    def __init__(self, constraints: list[dict] | None = None, solver: str = "auto", solver_params: dict | None = None,
                 model: str | dict = "linear", objective: str = "logistic", tolerance: float | None = None,
                 group_rules: dict | None = None, max_iter: int = 2000, time_limit_s: float = 600.0,
                 random_state: int = 0, device: str = "cpu", exact_enforcement: bool = True,
                 overlapping_groups: dict | None = None, sensitive_columns: str | list[str] | None = None,
                 n_jobs: int | None = None) -> None:
        self.constraints = constraints
        self.solver = solver
        self.solver_params = solver_params
        self.model = model
        self.objective = objective
        self.tolerance = tolerance
        self.group_rules = group_rules
        self.max_iter = max_iter
        self.time_limit_s = time_limit_s
        self.random_state = random_state
        self.device = device
        self.exact_enforcement = exact_enforcement
        self.overlapping_groups = overlapping_groups
        self.sensitive_columns = sensitive_columns
        self.n_jobs = n_jobs

    def problem_spec(self, sensitive: list[str]) -> ProblemSpec:
        """The parameters as the service's job spec (ValueError naming the bad field, with the API's message)."""
        constraints = [dict(c) for c in (self.constraints or [])]
        if self.tolerance is not None:
            constraints = [c | {"tolerance": self.tolerance} for c in constraints]
        model = {"type": self.model} if isinstance(self.model, str) else dict(self.model)
        try:
            spec = ProblemSpec(
                target="__label__", positive_label=1, sensitive=sensitive, constraints=constraints,
                solver={"name": self.solver, "params": dict(self.solver_params or {})}, model=model,
                objective=self.objective, group_rules=self.group_rules or {}, max_iterations=self.max_iter,
                time_limit_s=self.time_limit_s, seed=self.random_state, device=self.device,
                exact_enforcement=self.exact_enforcement, overlapping_groups=self.overlapping_groups)
            check_solver_supports(spec)
        except ValidationError as err:
            first = err.errors()[0]
            raise ValueError(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
        except SpecError as err:
            raise ValueError(str(err)) from None
        return spec

    def fit(self, X: Any, y: Any, sensitive_features: Any = None) -> "FairClassifier":
        """Train on every row of X (the job's train split), groups from ``sensitive_features`` (or the
        constructor's ``sensitive_columns``, or ``overlapping_groups``); ValueError naming ``sensitive_features``
        when there are constraints and no groups."""
        from solvers.encoding import build_groups

        table = X if isinstance(X, pd.DataFrame) else None
        Xv, y = validate_data(self, X, y, dtype=None if table is not None else "numeric",
                              ensure_all_finite="allow-nan")
        check_classification_targets(y)
        if type_of_target(y) != "binary":
            raise ValueError(f"Only binary classification is supported; y has {len(np.unique(y))} classes "
                             f"({type_of_target(y)} target)")
        X = _as_frame(table if table is not None else Xv, None)
        self.classes_, y01 = np.unique(y, return_inverse=True)
        if self.overlapping_groups is not None:
            return self._fit(X, y01, *self._overlapping(X, sensitive_features))
        groups = self._group_table(X, sensitive_features)
        single = groups is None
        if single:
            if self.constraints:
                raise ValueError("sensitive_features: the constraints need groups; pass fit(X, y, sensitive_features="
                                 "...) or FairClassifier(sensitive_columns=[...]) (in one group every constraint "
                                 "holds trivially)")
            groups = pd.DataFrame({"__group__": np.zeros(len(X), dtype=np.int64)})
        spec = self.problem_spec(list(groups.columns))
        for col in spec.group_rules:
            if col not in groups.columns:
                raise ValueError(f"group_rules.{col}: not a sensitive column ({', '.join(groups.columns)})")
        group, group_names = build_groups(groups, spec.sensitive, spec.group_rules)
        if single:
            group_names = [SINGLE_GROUP]
        return self._fit(X, y01, spec, group, list(group_names))

    def _group_table(self, X: pd.DataFrame, sensitive_features: Any) -> pd.DataFrame | None:
        """The sensitive columns of the rows of X: from ``sensitive_features``, else the constructor's
        ``sensitive_columns``, else None (ValueError naming the field when both are given)."""
        if sensitive_features is not None and self.sensitive_columns is not None:
            raise ValueError("sensitive_features: given to fit while sensitive_columns is set; give one of the two")
        if sensitive_features is not None:
            return _sensitive_table(sensitive_features, X, len(X))
        if self.sensitive_columns is not None:
            return _named_columns(self.sensitive_columns, X, "sensitive_columns")
        return None

    def _overlapping(self, X: pd.DataFrame, sensitive_features: Any):
        """(spec, membership, its names) of ``overlapping_groups`` on X's columns (or the sensitive table)."""
        from solvers.membership import check_overlapping_groups, overlapping_membership

        spec = self.problem_spec([])
        source = X.reset_index(drop=True) if sensitive_features is None else \
            _sensitive_table(sensitive_features, X, len(X))
        try:
            check_overlapping_groups(spec.overlapping_groups, source, spec.target)
        except SpecError as err:
            raise ValueError(str(err)) from None
        membership = overlapping_membership(source, spec.overlapping_groups)
        return spec, membership, membership.names

    def _fit(self, X: pd.DataFrame, y01: np.ndarray, spec: ProblemSpec, group, group_names: list[str]
             ) -> "FairClassifier":
        """The solve of :meth:`fit` once the groups are built (``group`` an index or a Membership), on
        ``n_jobs`` torch threads."""
        with torch_threads(self.n_jobs):
            return self._solve(X, y01, spec, group, group_names)

    def _solve(self, X: pd.DataFrame, y01: np.ndarray, spec: ProblemSpec, group, group_names: list[str]
               ) -> "FairClassifier":
        from solvers.api import Prepared, _train_problem, continuation_of, keep_promise, solve
        from solvers.encoding import TableEncoder
        from solvers.membership import Membership

        from .model import FairModel

        encoder = TableEncoder(list(X.columns)).fit(X)
        overlapping = isinstance(group, Membership)
        data = Prepared(np.zeros(len(X), dtype=np.int64) if overlapping else group, list(group_names), y01,
                        {"train": np.arange(len(X))}, encoder, encoder.transform(X),
                        membership=group if overlapping else None)
        deadline = time.monotonic() + spec.time_limit_s
        problem = _train_problem(data, spec, [c.build() for c in spec.constraints])
        result = solve(problem, spec.solver, max_iterations=spec.max_iterations, time_limit_s=spec.time_limit_s,
                       seed=spec.seed)
        continuation = continuation_of(result, data, spec, problem, deadline)
        trained, self.enforcement_, _ = keep_promise(result, spec, data, continuation, problem)
        self.model_ = FairModel(encoder, trained.cpu().eval(), classes=self.classes_, spec=spec,
                                groups=list(group_names))
        self.n_iter_ = int(continuation.iterations)
        self.solver_time_s_ = float(continuation.solver_time_s)  # the job's result.solver_time_s for these rows
        self.status_, self.stop_reason_ = result.status, result.stop_reason
        self.tried_ = list(result.tried)  # auto's portfolio: every solve it ran
        self.constraint_names_, self.tolerances_ = problem.constraint_names, problem.tolerances
        self.metrics_ = self._metrics(X, y01, group, list(group_names), spec, problem.constraints)
        self.fairness_ = self._fairness(X, y01, group, list(group_names), problem.constraints)
        return self

    def _metrics(self, X: pd.DataFrame, y01: np.ndarray, group: np.ndarray, group_names: list[str], spec: ProblemSpec,
                 constraints: list) -> dict[str, Any]:
        """The service's metrics of one split (:func:`solvers.api.evaluate_split`) on the training data."""
        from solvers.api import evaluate_split

        from solvers.membership import Membership

        logits = self.model_.decision_function(X)
        counts = group.counts if isinstance(group, Membership) else np.bincount(group, minlength=len(group_names))
        return evaluate_split(spec, constraints, y01, logits, group, group_names, counts)

    def _fairness(self, X: pd.DataFrame, y01: np.ndarray, group: np.ndarray, group_names: list[str],
                  constraints: list) -> list[dict[str, Any]]:
        """The service's fairness entries (:func:`solvers.fairness.report.fairness_entries`) on the training data:
        per constraint its exact value, 95 % CI and ``kept`` under ``train`` (no validation or test split here)."""
        from solvers.fairness.report import fairness_entries

        logits = self.model_.decision_function(X)
        return fairness_entries(constraints, y01, logits, group, group_names, {"train": np.arange(len(y01))},
                                seed=self.random_state)

    def _check_X(self, X: Any) -> pd.DataFrame:
        check_is_fitted(self, "model_")
        table = X if isinstance(X, pd.DataFrame) else None
        Xv = validate_data(self, X, reset=False, dtype=None if table is not None else "numeric",
                           ensure_all_finite="allow-nan")
        return _as_frame(table if table is not None else Xv, None)

    def decision_function(self, X: Any) -> np.ndarray:
        """f_θ(x) per row; > 0 predicts ``classes_[1]``."""
        X = self._check_X(X)
        with torch_threads(self.n_jobs):
            return self.model_.decision_function(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, 2) class probabilities [1 − σ(f), σ(f)] in the order of ``classes_``."""
        X = self._check_X(X)
        with torch_threads(self.n_jobs):
            return self.model_.predict_proba(X)

    def predict(self, X: Any) -> np.ndarray:
        X = self._check_X(X)
        with torch_threads(self.n_jobs):
            return self.model_.predict(X)

    def metric_frame(self, X: Any, y: Any, sensitive_features: Any = None) -> pd.DataFrame:
        """Per-group metrics of the fitted model on (X, y): one row per group, columns n,
        selection_rate, accuracy, tpr, fpr (a MetricFrame-like ``by_group`` table)."""
        from solvers.encoding import build_groups

        X = self._check_X(X)
        y01 = (np.asarray(y) == self.classes_[1]).astype(np.int64)
        pred = (self.decision_function(X) > 0).astype(np.int64)
        if self.overlapping_groups is not None:  # one frame row per (row, group) pair
            _, membership, names = self._overlapping(X, sensitive_features)
            rows, group = membership.pairs
        else:
            groups = self._group_table(X, sensitive_features)
            if groups is None:
                raise ValueError("sensitive_features: the groups of the frame (or the estimator's sensitive_columns)")
            group, names = build_groups(groups, list(groups.columns), self.group_rules or {})
            rows = np.arange(len(X))
        y01, pred = y01[rows], pred[rows]
        frame = pd.DataFrame({"group": np.asarray(names, dtype=object)[group], "y": y01, "pred": pred,
                              "correct": (y01 == pred).astype(float)})
        by = frame.groupby("group", sort=True)
        positives = frame[frame["y"] == 1].groupby("group")["pred"].mean()
        negatives = frame[frame["y"] == 0].groupby("group")["pred"].mean()
        return pd.DataFrame({"n": by.size(), "selection_rate": by["pred"].mean(), "accuracy": by["correct"].mean(),
                             "tpr": positives, "fpr": negatives})

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True          # the encoder imputes missing values (median + indicator)
        tags.classifier_tags.multi_class = False  # binary targets only (the service's labels are 0/1)
        tags.non_deterministic = False
        return tags

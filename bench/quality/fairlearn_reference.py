"""fairlearn's ``ExponentiatedGradient`` on exactly a FairSolve job's split and encoding: the reference the
benchmarks compare against (``bench.quality.adult_vs_fairlearn``, ``bench.quality.promise`` over ``LogisticRegression``;
``bench.quality.frontier`` over LightGBM)."""
from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
import pandas as pd


def moment(kind: str, tolerance: float):
    """fairlearn's reductions moment of a FairSolve constraint type (demographic parity or equalized odds)."""
    from fairlearn.reductions import DemographicParity, EqualizedOdds

    return (DemographicParity if kind == "demographic_parity" else EqualizedOdds)(difference_bound=tolerance)


def exponentiated_gradient(estimator: Any, kind: str, tolerance: float, X: np.ndarray, y: np.ndarray,
                           group: np.ndarray, train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Fit ``ExponentiatedGradient(estimator)`` on the ``train`` rows: (its randomised predictions on the
    ``test`` rows at ``random_state=0``, wall seconds, CPU seconds of this process) of the fit."""
    from fairlearn.reductions import ExponentiatedGradient

    started, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ExponentiatedGradient(estimator, moment(kind, tolerance)).fit(
            X[train], y[train], sensitive_features=group[train])
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return np.asarray(model.predict(X[test], random_state=0)), wall, cpu


def fit(table: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    """Fit on the spec's train split with the bound of its first constraint (demographic parity or equalized
    odds), evaluate on its test split: ``{time_s (the fit's wall seconds), cpu_s (its CPU seconds), test_accuracy,
    test_gap}``; predictions are
    fairlearn's randomised ones at ``random_state=0``; the estimator is ``LogisticRegression(max_iter=1000)``."""
    from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference
    from sklearn.linear_model import LogisticRegression

    from solvers import ProblemSpec, prepare

    kind, tolerance = spec["constraints"][0]["type"], spec["constraints"][0]["tolerance"]
    data = prepare(table, ProblemSpec.model_validate(spec))
    X, y, group, train, test = data.X, data.y, data.group, data.splits["train"], data.splits["test"]
    pred, wall, cpu = exponentiated_gradient(LogisticRegression(max_iter=1000), kind, tolerance, X, y, group, train,
                                           test)
    metric = demographic_parity_difference if kind == "demographic_parity" else equalized_odds_difference
    return {"time_s": wall, "cpu_s": cpu, "test_accuracy": float((pred == y[test]).mean()),
            "test_gap": float(metric(y[test], pred, sensitive_features=group[test]))}

"""fairlearn's ``ExponentiatedGradient(LogisticRegression)`` on exactly a FairSolve job's split and encoding:
the reference the benchmarks compare against (``bench.adult_vs_fairlearn``, ``bench.promise``)."""
from __future__ import annotations

import time
import warnings
from typing import Any

import pandas as pd


def fit(table: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    """Fit on the spec's train split with the bound of its first constraint (demographic parity or equalized
    odds), evaluate on its test split: ``{time_s (the fit), test_accuracy, test_gap}``; predictions are
    fairlearn's randomised ones at ``random_state=0``."""
    from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference
    from fairlearn.reductions import DemographicParity, EqualizedOdds, ExponentiatedGradient
    from sklearn.linear_model import LogisticRegression

    from solvers import ProblemSpec, prepare

    kind, tolerance = spec["constraints"][0]["type"], spec["constraints"][0]["tolerance"]
    data = prepare(table, ProblemSpec.model_validate(spec))
    X, y, group, train, test = data.X, data.y, data.group, data.splits["train"], data.splits["test"]
    moment = (DemographicParity if kind == "demographic_parity" else EqualizedOdds)(difference_bound=tolerance)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ExponentiatedGradient(LogisticRegression(max_iter=1000), moment).fit(
            X[train], y[train], sensitive_features=group[train])
    wall = time.perf_counter() - started
    pred = model.predict(X[test], random_state=0)
    metric = demographic_parity_difference if kind == "demographic_parity" else equalized_odds_difference
    return {"time_s": wall, "test_accuracy": float((pred == y[test]).mean()),
            "test_gap": float(metric(y[test], pred, sensitive_features=group[test]))}

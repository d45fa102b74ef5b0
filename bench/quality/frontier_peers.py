"""The peers of the tree-model frontier benchmark (:mod:`bench.quality.frontier`), each on exactly a FairSolve job's split
and encoding (:func:`solvers.prepare`): the features are the job's encoded ``X``, fitted on its train split; the
post-processors choose their thresholds on its validation split, as FairSolve's ``group_thresholds`` does.

* ``LightGBM``: ``LGBMClassifier`` alone (unconstrained reference), ŷ = 1{p > ½};
* ``fairlearn EG(LightGBM)``: ``ExponentiatedGradient(LGBMClassifier)`` with the bound as ``difference_bound``
  (:func:`bench.quality.fairlearn_reference.exponentiated_gradient`; randomised predictions at ``random_state=0``);
* ``fairlearn ThresholdOptimizer(LightGBM)``: the LightGBM of the train split, thresholds fitted on validation
  (``prefit=True``, accuracy objective); demographic parity relaxed to ``tol`` = the bound, equalized odds exact
  (fairlearn supports no relaxation of it); randomised predictions at ``random_state=0``;
* ``OxonFair(LightGBM)``: ``FairPredictor`` over the same LightGBM with the validation split, maximising
  accuracy subject to the max-over-group-pairs gap (``pos_pred_rate.max_diff`` for demographic parity,
  ``equalized_odds_max`` for equalized odds: the same quantities as FairSolve's) ≤ the bound.

Every fit returns (test predictions in {0, 1}, wall seconds, CPU seconds of this process), the base LightGBM's
fit included. Every LightGBM here has :data:`LGBM_PARAMS` and ``random_state`` = the seed.
"""
from __future__ import annotations

import time
import warnings
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Callable, Iterator

import numpy as np

from bench.quality.fairlearn_reference import exponentiated_gradient

#: The peers' LightGBM: 200 trees (the issue's reference figure), otherwise LightGBM's defaults, one thread
#: (the machine is shared; CPU seconds are reported beside wall seconds).
LGBM_PARAMS = {"n_estimators": 200, "learning_rate": 0.1, "num_leaves": 31, "n_jobs": 1, "verbose": -1}

Fit = Callable[..., tuple[np.ndarray, float, float]]


def lightgbm(seed: int):
    from lightgbm import LGBMClassifier

    return LGBMClassifier(**LGBM_PARAMS, random_state=seed)


@contextmanager
def timed() -> Iterator[SimpleNamespace]:
    """Wall and process-CPU seconds of a ``with`` block (``.wall``, ``.cpu`` once it ends), warnings silenced."""
    out = SimpleNamespace()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wall, cpu = time.perf_counter(), time.process_time()
        yield out
        out.wall, out.cpu = time.perf_counter() - wall, time.process_time() - cpu


def plain_lightgbm(kind, tolerance, X, y, group, splits, seed):
    train, test = splits["train"], splits["test"]
    with timed() as t:
        model = lightgbm(seed).fit(X[train], y[train])
    return (model.predict_proba(X[test])[:, 1] > 0.5).astype(np.int64), t.wall, t.cpu


def eg_lightgbm(kind, tolerance, X, y, group, splits, seed):
    return exponentiated_gradient(lightgbm(seed), kind, tolerance, X, y, group, splits["train"], splits["test"])


def threshold_optimizer(kind, tolerance, X, y, group, splits, seed):
    from fairlearn.postprocessing import ThresholdOptimizer

    train, val, test = splits["train"], splits["validation"], splits["test"]
    with timed() as t:
        base = lightgbm(seed).fit(X[train], y[train])
        post = ThresholdOptimizer(estimator=base, constraints=kind, objective="accuracy_score", prefit=True,
                                  predict_method="predict_proba",
                                  tol=tolerance if kind == "demographic_parity" else None)
        post.fit(X[val], y[val], sensitive_features=group[val])
    pred = post.predict(X[test], sensitive_features=group[test], random_state=0)
    return np.asarray(pred).astype(np.int64), t.wall, t.cpu


def oxonfair(kind, tolerance, X, y, group, splits, seed):
    from oxonfair import DataDict, FairPredictor, group_metrics

    train, val, test = splits["train"], splits["validation"], splits["test"]
    metric = group_metrics.pos_pred_rate.max_diff if kind == "demographic_parity" else group_metrics.equalized_odds_max
    with timed() as t:
        base = lightgbm(seed).fit(X[train], y[train])
        fair = FairPredictor(base, DataDict(y[val], X[val], group[val]))
        fair.fit(group_metrics.accuracy, metric, tolerance)
    pred = fair.predict(DataDict(y[test], X[test], group[test]))
    return np.asarray(pred).astype(np.int64), t.wall, t.cpu


def oxonfair_missing() -> str | None:
    """Why OxonFair cannot run here (its import error), or None when it imports."""
    try:
        import oxonfair  # noqa: F401
    except Exception as exc:  # any failure to import is a result to report, not an error of the benchmark
        return f"{type(exc).__name__}: {exc}"[:300]
    return None


#: peer name -> (fit, role): "reference" = unconstrained, "peer" = a fairness method compared against ours
PEERS: dict[str, tuple[Fit, str]] = {
    "LightGBM": (plain_lightgbm, "reference"),
    "fairlearn EG(LightGBM)": (eg_lightgbm, "peer"),
    "fairlearn ThresholdOptimizer(LightGBM)": (threshold_optimizer, "peer"),
    "OxonFair(LightGBM)": (oxonfair, "peer"),
}

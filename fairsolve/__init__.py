"""FairSolve's public Python API.

* :class:`Client` — the service over HTTP (``fairsolve.Client(url, key)``): datasets from DataFrames
  or files, jobs and sweeps, progress, metrics as DataFrames, charts as Plotly figures, models, audits.
* :class:`FairClassifier` — the solvers in-process as a scikit-learn estimator
  (``fit(X, y, sensitive_features=A)``), no server needed.
* :class:`FairModel` — a trained scorer (encoder + network) with ``predict`` / ``predict_proba`` on raw tables.

Names are imported on first use, so ``fairsolve.Client`` does not load torch.
"""
from __future__ import annotations

from solvers.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "client": ["Client", "FairSolveError", "Job", "Sweep"],
    "estimator": ["FairClassifier"],
    "model": ["FairModel"],
})

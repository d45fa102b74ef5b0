"""What the worker stores of a solve's :class:`~solvers.api.RunOutput`: JSON-ready values, the job's promise fields,
and the summary a baseline row keeps (:mod:`app.jobs.baselines`)."""

from __future__ import annotations

import math


def json_ready(value):
    """``value`` with numpy scalars as Python numbers and non-finite floats as None (JSONB has no NaN)."""
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def promise_fields(out) -> dict:
    """What the job promised and what it kept: the exact fairness report per constraint, the warnings,
    how the exact constraint was enforced, the guarantee, and the candidates ``auto`` tried."""
    return json_ready({"fairness": out.fairness, "warnings": out.warnings, "enforcement": out.enforcement,
                       "guarantee": out.guarantee, "tried": out.tried, "promise": out.promise})


SCALARS = ("accuracy", "balanced_accuracy", "roc_auc")


def baseline_summary(out) -> dict:
    """What the job page shows of the unconstrained run: scalars per split and the fairness report."""
    return {"metrics": {split: {k: block.get(k) for k in SCALARS} for split, block in out.metrics.items()},
            "fairness": promise_fields(out)["fairness"], "iterations": out.iterations,
            "solver_time_s": out.solver_time_s, "stop_reason": out.stop_reason}

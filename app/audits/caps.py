r"""An audit run's size, checked before the work it bounds (each refusal is a :class:`ModelError` naming the cap).

* **ONNX scoring**, once the data's rows R are known and before the model runs: R × (the graph's work per row
  from shape inference, :class:`app.onnx_models.bounds.GraphCost`) ≤ ``FAIRSOLVE_AUDIT_MAX_ONNX_OPS``;
* **groups** K, once the rows are labelled and grouped and before any metric: K ≤ ``FAIRSOLVE_AUDIT_MAX_GROUPS``
  (at most 10,000, the noise floor's own cap); a streamed prediction log
  (:mod:`app.audits.log_stream`) is checked batch by batch, before a batch's groups are summarised;
* **metric work**, before the metrics: M × (B + 1) × (R + 100 K) ≤ ``FAIRSOLVE_AUDIT_MAX_WORK`` row evaluations,
  M the metrics read from the rows (drift metrics read summaries), B + 1 the full data and its bootstrap
  resamples (:data:`app.audits.metrics.N_BOOT`); a group weighs as 100 rows, as each resample's per-group
  statistics and their intervals are kept per group.

The run's process has a hard time and memory limit besides (:mod:`app.core.sandbox`): these caps fail a run that
could not finish at once, with the figure, instead of after the limit.
"""
from __future__ import annotations

from typing import Any

from solvers.fairness.noise_floor import MAX_GROUPS as NOISE_FLOOR_GROUPS

from .metrics import N_BOOT, MetricSpec
from .model_file import ModelError

GROUP_WEIGHT = 100


def check_scoring(model: Any, n_rows: int, max_onnx_ops: float) -> None:
    """An ONNX model's work on ``n_rows`` rows within ``max_onnx_ops`` (other models: nothing to check)."""
    cost = getattr(model, "cost", None)
    if cost is not None and cost.ops_per_row * n_rows > max_onnx_ops:
        raise ModelError(f"the ONNX model would spend {cost.ops_per_row * n_rows:.3g} multiply-adds and copies on "
                         f"{n_rows} rows ({cost.ops_per_row:.3g} per row; at most {max_onnx_ops:.3g}, "
                         "FAIRSOLVE_AUDIT_MAX_ONNX_OPS)")


def check_groups(n_groups: int, max_groups: int, at_least: bool = False) -> None:
    """``n_groups`` within ``FAIRSOLVE_AUDIT_MAX_GROUPS`` (and the noise floor's own cap); ``at_least``: the
    groups seen so far of data still being read (a streamed log stops at the first batch past the cap)."""
    limit = min(max_groups, NOISE_FLOOR_GROUPS)
    if n_groups > limit:
        raise ModelError(f"the data has {'at least ' if at_least else ''}{n_groups} groups (more than {limit}, "
                         "FAIRSOLVE_AUDIT_MAX_GROUPS): audit fewer sensitive columns, or group their values "
                         "(group_rules)")


def metric_work(n_metrics: int, n_rows: int, n_groups: int) -> float:
    """M × (B + 1) × (R + 100 K): the module docstring's row evaluations."""
    return float(n_metrics) * (N_BOOT + 1) * (n_rows + GROUP_WEIGHT * n_groups)


def check_metrics(n_rows: int, n_groups: int, specs: list[MetricSpec], max_groups: int, max_work: float) -> None:
    """The groups and the metric work of ``specs`` on ``n_rows`` rows in ``n_groups`` groups within their caps
    (known once the rows are grouped: a scored table's, or a streamed log's cell counts)."""
    check_groups(n_groups, max_groups)
    on_rows = sum(1 for s in specs if s.metric.drift is None)
    work = metric_work(on_rows, n_rows, n_groups)
    if work > max_work:
        raise ModelError(f"the run's metrics would take {work:.3g} row evaluations ({on_rows} metrics × "
                         f"{N_BOOT + 1} resamples × ({n_rows} rows + {GROUP_WEIGHT} × {n_groups} groups); at most "
                         f"{max_work:.3g}, FAIRSOLVE_AUDIT_MAX_WORK)")

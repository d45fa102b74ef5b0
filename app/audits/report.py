"""One audit run's report: every metric overall and per group with 95% CIs (the rate gaps' exact
Clopper–Pearson, the job fairness report's; the others' bootstrap: :mod:`app.audits.metrics`), pass/fail
against its threshold, drift against the previous run, and the text table the CLI prints.

A result (one per metric spec, in the spec's order)::

    {"key": "demographic_parity", "type": "demographic_parity", "options": {...}, "direction": "max",
     "threshold": 0.1, "value": 0.12, "ci": [0.07, 0.18], "passed": false,
     "by_group": {"selection_rate": {"F": {"value": 0.2, "ci": [0.15, 0.26]}, ...}},
     "drift": {"previous": 0.1, "delta": 0.02}}        # null without a previous value

A rate gap with a threshold (``demographic_parity``, ``equal_opportunity``, ``equalized_odds``) also carries
``noise_floor`` (:func:`solvers.fairness.noise_floor.floor_of_cells` for the batch's group sizes at its pooled
rates): the chance that a model with no gap on the population stays within the threshold on a batch of this size.
A breach where that chance is low is one the batch's own noise could have produced; the alert says so.

The score-drift metrics (``score_ks``, ``score_psi``: :mod:`app.audits.drift`) compare this run with a
reference run instead of reading its rows: their value is the largest group's statistic, their per-group
statistics have no CI (there is one summary per run, not a resample), and without the reference run (an
audit's first run, no pinned baseline) they have no value and no verdict (``passed`` None).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from solvers.fairness.noise_floor import floor_of_cells

from .cells import cell_counts
from .metrics import N_BOOT, SEED, CellMetric, MetricSpec, Scored, bootstrap_all, on_cells, passes, resamples


def drift_result(spec: MetricSpec, drift: dict[str, Any]) -> dict[str, Any]:
    """A drift metric's value (the largest group's statistic) and per-group statistics, from ``drift[against]``."""
    against = drift.get(spec.options.against)
    if against is None:
        return {"value": None, "ci": None, "by_group": {}, "reference_run_id": None}
    groups = against[spec.metric.drift]
    defined = [v for v in groups.values() if v is not None]
    return {"value": max(defined) if defined else None, "ci": None, "reference_run_id": against["run_id"],
            "by_group": {spec.metric.drift: {g: {"value": v, "ci": None} for g, v in groups.items()}}}


def evaluate(specs: list[MetricSpec], scored: Scored, previous: list[dict[str, Any]] | None = None,
             n_boot: int = N_BOOT, seed: int = SEED, drift: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"results": [...], "breached": [keys], "passed": bool | None, "group_sizes": {group: n}}``;
    ``drift``: ``{"previous": ..., "baseline": ...}`` of :func:`app.audits.drift.compare` for the drift metrics."""
    on_rows = [spec for spec in specs if spec.metric.drift is None]
    computed = bootstrap_all(on_rows, scored, resamples(len(scored.y), n_boot, seed))
    counts = cell_counts(scored.y, scored.pred, scored.group, scored.n_groups)
    return _report(specs, dict(zip(map(id, on_rows), computed)), counts, scored.group_names, previous, seed, drift)


def evaluate_counts(specs: list[MetricSpec], counts: np.ndarray, group_names: list[str],
                    previous: list[dict[str, Any]] | None = None, n_boot: int = N_BOOT, seed: int = SEED,
                    drift: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`evaluate` from a log's (K, 2, 2) cell counts alone (a streamed log: :mod:`app.audits.log_stream`),
    for the rate and drift metrics (:func:`on_counts`); another metric is a ValueError naming it."""
    rates = [spec for spec in specs if spec.metric.drift is None]
    if not on_counts(specs):
        other = next(spec.type for spec in rates if not issubclass(spec.metric, CellMetric))
        raise ValueError(f"metric {other!r} reads every row's score; it cannot be computed from cell counts")
    computed = on_cells(rates, counts, group_names, n_boot, seed)
    return _report(specs, dict(zip(map(id, rates), computed)), counts, group_names, previous, seed, drift)


def on_counts(specs: list[MetricSpec]) -> bool:
    """Whether every metric of ``specs`` is a rate metric (:class:`~app.audits.metrics.CellMetric`) or a drift
    metric, so the run needs only the cell counts and the score summaries."""
    return all(spec.metric.drift is not None or issubclass(spec.metric, CellMetric) for spec in specs)


def _report(specs: list[MetricSpec], computed: dict[int, dict[str, Any]], counts: np.ndarray, group_names: list[str],
            previous: list[dict[str, Any]] | None, seed: int, drift: dict[str, Any] | None) -> dict[str, Any]:
    before = {r["key"]: r.get("value") for r in previous or []}
    results = []
    for spec in specs:
        metric = spec.metric
        if metric.drift is not None:
            out = drift_result(spec, drift or {})
            verdict = None if out["reference_run_id"] is None else passes(metric.direction, out["value"],
                                                                          spec.threshold)
        else:
            out = computed[id(spec)]
            verdict = passes(metric.direction, out["value"], spec.threshold)
        prev = before.get(spec.key)
        floor = None if spec.threshold is None or out["value"] is None else floor_of_cells(
            spec.type, counts, spec.threshold, seed)
        results.append({
            "key": spec.key, "type": spec.type, "options": spec.options.model_dump(mode="json"),
            "direction": metric.direction, "threshold": spec.threshold, **out,
            "passed": verdict, "noise_floor": floor,
            "drift": None if prev is None or out["value"] is None else {"previous": prev,
                                                                          "delta": out["value"] - prev},
        })
    breached = [r["key"] for r in results if r["passed"] is False]
    checked = [r for r in results if r["passed"] is not None]
    sizes = counts.sum(axis=(1, 2))
    return {"results": results, "breached": breached, "passed": (not breached) if checked else None,
            "group_sizes": {g: int(c) for g, c in zip(group_names, sizes)}}


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _ci(ci: list[float] | None) -> str:
    return "—" if ci is None else f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def format_table(report: dict[str, Any]) -> str:
    """The report as a fixed-width text table: one line per metric, then its per-group statistics."""
    head = ("metric", "value", "95% CI", "threshold", "result", "drift", "zero-gap keeps")
    lines: list[tuple[str, ...]] = [head]
    for r in report["results"]:
        bound = "—" if r["threshold"] is None else ("≤ " if r["direction"] == "max" else "≥ ") + f"{r['threshold']:g}"
        verdict = {True: "pass", False: "BREACH", None: "—"}[r["passed"]]
        drift = "—" if r["drift"] is None else f"{r['drift']['delta']:+.4f}"
        floor = r.get("noise_floor")
        keeps = "—" if floor is None else f"{100 * floor['keep_probability']:.0f} %"
        lines.append((r["key"], _fmt(r["value"]), _ci(r["ci"]), bound, verdict, drift, keeps))
        for stat, groups in r["by_group"].items():
            for group, v in groups.items():
                lines.append((f"  {stat} · {group}", _fmt(v["value"]), _ci(v["ci"]), "", "", "", ""))
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    sizes = ", ".join(f"{g}: {n}" for g, n in report["group_sizes"].items())
    text.append("")
    text.append(f"rows: {report.get('n_rows', sum(report['group_sizes'].values()))}  groups: {sizes}")
    text.append("BREACHED: " + ", ".join(report["breached"]) if report["breached"] else "all thresholds hold")
    return "\n".join(text)

"""One audit run's report: every metric overall and per group with bootstrap 95% CIs, pass/fail
against its threshold, drift against the previous run, and the text table the CLI prints.

A result (one per metric spec, in the spec's order)::

    {"key": "demographic_parity", "type": "demographic_parity", "options": {...}, "direction": "max",
     "threshold": 0.1, "value": 0.12, "ci": [0.07, 0.18], "passed": false,
     "by_group": {"selection_rate": {"F": {"value": 0.2, "ci": [0.15, 0.26]}, ...}},
     "drift": {"previous": 0.1, "delta": 0.02}}        # null without a previous value
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .metrics import N_BOOT, SEED, MetricSpec, Scored, bootstrap, passes, resamples


def evaluate(specs: list[MetricSpec], scored: Scored, previous: list[dict[str, Any]] | None = None,
             n_boot: int = N_BOOT, seed: int = SEED) -> dict[str, Any]:
    """``{"results": [...], "breached": [keys], "passed": bool | None, "group_sizes": {group: n}}``."""
    rows = resamples(len(scored.y), n_boot, seed)
    before = {r["key"]: r.get("value") for r in previous or []}
    results = []
    for spec in specs:
        metric = spec.metric
        out = bootstrap(spec, scored, rows)
        prev = before.get(spec.key)
        results.append({
            "key": spec.key, "type": spec.type, "options": spec.options.model_dump(mode="json"),
            "direction": metric.direction, "threshold": spec.threshold, **out,
            "passed": passes(metric.direction, out["value"], spec.threshold),
            "drift": None if prev is None or out["value"] is None else {"previous": prev,
                                                                          "delta": out["value"] - prev},
        })
    breached = [r["key"] for r in results if r["passed"] is False]
    checked = [r for r in results if r["passed"] is not None]
    counts = np.bincount(scored.group, minlength=scored.n_groups)
    return {"results": results, "breached": breached, "passed": (not breached) if checked else None,
            "group_sizes": {g: int(c) for g, c in zip(scored.group_names, counts)}}


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _ci(ci: list[float] | None) -> str:
    return "—" if ci is None else f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def format_table(report: dict[str, Any]) -> str:
    """The report as a fixed-width text table: one line per metric, then its per-group statistics."""
    head = ("metric", "value", "95% CI", "threshold", "result", "drift")
    lines: list[tuple[str, ...]] = [head]
    for r in report["results"]:
        bound = "—" if r["threshold"] is None else ("≤ " if r["direction"] == "max" else "≥ ") + f"{r['threshold']:g}"
        verdict = {True: "pass", False: "BREACH", None: "—"}[r["passed"]]
        drift = "—" if r["drift"] is None else f"{r['drift']['delta']:+.4f}"
        lines.append((r["key"], _fmt(r["value"]), _ci(r["ci"]), bound, verdict, drift))
        for stat, groups in r["by_group"].items():
            for group, v in groups.items():
                lines.append((f"  {stat} · {group}", _fmt(v["value"]), _ci(v["ci"]), "", "", ""))
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    sizes = ", ".join(f"{g}: {n}" for g, n in report["group_sizes"].items())
    text.append("")
    text.append(f"rows: {report.get('n_rows', sum(report['group_sizes'].values()))}  groups: {sizes}")
    text.append("BREACHED: " + ", ".join(report["breached"]) if report["breached"] else "all thresholds hold")
    return "\n".join(text)

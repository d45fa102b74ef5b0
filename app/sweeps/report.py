"""Sweep export: a self-contained HTML report (plotly.js inlined), a CSV of jobs, or JSON."""

from __future__ import annotations

import csv
import html
import io
import json
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from app.render.charts import sweeps as sweep_charts
from app.render.charts.labels import figure_json
from app.render.static_assets import plotly_js
from app import __version__
from app.models import Dataset, Job, Sweep

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
CSV_METRICS = ("accuracy", "balanced_accuracy", "roc_auc", "demographic_parity", "equalized_odds",
               "equal_opportunity", "loss_gap")


@lru_cache
def code_version() -> str:
    """The git commit of the running code when available, else the package version."""
    root = Path(__file__).resolve().parents[2]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__


def safe_cell(value: Any) -> Any:
    """Neutralise spreadsheet formulas: a text cell starting with = + - @ gets a leading quote."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def job_rows(jobs: list[Job]) -> list[dict[str, Any]]:
    rows = []
    for j in jobs:
        p, test = j.sweep_point or {}, (j.metrics or {}).get("test") or {}
        rows.append({"job_id": j.id, "status": j.status, "solver": p.get("solver"),
                     "params": json.dumps(p.get("params") or {}, sort_keys=True), "tolerance": p.get("tolerance"),
                     "seed": p.get("seed"), "device": j.device, "iterations": (j.result or {}).get("iterations"),
                     "solver_time_s": (j.result or {}).get("solver_time_s"), "error": j.error,
                     **{f"test_{m}": test.get(m) for m in CSV_METRICS}})
    return rows


def render(fmt: str, sweep: Sweep, dataset: Dataset, jobs: list[Job], summary: dict,
           axes: tuple[str, str]) -> tuple[str, str]:
    if fmt == "json":
        return json.dumps({"sweep": {"id": sweep.id, "spec": sweep.spec, "created_at": sweep.created_at.isoformat()},
                           "dataset": {"id": dataset.id, "name": dataset.name, "sha256": dataset.sha256},
                           "code_version": code_version(), **summary, "jobs": job_rows(jobs)}, default=str), \
            "application/json"
    if fmt == "csv":
        buf = io.StringIO()
        rows = job_rows(jobs)
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["job_id"])
        writer.writeheader()
        writer.writerows({k: safe_cell(v) for k, v in row.items()} for row in rows)
        return buf.getvalue(), "text/csv"
    return _html(sweep, dataset, jobs, summary, axes), "text/html"


def _html(sweep: Sweep, dataset: Dataset, jobs: list[Job], summary: dict, axes: tuple[str, str]) -> str:
    x, y = axes
    figures = []
    for build in (lambda: sweep_charts.pareto(summary, x, y), lambda: sweep_charts.radar(summary)):
        try:
            figures.append(figure_json(build()))
        except sweep_charts.NoData:
            pass
    rows = "".join(
        f"<tr><td>{html.escape(str(p['solver']))}</td><td>{html.escape(json.dumps(p['params']))}</td>"
        f"<td>{p['tolerance']}</td><td>{p['succeeded']}/{len(p['job_ids'])}</td>"
        + "".join(f"<td>{_fmt(((p['metrics'].get('test') or {}).get(m) or {}))}</td>" for m in (x, y))
        + f"<td>{_fmt(p['solver_time_s'])}</td><td>{_fmt(p['iterations'])}</td></tr>"
        for p in summary["points"])
    failures = "".join(f"<li><code>{f['job_id']}</code> {html.escape(json.dumps(f['point']))}: "
                       f"{html.escape(str(f['error']))}</li>" for f in summary["failures"]) or "<li>none</li>"
    devices = sorted({j.device for j in jobs if j.device})
    divs = "".join(f'<div id="fig{i}" class="fig"></div>' for i in range(len(figures)))
    plots = "".join(f"Plotly.newPlot('fig{i}', ({f}).data, ({f}).layout);" for i, f in enumerate(figures))
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>FairSolve sweep {sweep.id}</title>
<style>body{{font-family:system-ui,sans-serif;margin:1.5rem}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.25rem .5rem;font-size:.9rem}}.fig{{min-height:480px}}</style>
<script>{plotly_js()}</script></head><body>
<h1>Sweep {sweep.id}</h1>
<p>Status <b>{summary['status']}</b> — {html.escape(json.dumps(summary['progress']))}.
Dataset <b>{html.escape(dataset.name)}</b> (sha256 <code>{dataset.sha256}</code>, {dataset.n_rows} rows).
Code version <code>{code_version()}</code>. Devices: {', '.join(devices) or 'n/a'}.</p>
{divs}
<h2>Per solver and tolerance (test; mean [95% CI] over seeds)</h2>
<table><tr><th>solver</th><th>params</th><th>tolerance</th><th>succeeded</th><th>{html.escape(x)}</th>
<th>{html.escape(y)}</th><th>solver time (s)</th><th>iterations</th></tr>{rows}</table>
<h2>Failed jobs</h2><ul>{failures}</ul>
<h2>Spec</h2><pre>{html.escape(json.dumps(sweep.spec, indent=2))}</pre>
<script>{plots}</script></body></html>"""


def _fmt(stat: dict) -> str:
    if not stat or stat.get("mean") is None:
        return "—"
    if stat.get("ci_low") is None:  # too few seeds: the mean alone, and why
        return f"{stat['mean']:.4g} ({html.escape(stat.get('ci_note') or 'no interval')})"
    return f"{stat['mean']:.4g} [{stat['ci_low']:.4g}, {stat['ci_high']:.4g}]"

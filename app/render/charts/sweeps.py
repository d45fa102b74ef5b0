"""Sweep charts: Pareto front, trajectories overlaid, radar of fairness criteria, a metric per group."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import plotly.graph_objects as go
from sqlalchemy.orm import Session

from app.models import Job
from app.sweeps.summary import direction

RADAR_DEFAULT = ["independence", "separation", "sufficiency", "inaccuracy"]
RADAR_FALLBACK = ["demographic_parity", "equalized_odds", "equal_opportunity", "loss_gap"]
TRAJECTORY_POINTS = 300


class NoData(LookupError):
    """Nothing to draw yet; the message says why."""


def _stat(point: dict, split: str, metric: str) -> dict:
    return (point["metrics"].get(split) or {}).get(metric) or {}


def _label(point: dict) -> str:
    params = ", ".join(f"{k}={v}" for k, v in sorted(point["params"].items()))
    return point["solver"] + (f" ({params})" if params else "")


def pareto(summary: dict, x: str, y: str, split: str = "test") -> go.Figure:
    """One curve per solver over its tolerances, error bars = 95% CI over seeds; click data = job ids."""
    done = [p for p in summary["points"] if p["succeeded"]
            and all(_stat(p, split, axis).get("mean") is not None for axis in (x, y))]
    if not done:
        raise NoData(f"no succeeded job has {split} metrics {x!r} and {y!r} yet")
    fig = go.Figure()
    curves: dict[str, list[dict]] = defaultdict(list)
    for p in done:
        curves[_label(p)].append(p)
    for label, pts in curves.items():
        pts.sort(key=lambda p: -1.0 if p["tolerance"] is None else p["tolerance"])
        xs = [_stat(p, split, x) for p in pts]
        ys = [_stat(p, split, y) for p in pts]
        unconstrained = pts[0]["solver"] == "erm"
        fig.add_trace(go.Scatter(
            x=[s["mean"] for s in xs], y=[s["mean"] for s in ys], name="unconstrained (erm)" if unconstrained else label,
            mode="markers" if unconstrained else "lines+markers",
            marker={"symbol": "star", "size": 14} if unconstrained else {"size": 8},
            error_x=_error_bars(xs), error_y=_error_bars(ys),
            customdata=[[p["job_ids"][0], p["tolerance"]] for p in pts],
            hovertemplate="tolerance %{customdata[1]}<br>x %{x:.4f}<br>y %{y:.4f}<br>job %{customdata[0]}"))
    fig.update_layout(title=f"Pareto front ({split}): {y} ({direction(y)}) vs {x} ({direction(x)})",
                      xaxis_title=x, yaxis_title=y, template="plotly_white")
    return fig


def trajectories(db: Session, jobs: list[Job], solver: str | None = None, tolerance: float | None = None) -> go.Figure:
    """Objective and max violation per iteration of one solver's runs, or of all solvers at one tolerance."""
    from plotly.subplots import make_subplots

    from app.jobs.trajectory import read_trajectory

    chosen = [j for j in jobs if (solver is None or (j.sweep_point or {}).get("solver") == solver)
              and (tolerance is None or (j.sweep_point or {}).get("tolerance") == tolerance)]
    if solver is None and tolerance is None and jobs:
        first = jobs[0].sweep_point or {}
        chosen = [j for j in jobs if (j.sweep_point or {}).get("solver") == first.get("solver")]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_titles=["objective", "max violation"])
    drawn = 0
    for job in chosen:
        points = read_trajectory(db, job, TRAJECTORY_POINTS)["points"]
        if not points:
            continue
        p = job.sweep_point or {}
        name = f"{p.get('solver')} tol={p.get('tolerance')} seed={p.get('seed')}"
        it = [q["iteration"] for q in points]
        fig.add_trace(go.Scatter(x=it, y=[q["objective"] for q in points], name=name, legendgroup=job.id,
                                 mode="lines", customdata=[job.id] * len(it)), row=1, col=1)
        fig.add_trace(go.Scatter(x=it, y=[q["max_violation"] for q in points], name=name, legendgroup=job.id,
                                 mode="lines", showlegend=False, customdata=[job.id] * len(it)), row=2, col=1)
        drawn += 1
    if not drawn:
        raise NoData("no job of this selection has a trajectory yet")
    fig.update_xaxes(title_text="iteration", row=2, col=1)
    fig.update_layout(title="Trajectories", template="plotly_white", height=700)
    return fig


def radar(summary: dict, metrics: list[str] | None = None, split: str = "test") -> go.Figure:
    """Each solver at its tightest tolerance: fairness criteria and inaccuracy, smaller is better."""
    done = [p for p in summary["points"] if p["succeeded"]]
    if not done:
        raise NoData("no succeeded job yet")
    available = set().union(*((p["metrics"].get(split) or {}).keys() for p in done))
    if metrics is None:
        metrics = RADAR_DEFAULT if set(RADAR_DEFAULT) <= available else \
            [m for m in RADAR_FALLBACK if m in available] + ["inaccuracy"]
    best: dict[str, dict] = {}
    for p in done:  # the tightest tolerance of each solver (erm: its only point)
        key = _label(p)
        tol = -1.0 if p["tolerance"] is None else p["tolerance"]
        if key not in best or tol < (-1.0 if best[key]["tolerance"] is None else best[key]["tolerance"]):
            best[key] = p

    def value(p, m):
        if m == "inaccuracy" and "inaccuracy" not in (p["metrics"].get(split) or {}):
            acc = _stat(p, split, "accuracy").get("mean")
            return None if acc is None else 1.0 - acc
        return _stat(p, split, m).get("mean")

    fig = go.Figure()
    for label, p in best.items():
        r = [value(p, m) for m in metrics]
        fig.add_trace(go.Scatterpolar(r=r + r[:1], theta=metrics + metrics[:1], name=label, fill="toself",
                                      opacity=0.6))
    fig.update_layout(title=f"Fairness criteria per solver ({split}; smaller is better)", template="plotly_white")
    return fig


def groups(jobs: list[Job], metric: str, tolerance: float | None = None, split: str = "test") -> go.Figure:
    """``<metric>_by_group`` per group per solver (mean over seeds), at one tolerance (default: the tightest)."""
    key = f"{metric}_by_group"
    done = [j for j in jobs if j.status == "succeeded" and key in ((j.metrics or {}).get(split) or {})]
    if not done:
        raise NoData(f"no succeeded job reports {key!r}")
    tols = sorted({(j.sweep_point or {}).get("tolerance") for j in done} - {None})
    if tolerance is None and tols:
        tolerance = tols[0]
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for j in done:
        p = j.sweep_point or {}
        if p.get("tolerance") not in (tolerance, None):
            continue
        for group, v in j.metrics[split][key].items():
            v = v.get("tpr") if isinstance(v, dict) else v
            if isinstance(v, (int, float)):
                values[p.get("solver")][group].append(float(v))
    fig = go.Figure()
    for solver, per_group in values.items():
        names = sorted(per_group)
        fig.add_trace(go.Bar(x=names, y=[float(np.mean(per_group[g])) for g in names], name=solver))
    fig.update_layout(title=f"{key} ({split}) at tolerance {tolerance}", barmode="group", template="plotly_white",
                      yaxis_title=metric)
    return fig


def _error_bars(stats: list[dict]) -> dict:
    """Asymmetric error bars from each mean's interval (cut to the metric's range); none where there is no
    interval (too few seeds)."""
    def side(s: dict, end: str) -> float | None:
        return None if s.get(end) is None or s.get("mean") is None else abs(s[end] - s["mean"])

    return {"type": "data", "symmetric": False, "array": [side(s, "ci_high") for s in stats],
            "arrayminus": [side(s, "ci_low") for s in stats]}

"""``charts/trajectory``: objective, constraint gaps and max violation against iteration and seconds."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.registry import ChartContext, chart


@chart("trajectory")
def trajectory_chart(ctx: ChartContext) -> go.Figure:
    traj = ctx.trajectory()
    return trajectory_figure(traj, f"Trajectory — job {ctx.job.id[:8]} ({ctx.job.spec['solver']['name']})")


def trajectory_figure(traj: dict[str, Any], title: str) -> go.Figure:
    """Objective, each constraint's surrogate gap (G_j + tolerance_j, tolerance drawn) and the max
    violation max(0, max_j G_j), against iteration (left) and against seconds (right)."""
    points = traj["points"]
    tols = traj["tolerances"]
    n_constraints = len(points[0]["constraints"]) if points else 0
    names = traj["constraint_names"] or [f"constraint {j}" for j in range(n_constraints)]
    it = [p["iteration"] for p in points]
    secs = [p["elapsed_s"] for p in points]
    fig = make_subplots(rows=3, cols=2, shared_xaxes="columns", vertical_spacing=0.06,
                        row_titles=["objective", "constraint gap", "max violation"])
    for col, x in ((1, it), (2, secs)):
        show = col == 1
        fig.add_trace(go.Scatter(x=x, y=[p["objective"] for p in points], name="objective", mode="lines",
                                 line={"color": "#1f77b4"}, showlegend=show, legendgroup="objective"), row=1, col=col)
        for j, name in enumerate(names):
            tol = tols[j] if j < len(tols) else 0.0
            gap = [p["constraints"][j] + tol for p in points]
            fig.add_trace(go.Scatter(x=x, y=gap, name=name, mode="lines", showlegend=show, legendgroup=name),
                          row=2, col=col)
            if tols:
                fig.add_hline(y=tol, line={"dash": "dash", "color": "#d62728"}, row=2, col=col,
                              annotation_text=f"tolerance {tol:g}" if show else None)
        fig.add_trace(go.Scatter(x=x, y=[p["max_violation"] for p in points], name="max violation",
                                 mode="lines", line={"color": "#d62728"}, showlegend=show,
                                 legendgroup="violation"), row=3, col=col)
        fig.add_hline(y=0.0, line={"dash": "dot", "color": "#7f7f7f"}, row=3, col=col)
    fig.update_xaxes(title_text="iteration", row=3, col=1)
    fig.update_xaxes(title_text="seconds", row=3, col=2)
    fig.update_layout(title=title, height=800, template="plotly_white")
    return fig

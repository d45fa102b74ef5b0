"""Plotly figure builders. Each returns a ``plotly.graph_objects.Figure``; routers serialise it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

SCORE_BINS = 40


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


def scores_figure(predictions: pd.DataFrame, title: str, threshold: float = 0.5) -> go.Figure:
    """Predicted-score distribution per group on the test split (probability density histograms)."""
    fig = go.Figure()
    edges = np.linspace(0.0, 1.0, SCORE_BINS + 1)
    for group, frame in predictions.groupby("group", sort=True):
        counts, _ = np.histogram(frame["score"].to_numpy(), bins=edges)
        density = counts / max(len(frame), 1) / np.diff(edges)
        fig.add_trace(go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=density, width=np.diff(edges), opacity=0.55,
                             name=f"{group} (n={len(frame)})", customdata=counts,
                             hovertemplate="score %{x:.3f}<br>density %{y:.3f}<br>count %{customdata}"))
    fig.add_vline(x=threshold, line={"dash": "dash", "color": "#333"}, annotation_text="threshold")
    fig.update_layout(title=title, barmode="overlay", xaxis_title="predicted score P(y=1)",
                      yaxis_title="density", template="plotly_white")
    return fig

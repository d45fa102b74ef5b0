"""``charts/scores``: predicted-score distribution per group on the test split."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.render.charts.group_list import group_list, overlapping
from app.render.charts.registry import ChartContext, chart

SCORE_BINS = 40


@chart("scores")
def scores_chart(ctx: ChartContext) -> go.Figure:
    if overlapping(ctx):  # no single group per row: the group list
        return group_list(ctx)
    fig = scores_figure(ctx.predictions(), f"Test scores per group — job {ctx.job.id[:8]}")
    from app.render.charts.partial import job_interval, shade_interval

    interval = job_interval(ctx)  # partial-fairness jobs: KDE per group, the interval's region shaded
    return fig if interval is None else shade_interval(fig, ctx.predictions(), interval)


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

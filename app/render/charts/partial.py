"""Charts of partial fairness on percentile intervals (He, Huang, Yao & Lin, Figures 2–8).

* ``charts/ccdf``: group-vs-group CCDF curves (F̄_ref(θ), F̄_k(θ)) as θ runs from +∞ to −∞
  (test split), the interval I marked on both axes, and the 45° line (a curve on the diagonal
  inside I is pSP-fair there).
* :func:`shade_interval`: adds each group's KDE score density to the ``scores`` chart with the mass
  inside the group's own percentile interval shaded (Figures 3–8).

The interval is the one the job used: the resolved one reported in ``metrics.test``
(``<type>_report.interval``, so ``"auto"`` shows the chosen interval), else the spec's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.render.charts.group_list import group_list, overlapping
from app.render.charts.registry import ChartContext, ChartUnavailable, chart

PARTIAL_TYPES = ("partial_statistical_parity", "partial_demographic_parity", "psp", "pdp", "partial_sp", "partial_dp")


def job_interval(ctx: ChartContext) -> dict[str, list[list[float]]] | None:
    """{group: [[α, β], ...]} of the job's first partial constraint, or None."""
    metrics = (ctx.job.metrics or {}).get("test") or {}
    for key, value in metrics.items():
        if key.endswith("_report") and isinstance(value, dict) and "interval" in value:
            return value["interval"]
    for c in (ctx.job.spec or {}).get("constraints") or []:
        if c.get("type") in PARTIAL_TYPES and c.get("interval") not in (None, "auto"):
            return {"*": _pieces(c["interval"])} if not isinstance(c["interval"], dict) else \
                {k: _pieces(v) for k, v in c["interval"].items()}
    return None


def _pieces(v: Any) -> list[list[float]]:
    return [list(map(float, v))] if all(isinstance(x, (int, float)) for x in v) else [list(map(float, p)) for p in v]


def _for_group(interval: dict, group: str) -> list[list[float]]:
    return interval.get(group) or interval.get("*") or next(iter(interval.values()))


def _ccdf(scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    s = np.sort(scores)
    return (len(s) - np.searchsorted(s, thresholds, side="right")) / max(len(s), 1)


def ccdf_figure(predictions: pd.DataFrame, interval: dict | None, title: str) -> go.Figure:
    groups = sorted(predictions["group"].unique())
    if len(groups) < 2:
        raise ChartUnavailable("the CCDF chart needs at least two groups")
    thresholds = np.r_[np.inf, np.sort(predictions["score"].unique())[::-1], -np.inf]
    ref = groups[0]
    x = _ccdf(predictions.loc[predictions["group"] == ref, "score"].to_numpy(), thresholds)
    fig = go.Figure()
    for g in groups[1:]:
        y = _ccdf(predictions.loc[predictions["group"] == g, "score"].to_numpy(), thresholds)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=f"{g} vs {ref}", line={"shape": "hv"}))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="45° line", line={"dash": "dot", "color": "#888"}))
    if interval is not None:
        for axis, group in (("x", ref), ("y", groups[1])):
            for a, b in _for_group(interval, group):
                for v in (a, b):
                    if axis == "x":
                        fig.add_vline(x=v, line={"color": "red", "dash": "dash"}, annotation_text=f"{v:.0%}")
                    else:
                        fig.add_hline(y=v, line={"color": "red", "dash": "dash"}, annotation_text=f"{v:.0%}")
    fig.update_layout(title=title, template="plotly_white",
                      xaxis={"title": f"F̄_{ref}(θ) = Pr(score > θ | {ref})", "range": [0, 1]},
                      yaxis={"title": "F̄_k(θ) = Pr(score > θ | k)", "range": [0, 1], "scaleanchor": "x"})
    return fig


@chart("ccdf")
def ccdf_chart(ctx: ChartContext) -> go.Figure:
    if overlapping(ctx):  # no single group per row: the group list
        return group_list(ctx)
    return ccdf_figure(ctx.predictions(), job_interval(ctx), f"Group CCDFs (test) — job {ctx.job.id[:8]}")


def shade_interval(fig: go.Figure, predictions: pd.DataFrame, interval: dict, points: int = 256) -> go.Figure:
    """Add each group's Gaussian-KDE density of the test scores, with the region whose within-group
    top-down percentile lies in the group's interval shaded."""
    from scipy.stats import gaussian_kde

    grid = np.linspace(0.0, 1.0, points)
    for g, frame in predictions.groupby("group", sort=True):
        s = frame["score"].to_numpy(dtype=float)
        if len(s) < 2 or np.ptp(s) == 0:
            continue
        density = gaussian_kde(s)(grid)
        fig.add_trace(go.Scatter(x=grid, y=density, mode="lines", name=f"{g} KDE"))
        for a, b in _for_group(interval, str(g)):
            hi, lo = np.quantile(s, 1 - a), np.quantile(s, 1 - b)   # top-down percentile a ↔ quantile 1 − a
            inside = (grid >= lo) & (grid <= hi)
            fig.add_trace(go.Scatter(x=grid[inside], y=density[inside], fill="tozeroy", mode="none", opacity=0.3,
                                     name=f"{g}: percentiles [{a:.0%}, {b:.0%})",
                                     fillcolor="rgba(220,0,0,0.25)"))
    return fig

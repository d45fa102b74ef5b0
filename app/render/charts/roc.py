"""``charts/roc``: per-group ROC curves on the test split and, for an ``auc_parity`` constraint of
variant ``inter`` (xAUC, Yao, Lin & Yang 2023 Ex. 2), the two cross-group ROC curves
(positives of one group ranked against negatives of the other). Each curve's exact AUC (ties ½,
:mod:`solvers.auc.metrics`) is in its legend entry."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.render.charts.group_list import group_list, overlapping
from app.render.charts.registry import ChartContext, ChartUnavailable, chart
from solvers.auc.metrics import auc_between


def roc_points(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(FPR, TPR) of ranking positive scores ``pos`` above negative scores ``neg`` at every threshold
    (ties step diagonally); one sort, vectorised."""
    scores = np.concatenate([pos, neg])
    is_pos = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))])
    order = np.argsort(-scores, kind="stable")
    s, p = scores[order], is_pos[order]
    last = np.r_[np.flatnonzero(np.diff(s) != 0), len(s) - 1]          # end of each block of tied scores
    tp, fp = np.cumsum(p)[last], np.cumsum(1 - p)[last]
    return np.r_[0.0, fp / max(len(neg), 1)], np.r_[0.0, tp / max(len(pos), 1)]


def _auc_constraint(spec: dict) -> dict | None:
    for c in (spec or {}).get("constraints", []) or []:
        if c.get("type") in ("auc_parity", "auc_fairness"):
            return c
    return None


def roc_figure(predictions: pd.DataFrame, title: str, variant: str | None = None,
               protected: str | None = None) -> go.Figure:
    fig = go.Figure()
    score, label = predictions["score"].to_numpy(float), predictions["label"].to_numpy() > 0
    groups = sorted(predictions["group"].unique())
    for g in groups:
        in_g = (predictions["group"] == g).to_numpy()
        pos, neg = in_g & label, in_g & ~label
        if not pos.any() or not neg.any():
            continue
        fpr, tpr = roc_points(score[pos], score[neg])
        value = auc_between(score, pos, neg)
        fig.add_trace(go.Scatter(x=fpr, y=tpr, mode="lines", name=f"{g}: AUC {value:.3f}",
                                 hovertemplate="FPR %{x:.3f}<br>TPR %{y:.3f}"))
    if variant == "inter" and len(groups) >= 2:
        a = protected if protected in groups else groups[0]
        in_a = (predictions["group"] == a).to_numpy()
        for first, second, name in ((in_a, ~in_a, f"{a}+ vs rest−"), (~in_a, in_a, f"rest+ vs {a}−")):
            pos, neg = first & label, second & ~label
            if pos.any() and neg.any():
                fpr, tpr = roc_points(score[pos], score[neg])
                value = auc_between(score, pos, neg)
                fig.add_trace(go.Scatter(x=fpr, y=tpr, mode="lines", line={"dash": "dot"},
                                         name=f"xAUC {name}: {value:.3f}",
                                         hovertemplate="FPR %{x:.3f}<br>TPR %{y:.3f}"))
    if not fig.data:
        raise ChartUnavailable("no group has both positive and negative test rows")
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line={"dash": "dash", "color": "#999"},
                             name="chance", hoverinfo="skip"))
    fig.update_layout(title=title, xaxis_title="false positive rate", yaxis_title="true positive rate",
                      template="plotly_white", xaxis={"range": [0, 1]}, yaxis={"range": [0, 1]})
    return fig


@chart("roc")
def roc_chart(ctx: ChartContext) -> go.Figure:
    if overlapping(ctx):  # no single group per row: the group list
        return group_list(ctx)
    constraint = _auc_constraint(ctx.job.spec)
    variant = constraint.get("variant", "group") if constraint else None
    protected = constraint.get("protected") if constraint else None
    return roc_figure(ctx.predictions(), f"Test ROC per group — job {ctx.job.id[:8]}", variant, protected)

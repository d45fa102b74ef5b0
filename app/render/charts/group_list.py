"""The per-group charts (``scores``, ``roc``, ``ccdf``) of a job whose groups overlap.

A row there is in several groups (``overlapping_groups`` in the spec), so the stored test predictions carry no
single group to split the curves by (their ``group`` column is one label for every row). Those charts show the
group list instead: every group with its test rows, positive-prediction rate and true-positive rate, from the
job's test metrics (``group_sizes``, ``demographic_parity_by_group``, ``equal_opportunity_by_group``), largest
group first.
"""

from __future__ import annotations

import plotly.graph_objects as go

from app.render.charts.registry import ChartContext, ChartUnavailable


def overlapping(ctx: ChartContext) -> bool:
    """Whether the job's groups overlap."""
    return bool((ctx.job.spec or {}).get("overlapping_groups"))


def _shown(value) -> str:
    return "" if value is None else f"{float(value):.4f}"


def group_list_figure(metrics: dict, title: str) -> go.Figure:
    """A table of the groups (module docstring) from one split's metrics."""
    sizes = metrics.get("group_sizes") or {}
    if not sizes:
        raise ChartUnavailable("the job has no test metrics yet")
    rates = metrics.get("demographic_parity_by_group") or {}
    tpr = metrics.get("equal_opportunity_by_group") or {}
    names = sorted(sizes, key=lambda g: (-sizes[g], g))
    fig = go.Figure(go.Table(
        header={"values": ["group", "test rows", "positive rate", "TPR"], "align": "left"},
        cells={"values": [names, [sizes[g] for g in names], [_shown(rates.get(g)) for g in names],
                          [_shown(tpr.get(g)) for g in names]], "align": "left"}))
    fig.update_layout(title=title, template="plotly_white")
    return fig


def group_list(ctx: ChartContext) -> go.Figure:
    """The job's group list on the test split."""
    metrics = (ctx.job.metrics or {}).get("test") or {}
    return group_list_figure(metrics, f"{len(metrics.get('group_sizes') or {})} overlapping groups (test) — "
                                      f"job {ctx.job.id[:8]}")

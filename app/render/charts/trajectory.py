"""``charts/trajectory``: objective, constraint gaps and max violation against iteration and seconds."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from app.render.charts.registry import ChartContext, chart


@chart("trajectory")
def trajectory_chart(ctx: ChartContext) -> go.Figure:
    traj = ctx.trajectory()
    traj["final"] = (ctx.job.result or {}).get("fairness") or []
    return trajectory_figure(traj, f"Trajectory — job {ctx.job.id[:8]} ({ctx.job.spec['solver']['name']})")


def trajectory_figure(traj: dict[str, Any], title: str) -> go.Figure:
    """Objective, each constraint's surrogate gap (G_j + tolerance_j, tolerance drawn) and the max
    violation max(0, max_j G_j), against iteration (left) and against seconds (right).

    Beside each surrogate, the constraint's exact metric (indicator-based, what the user's tolerance is
    about) on the train and validation splits at the traced iterations, labelled "exact (train)" and
    "exact (validation)": a surrogate under its tolerance line with the exact metric above it is not met.
    ``traj["final"]`` (the job's fairness report, when it has one) adds the returned model's exact values as
    markers at the last iteration: after exact enforcement (a threshold correction) they differ from the
    last iterate's."""
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
            fig.add_trace(go.Scatter(x=x, y=gap, name=f"{name} surrogate", mode="lines", showlegend=show,
                                     legendgroup=name), row=2, col=col)
            if tols:
                label = {"annotation_text": f"tolerance {tol:g}"} if show else {}  # None would read "new text"
                fig.add_hline(y=tol, line={"dash": "dash", "color": "#d62728"}, row=2, col=col, **label)
        add_exact_traces(fig, traj, col, "iteration" if col == 1 else "elapsed_s")
        if points:
            add_final_markers(fig, traj.get("final") or [], col, x[-1])
        fig.add_trace(go.Scatter(x=x, y=[p["max_violation"] for p in points], name="max violation",
                                 mode="lines", line={"color": "#d62728"}, showlegend=show,
                                 legendgroup="violation"), row=3, col=col)
        fig.add_hline(y=0.0, line={"dash": "dot", "color": "#7f7f7f"}, row=3, col=col)
    fig.update_xaxes(title_text="iteration", row=3, col=1)
    fig.update_xaxes(title_text="seconds", row=3, col=2)
    one_colour_per_series(fig)
    # the legend (a dozen entries with exact traces) below the panels, not beside them: the panels keep the width
    fig.update_layout(title=title, height=900, template="plotly_white", margin={"b": 40},
                      legend={"orientation": "h", "x": 0, "xanchor": "left", "y": -0.07, "yanchor": "top"})
    return fig


PALETTE = tuple(c.lower() for c in (*qualitative.Plotly, *qualitative.D3[1::2]))


def one_colour_per_series(fig: go.Figure) -> None:
    """Give each series (a legend group, drawn once per column with the legend entry on the left) one colour in
    both columns: its explicit colour, else the next palette colour no series has. Left to plotly, each trace took
    the next colour of the colorway, so the right column's series did not match the legend."""
    colours: dict[str, str] = {}
    for trace in fig.data:
        key = trace.legendgroup or trace.name
        explicit = (trace.line.color if "lines" in (trace.mode or "lines") else None) or trace.marker.color
        if explicit and key not in colours:
            colours[key] = explicit
    free = iter(c for c in PALETTE if c not in set(colours.values()))
    for trace in fig.data:
        key = trace.legendgroup or trace.name
        if key not in colours:
            colours[key] = next(free, PALETTE[len(colours) % len(PALETTE)])
        if "lines" in (trace.mode or "lines"):
            trace.line.color = colours[key]
        trace.marker.color = colours[key]


EXACT_STYLE = {"train": {"dash": "dot"}, "validation": {"dash": "dashdot"}}


def add_exact_traces(fig: go.Figure, traj: dict[str, Any], col: int, x_key: str) -> None:
    """One trace per constraint family and split ("<type> exact (train)", "<type> exact (validation)") in the
    constraint row, from the trajectory's ``exact`` points (undefined values are gaps in the line)."""
    exact = traj.get("exact") or []
    for j, name in enumerate(traj.get("exact_names") or []):
        for split, line in EXACT_STYLE.items():
            ys = [values[j] if j < len(values) else None for values in (p.get(split) or [] for p in exact)]
            if all(v is None for v in ys):
                continue
            fig.add_trace(go.Scatter(x=[p[x_key] for p in exact], y=ys, name=f"{name} exact ({split})",
                                     mode="lines+markers", line=line, marker={"size": 4}, showlegend=col == 1,
                                     legendgroup=f"{name} exact ({split})"), row=2, col=col)


FINAL_SYMBOL = {"train": "diamond", "validation": "star"}


def add_final_markers(fig: go.Figure, report: list[dict[str, Any]], col: int, x: float) -> None:
    """The returned model's exact value per constraint and split ("<type> final model (train)"), at ``x``."""
    for entry in report:
        for split, symbol in FINAL_SYMBOL.items():
            value = (entry.get(split) or {}).get("value")
            if value is None:
                continue
            name = f"{entry.get('type')} final model ({split})"
            fig.add_trace(go.Scatter(x=[x], y=[value], name=name, mode="markers", legendgroup=name,
                                     marker={"symbol": symbol, "size": 10}, showlegend=col == 1), row=2, col=col)

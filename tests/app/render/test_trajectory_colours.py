"""The trajectory figure (issue 30, item 12): each series has one colour in both columns, the legend's, and the
legend sits below the panels."""
from __future__ import annotations

from collections import defaultdict

from app.render.charts.trajectory import trajectory_figure


def _traj() -> dict:
    points = [{"iteration": i, "elapsed_s": 0.1 * i, "samples_seen": 10 * i, "objective": 1.0 / i,
               "max_violation": 0.0, "constraints": [0.01 / i, -0.02, 0.003]} for i in range(1, 6)]
    exact = [{"iteration": i, "elapsed_s": 0.1 * i, "train": [0.03, 0.04], "validation": [0.05, 0.02]} for i in (1, 5)]
    return {"points": points, "tolerances": [0.05, 0.05, 0.1],
            "constraint_names": ["demographic_parity", "equal_opportunity", "loss_gap"],
            "exact_names": ["demographic_parity", "equal_opportunity"], "exact": exact,
            "final": [{"type": "demographic_parity", "train": {"value": 0.03}, "validation": {"value": 0.04}}]}


def colour(trace) -> str | None:
    return trace.line.color if "lines" in (trace.mode or "lines") else trace.marker.color


def test_every_series_has_one_colour_in_both_columns_and_series_differ():
    fig = trajectory_figure(_traj(), "t")
    by_series = defaultdict(set)
    for trace in fig.data:
        by_series[trace.legendgroup or trace.name].add(colour(trace))
    assert all(len(c) == 1 and None not in c for c in by_series.values()), dict(by_series)
    line_series = {k: next(iter(c)) for k, c in by_series.items() if "final model" not in k}
    assert len(set(line_series.values())) == len(line_series)  # no two series share a colour
    for trace in fig.data:  # the left column holds the legend entry; the right one draws the same colour
        assert trace.showlegend is not False or colour(trace) == next(iter(by_series[trace.legendgroup or trace.name]))


def test_the_legend_is_below_the_panels():
    legend = trajectory_figure(_traj(), "t").layout.legend
    assert legend.orientation == "h" and legend.y < 0

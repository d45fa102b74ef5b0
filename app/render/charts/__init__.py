"""Plotly chart builders, one module per chart kind (see :mod:`app.render.charts.registry`)."""

from app.render.charts import partial, roc, scores, trajectory  # noqa: F401  (register the chart kinds)
from app.render.charts.registry import CHARTS, ChartContext, ChartUnavailable, chart

__all__ = ["CHARTS", "ChartContext", "ChartUnavailable", "chart"]

"""Plotly chart builders, one module per chart kind (see :mod:`app.charts.registry`)."""

from app.charts import partial, roc, scores, trajectory  # noqa: F401  (register the chart kinds)
from app.charts.registry import CHARTS, ChartContext, ChartUnavailable, chart

__all__ = ["CHARTS", "ChartContext", "ChartUnavailable", "chart"]

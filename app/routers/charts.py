"""Charts of a job as Plotly figure JSON, or ``?format=html`` for a page that draws it.

The page is self-contained by default: plotly.js (about 4.6 MB) is inlined, like the sweep report, so a
saved chart renders when opened from disk with no server. ``&plotly=link`` gives the small page that loads
plotly.js from this server's ``/static`` instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import Response
from fastapi.templating import Jinja2Templates

from app.charts import CHARTS, ChartContext, ChartUnavailable
from app.charts.labels import figure_json
from app.deps import DB, CurrentCaller, get_or_404
from app.models import Job
from app.static_assets import plotly_js

router = APIRouter(prefix="/api/v1/jobs", tags=["charts"])
templates = Jinja2Templates(directory=Path(__file__).resolve().parent.parent / "templates")


PlotlyMode = Literal["inline", "link"]
PLOTLY_QUERY = Query("inline", description="With format=html: inline plotly.js (the page works from disk) or "
                                           "link to this server's copy.")


def figure_response(request: Request, fig_json: str, title: str, format: str, plotly: PlotlyMode = "inline") -> Response:
    if format == "html":
        return templates.TemplateResponse(request, "chart.html", {
            "title": title, "figure_json": fig_json.replace("</", "<\\/"),
            "plotly_inline": plotly_js() if plotly == "inline" else None,
            "plotly_src": request.url_for("static", path="plotly.min.js").path})
    return Response(content=fig_json, media_type="application/json")


@router.get("/{job_id}/charts/{kind}")
def job_chart(job_id: str, kind: str, request: Request, db: DB, caller: CurrentCaller,
              format: Literal["json", "html"] = Query("json"), plotly: PlotlyMode = PLOTLY_QUERY) -> Response:
    """Chart ``kind`` of a job (see the registry: trajectory, scores, ...)."""
    job = get_or_404(db, Job, job_id, "job", caller)
    builder = CHARTS.get(kind)
    if builder is None:
        raise HTTPException(status_code=404, detail=f"kind: unknown chart {kind!r}; known: {', '.join(sorted(CHARTS))}")
    try:
        fig = builder(ChartContext(db, job))
    except ChartUnavailable as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from exc
    return figure_response(request, figure_json(fig), f"{kind} — job {job_id}", format, plotly)

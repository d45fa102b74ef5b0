"""Charts of a job as Plotly figure JSON, or ``?format=html`` for a page using the locally served plotly.js."""

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

router = APIRouter(prefix="/api/v1/jobs", tags=["charts"])
templates = Jinja2Templates(directory=Path(__file__).resolve().parent.parent / "templates")


def figure_response(request: Request, fig_json: str, title: str, format: str) -> Response:
    if format == "html":
        return templates.TemplateResponse(request, "chart.html", {
            "title": title, "figure_json": fig_json.replace("</", "<\\/"),
            "plotly_src": request.url_for("static", path="plotly.min.js").path})
    return Response(content=fig_json, media_type="application/json")


@router.get("/{job_id}/charts/{kind}")
def job_chart(job_id: str, kind: str, request: Request, db: DB, caller: CurrentCaller,
              format: Literal["json", "html"] = Query("json")) -> Response:
    """Chart ``kind`` of a job (see the registry: trajectory, scores, ...)."""
    job = get_or_404(db, Job, job_id, "job", caller)
    builder = CHARTS.get(kind)
    if builder is None:
        raise HTTPException(status_code=404, detail=f"kind: unknown chart {kind!r}; known: {', '.join(sorted(CHARTS))}")
    try:
        fig = builder(ChartContext(db, job))
    except ChartUnavailable as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from exc
    return figure_response(request, figure_json(fig), f"{kind} — job {job_id}", format)

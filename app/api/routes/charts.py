"""Charts of a job as Plotly figure JSON, or ``?format=html`` for a page that draws it.

The page is self-contained by default: plotly.js (about 4.6 MB) is inlined, like the sweep report, so a
saved chart renders when opened from disk with no server. ``&plotly=link`` gives the small page that loads
plotly.js from this server's ``/static`` instead.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import Response
from sqlalchemy import func, select

from app.render.charts import CHARTS, ChartContext, ChartUnavailable
from app.render.charts.labels import figure_json
from app.api.common import PlotlyMode, figure_response
from app.api.deps import DB, CurrentCaller, get_or_404
from app.models import Job, TrajectoryPoint

router = APIRouter(prefix="/api/v1/jobs", tags=["charts"])
PLOTLY_QUERY = Query("inline", description="With format=html: inline plotly.js (the page works from disk) or "
                                           "link to this server's copy.")


CURSOR_HEADER = "X-Chart-Cursor"


def chart_cursor(db, job: Job) -> str:
    """What a job's charts are drawn from, in one cheap read: status, trajectory rows and last iteration (the
    trajectory grows, or is cut back to a checkpoint), so an unchanged cursor means an unchanged chart."""
    count, last = db.execute(select(func.count(), func.max(TrajectoryPoint.iteration))
                             .where(TrajectoryPoint.job_id == job.id)).one()
    return f"{job.status}.{count}.{last or 0}"


@router.get("/{job_id}/charts/{kind}")
def job_chart(job_id: str, kind: str, request: Request, db: DB, caller: CurrentCaller,
              format: Literal["json", "html"] = Query("json"), plotly: PlotlyMode = PLOTLY_QUERY,
              cursor: str | None = Query(None, max_length=64, description="The X-Chart-Cursor of the figure the caller "
                                         "holds: 204 (no body) while it is still current, so a page following a "
                                         "running job polls cheaply.")) -> Response:
    """Chart ``kind`` of a job (see the registry: trajectory, scores, ...); the ``X-Chart-Cursor`` header names the
    data it was drawn from."""
    job = get_or_404(db, Job, job_id, "job", caller)
    builder = CHARTS.get(kind)
    if builder is None:
        raise HTTPException(status_code=404, detail=f"kind: unknown chart {kind!r}; known: {', '.join(sorted(CHARTS))}")
    current = chart_cursor(db, job)
    if cursor is not None and cursor == current:
        return Response(status_code=204, headers={CURSOR_HEADER: current})
    try:
        fig = builder(ChartContext(db, job))
    except ChartUnavailable as exc:
        raise HTTPException(status_code=404, detail=str(exc), headers={CURSOR_HEADER: current}) from exc
    response = figure_response(request, figure_json(fig), f"{kind} — job {job_id}", format, plotly)
    response.headers[CURSOR_HEADER] = current
    return response

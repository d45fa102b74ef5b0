"""Charts of a job as Plotly figure JSON, or ``?format=html`` for a page using the locally served plotly.js."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import Response
from fastapi.templating import Jinja2Templates
from sqlalchemy import select

from app import charts
from app.artifacts import read_predictions
from app.deps import DB, get_or_404
from app.models import Artifact, Job
from app.routers.jobs import read_trajectory

router = APIRouter(prefix="/api/v1/jobs", tags=["charts"])
templates = Jinja2Templates(directory=Path(__file__).resolve().parent.parent / "templates")
TRAJECTORY_POINTS = 2000


def _figure(db, job: Job, kind: str):
    if kind == "trajectory":
        traj = read_trajectory(db, job, TRAJECTORY_POINTS)
        if not traj["points"]:
            raise HTTPException(status_code=404, detail=f"job {job.id!r} has no trajectory yet")
        return charts.trajectory_figure(traj, f"Trajectory — job {job.id[:8]} ({job.spec['solver']['name']})")
    if kind == "scores":
        art = db.scalar(select(Artifact).where(Artifact.job_id == job.id, Artifact.kind == "predictions"))
        if art is None:
            raise HTTPException(status_code=404, detail=f"job {job.id!r} has no predictions (status {job.status})")
        return charts.scores_figure(read_predictions(art), f"Test scores per group — job {job.id[:8]}")
    raise HTTPException(status_code=404, detail=f"kind: unknown chart {kind!r}; known: trajectory, scores")


@router.get("/{job_id}/charts/{kind}")
def job_chart(job_id: str, kind: str, request: Request, db: DB,
              format: Literal["json", "html"] = Query("json")) -> Response:
    job = get_or_404(db, Job, job_id, "job")
    fig_json = _figure(db, job, kind).to_json()
    if format == "html":
        return templates.TemplateResponse(request, "chart.html", {
            "title": f"{kind} — job {job_id}", "figure_json": fig_json.replace("</", "<\\/"),
            "plotly_src": request.url_for("static", path="plotly.min.js").path})
    return Response(content=fig_json, media_type="application/json")



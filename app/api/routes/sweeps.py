"""Sweeps: one request expanded into many jobs over tolerances, solvers, seeds and params."""

from __future__ import annotations

from collections import defaultdict
from typing import Literal

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.responses import JSONResponse, Response
from sqlalchemy import select

from app.render.charts import sweeps as sweep_charts
from app.render.charts.labels import figure_json
from app.jobs import idempotency
from app.jobs.base_jobs import check_base_jobs
from app.jobs.admission import check_active_jobs, check_caps
from app.api.deps import DB, AppSettings, CurrentCaller, Offset, get_or_404
from app.datasets.feature_screening import screened
from app.models import Dataset, Job, Sweep, new_id
from app.core.queue import dispatch, queue_for
from app.api.common import figure_response, owned_dataset, spec_error
from app.datasets.spec_table import counts_of, spec_table
from app.core.strict_json import StrictJSONRoute
from app.sweeps import report
from app.sweeps.grid import GridError, SweepCreate, expand, grid_size
from app.sweeps.summary import default_axes, direction, pareto_front, summarize, sweep_jobs
from solvers import SpecError, check_spec_against_table

router = APIRouter(prefix="/api/v1/sweeps", tags=["sweeps"], route_class=StrictJSONRoute)


@router.post("", status_code=status.HTTP_202_ACCEPTED)
def submit_sweep(body: SweepCreate, db: DB, settings: AppSettings, caller: CurrentCaller,
                 idempotency_key: idempotency.IdempotencyKey = None):
    """Validate the base spec and every expanded job, store them, queue them (chains when warm-starting)."""
    payload = body.model_dump(mode="json")
    submission = idempotency.Submission(db, caller, idempotency_key, "sweeps", payload)
    if (replayed := submission.replayed()) is not None:
        return replayed
    check_caps(body.base, settings, ("body", "base"))
    try:
        grid_size(body)  # arithmetic: a grid too large is refused before anything is built or read
    except GridError as exc:
        raise spec_error(exc.loc, exc.msg) from exc
    dataset = owned_dataset(db, body.base.dataset_id, caller, ("base", "dataset_id"))
    try:
        check_spec_against_table(body.base, spec_table(settings, dataset, body.base), counts_of(settings, dataset))
        screen = screened(settings, dataset, body.base)
        if screen is not None:
            body.base = body.base.model_copy(update={"features": screen.kept})
        planned = expand(body)
    except SpecError as exc:
        raise spec_error(("base", *exc.loc), exc.msg) from exc
    except GridError as exc:
        raise spec_error(exc.loc, exc.msg) from exc
    check_base_jobs(db, caller, dataset.id, [plan.spec.model_dump(mode="json") for plan in planned], ("body", "base"))
    check_active_jobs(db, caller.owner, len(planned), settings)
    sweep = Sweep(id=new_id(), owner=caller.owner, dataset_id=dataset.id, spec=payload, n_jobs=len(planned))
    db.add(sweep)
    db.flush()
    chains: dict[str | None, list[Job]] = defaultdict(list)
    for plan in planned:
        previous = chains[plan.chain][-1] if plan.chain is not None and chains[plan.chain] else None
        job = Job(id=new_id(), owner=caller.owner, dataset_id=dataset.id, sweep_id=sweep.id, sweep_point=plan.point,
                  spec=plan.spec.model_dump(mode="json"), status="waiting" if previous else "queued",
                  queue=queue_for(plan.spec.device),
                  warm_start_from=previous.id if previous else None,
                  progress={"iteration": 0, "max_iterations": plan.spec.iteration_total()})
        db.add(job)
        chains[plan.chain].append(job)
    response = {"id": sweep.id, "n_jobs": len(planned), "status": "running"}
    if screen is not None:
        response["feature_screen"] = screen.notes
    if (replayed := submission.commit(status.HTTP_202_ACCEPTED, response)) is not None:
        return replayed
    # chain heads; the rest are released by their predecessor (worker.tasks); unsent ones by the reconciler
    dispatch(j for jobs in chains.values() for j in jobs if j.status == "queued")
    return JSONResponse(response, status_code=status.HTTP_202_ACCEPTED)


@router.get("")
def list_sweeps(db: DB, caller: CurrentCaller, limit: int = Query(100, ge=1, le=1000), offset: Offset = 0) -> list[dict]:
    rows = db.scalars(select(Sweep).where(Sweep.owner == caller.owner).order_by(Sweep.created_at.desc())
                      .limit(limit).offset(offset))
    return [{"id": s.id, "dataset_id": s.dataset_id, "n_jobs": s.n_jobs, "created_at": s.created_at} for s in rows]


@router.get("/{sweep_id}")
def get_sweep(sweep_id: str, db: DB, caller: CurrentCaller, x: str | None = None, y: str | None = None,
              split: Literal["test", "validation"] = "test") -> dict:
    """Status, progress per status, failures, per-point mean and 95% CI over seeds, and the Pareto front."""
    sweep = get_or_404(db, Sweep, sweep_id, "sweep", caller)
    summary = summarize(sweep_jobs(db, sweep_id))
    dx, dy = default_axes(sweep)
    x, y = x or dx, y or dy
    front = pareto_front([p for p in summary["points"] if p["succeeded"]], x, y, split)
    return {"id": sweep.id, "dataset_id": sweep.dataset_id, "spec": sweep.spec, "created_at": sweep.created_at,
            **summary, "pareto": {"x": x, "y": y, "split": split, "directions": {x: direction(x), y: direction(y)},
                                   "points": front}}


@router.get("/{sweep_id}/charts/{kind}")
def sweep_chart(sweep_id: str, kind: str, request: Request, db: DB, caller: CurrentCaller, format: Literal["json", "html"] = "json",
                x: str | None = None, y: str | None = None, solver: str | None = None,
                tolerance: float | None = None, metric: str | None = None,
                metrics: str | None = Query(None, description="radar: comma-separated metric names")) -> Response:
    """``pareto``, ``trajectories`` (``?solver=`` or ``?tolerance=``), ``radar``, ``groups`` (``?metric=``)."""
    sweep = get_or_404(db, Sweep, sweep_id, "sweep", caller)
    jobs = sweep_jobs(db, sweep_id)
    summary = summarize(jobs)
    dx, dy = default_axes(sweep)
    try:
        if kind == "pareto":
            fig = sweep_charts.pareto(summary, x or dx, y or dy)
        elif kind == "trajectories":
            fig = sweep_charts.trajectories(db, jobs, solver=solver, tolerance=tolerance)
        elif kind == "radar":
            fig = sweep_charts.radar(summary, metrics.split(",") if metrics else None)
        elif kind == "groups":
            fig = sweep_charts.groups(jobs, metric or dx, tolerance)
        else:
            raise HTTPException(status_code=404, detail=f"kind: unknown chart {kind!r}; known: pareto, "
                                                        "trajectories, radar, groups")
    except sweep_charts.NoData as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from exc
    return figure_response(request, figure_json(fig), f"{kind} — sweep {sweep_id}", format)


@router.get("/{sweep_id}/report", responses={200: {"content": {"text/html": {}, "text/csv": {}, "application/json": {}}}})
def sweep_report(sweep_id: str, db: DB, caller: CurrentCaller, format: Literal["html", "csv", "json"] = "html") -> Response:
    """The sweep as one file: a self-contained HTML page (charts, tables, spec, dataset hash, code
    version, devices), a CSV of its jobs, or JSON."""
    sweep = get_or_404(db, Sweep, sweep_id, "sweep", caller)
    jobs = sweep_jobs(db, sweep_id)
    dataset = db.get(Dataset, sweep.dataset_id)
    summary = summarize(jobs)
    body, media = report.render(format, sweep, dataset, jobs, summary, default_axes(sweep))
    return Response(content=body, media_type=media, headers={
        "Content-Disposition": f'attachment; filename="sweep-{sweep_id}.{format}"'})

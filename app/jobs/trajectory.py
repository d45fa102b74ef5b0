"""A job's trajectory as stored (``trajectory_points``), downsampled in SQL on read (the API's answer and the
charts)."""

from __future__ import annotations

import math

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from app.models import Job, TrajectoryPoint

def read_trajectory(db: Session, job: Job, max_points: int) -> dict:
    """Evenly spaced iterations ``(i - 1) mod step = 0`` plus the last one, selected in SQL, with
    step = ⌈total / (max_points − 1)⌉, so at most max_points rows. The modulo is SQLAlchemy's own ``%``
    operator, which knows its precedence and parenthesises ``i - 1`` (a custom ``.op("%")`` compiled to
    ``i - 1 % step``, i.e. i − 1, and kept only the first and last iterations)."""
    total, last = db.execute(select(func.count(), func.max(TrajectoryPoint.iteration))
                             .where(TrajectoryPoint.job_id == job.id)).one()
    stmt = select(TrajectoryPoint).where(TrajectoryPoint.job_id == job.id).order_by(TrajectoryPoint.iteration)
    if total > max_points:
        step = math.ceil(total / (max_points - 1))
        stmt = stmt.where(or_((TrajectoryPoint.iteration - 1) % step == 0, TrajectoryPoint.iteration == last))
    points = [{"iteration": p.iteration, "elapsed_s": p.elapsed_s, "samples_seen": p.samples_seen,
               "objective": p.objective, "max_violation": p.max_violation, "constraints": p.constraints,
               "duals": p.duals} for p in db.scalars(stmt)]
    result = job.result or {}
    constraints = job.spec.get("constraints") or []
    return {"total_points": int(total), "points": points,
            "constraint_names": result.get("constraint_names") or job.progress.get("constraint_names") or [],
            "tolerances": result.get("tolerances") or [],
            "exact_names": [c["type"] for c in constraints], "exact_tolerances": [c["tolerance"] for c in constraints],
            "exact": read_exact(db, job, max_points)}


def read_exact(db: Session, job: Job, max_points: int) -> list[dict]:
    """The iterations that carry exact constraint values, at most ``max_points`` of them, evenly spaced by rank
    (first and last kept), selected in SQL."""
    traced = (TrajectoryPoint.job_id == job.id) & TrajectoryPoint.exact.is_not(None)
    total = db.scalar(select(func.count()).select_from(TrajectoryPoint).where(traced))
    rank = func.row_number().over(order_by=TrajectoryPoint.iteration).label("rank")
    rows = select(TrajectoryPoint.iteration, TrajectoryPoint.elapsed_s, TrajectoryPoint.exact, rank).where(traced)
    rows = rows.subquery()
    stmt = select(rows.c.iteration, rows.c.elapsed_s, rows.c.exact).order_by(rows.c.iteration)
    if total > max_points:
        step = math.ceil(total / (max_points - 1))
        stmt = stmt.where(or_((rows.c.rank - 1) % step == 0, rows.c.rank == total))  # SQLAlchemy's % parenthesises
    return [{"iteration": it, "elapsed_s": secs, "train": exact.get("train") or [],
             "validation": exact.get("validation")} for it, secs, exact in db.execute(stmt)]

"""What a caller may queue: per-job caps on iterations and time, and active jobs per owner."""

from __future__ import annotations

from fastapi import HTTPException
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import Job
from app.core.settings import Settings
from solvers import ProblemSpec

ACTIVE = ("queued", "waiting", "running")


def check_caps(spec: ProblemSpec, settings: Settings, loc: tuple = ("body",)) -> None:
    """422 naming the field when a spec asks for more iterations or time than the server allows."""
    errors = []
    if spec.max_iterations > settings.max_iterations_cap:
        errors.append({"loc": [*loc, "max_iterations"], "type": "less_than_equal",
                       "msg": f"at most {settings.max_iterations_cap} on this server"})
    if spec.time_limit_s > settings.time_limit_cap_s:
        errors.append({"loc": [*loc, "time_limit_s"], "type": "less_than_equal",
                       "msg": f"at most {settings.time_limit_cap_s:g} s on this server"})
    if errors:
        raise HTTPException(status_code=422, detail=errors)


def check_active_jobs(db: Session, owner: str, adding: int, settings: Settings) -> None:
    """429 when ``adding`` more jobs would take the owner past ``max_active_jobs``."""
    active = db.scalar(select(func.count()).select_from(Job).where(Job.owner == owner, Job.status.in_(ACTIVE)))
    if active + adding > settings.max_active_jobs:
        raise HTTPException(status_code=429, detail=(
            f"{active} of your jobs are queued or running and this request adds {adding}; "
            f"the limit is {settings.max_active_jobs} at once"), headers={"Retry-After": "30"})

"""``base_job_id``: a post-processing solver (``group_thresholds``) applied to an existing job's model.

The job named must be the caller's, have succeeded with a stored model, and share everything its weights and
scores depend on — dataset, split, target and positive label, features, model — with the new job; otherwise
the submission is refused with a 422 naming ``solver.params.base_job_id``. The worker then loads its weights as
the new job's start model (:func:`worker.tasks._warm_start_weights`)."""
from __future__ import annotations

from typing import Any, Iterable

from fastapi import HTTPException
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.auth.keys import Caller
from app.models import Artifact, Job

#: the spec fields a base job must share with the job that post-processes its model
SHARED = ("split", "target", "positive_label", "features", "model")
LOC = ("solver", "params", "base_job_id")


def base_job_id(spec: dict[str, Any]) -> str | None:
    """The ``base_job_id`` in a job spec's solver params, if any."""
    params = (spec.get("solver") or {}).get("params") or {}
    value = params.get("base_job_id")
    return value if isinstance(value, str) else None


def mismatch(base: Job, dataset_id: str, spec: dict[str, Any]) -> str | None:
    """Why ``base``'s model cannot be post-processed by a job of ``spec`` on ``dataset_id``; None when it can."""
    if base.status != "succeeded":
        return f"job {base.id!r} has status {base.status!r}; only a succeeded job has a model to post-process"
    if base.dataset_id != dataset_id:
        return f"job {base.id!r} was trained on another dataset"
    for key in SHARED:
        if base.spec.get(key) != spec.get(key):
            return f"job {base.id!r} has another {key!r} ({base.spec.get(key)!r}, here {spec.get(key)!r})"
    return None


def check_base_jobs(db: Session, caller: Caller, dataset_id: str, specs: Iterable[dict[str, Any]],
                    loc: tuple = ("body",)) -> None:
    """Raise a 422 at ``loc + solver.params.base_job_id`` when a spec names a base job it cannot use."""
    for spec in specs:
        wanted = base_job_id(spec)
        if wanted is None:
            continue
        base = db.get(Job, wanted)
        problem = "not found" if base is None or base.owner != caller.owner else mismatch(base, dataset_id, spec)
        if problem is None and db.scalar(select(Artifact.id).where(Artifact.job_id == wanted,
                                                                   Artifact.kind == "weights")) is None:
            problem = f"job {wanted!r} has no stored model"
        if problem is not None:
            raise HTTPException(status_code=422, detail=[{
                "loc": [*loc, *LOC], "type": "value_error",
                "msg": f"job {wanted!r} not found" if problem == "not found" else problem}])

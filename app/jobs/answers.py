"""A job as the API answers it: its row, its artifacts' links and its baseline (shared by the routes and the
dashboard)."""

from __future__ import annotations

from pydantic import TypeAdapter
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.jobs.baselines import baseline_warnings, baselines_for
from app.models import Artifact, Job
from app.schemas import BaselineOut, JobOut

JOB_LIST = TypeAdapter(list[JobOut])


def job_models(db: Session, jobs: list[Job]) -> list[JobOut]:
    """Jobs as answered by the API, with their artifacts (one query for all of them)."""
    arts: dict[str, list[Artifact]] = {j.id: [] for j in jobs}
    if jobs:
        for a in db.scalars(select(Artifact).where(Artifact.job_id.in_(list(arts))).order_by(Artifact.kind)):
            arts[a.job_id].append(a)
    out = []
    for job, baseline in zip(jobs, baselines_for(db, [dict(j.spec, dataset_id=j.dataset_id) for j in jobs])):
        model = JobOut.model_validate(job)
        model.baseline = BaselineOut.model_validate(baseline) if baseline is not None else None
        if model.result is not None:  # the baseline's warnings (leaks) are the job's too
            model.result.warnings += [w for w in baseline_warnings(baseline) if w not in model.result.warnings]
        model.artifacts = [{"id": a.id, "kind": a.kind, "media_type": a.media_type, "size_bytes": a.size_bytes,
                            "sha256": a.sha256, "url": f"/api/v1/jobs/{job.id}/artifacts/{a.kind}"}
                           for a in arts[job.id]]
        out.append(model)
    return out


def job_out(db: Session, job: Job) -> dict:
    return job_models(db, [job])[0].model_dump()

"""Celery task ``compute_baseline(baseline_id)``: the unconstrained (``erm``) model of a baseline row
(:mod:`app.jobs.baselines`) on its dataset and split, stored as per-split accuracy, balanced accuracy, AUC
and the exact fairness report of the spec's constraints.

Delivery is at-least-once and the ERM solve is deterministic, so a redelivered or duplicate message
simply computes the same result again; a finished row (succeeded or failed) is never recomputed.
"""

from __future__ import annotations

import logging
import traceback

from sqlalchemy import update

from app.core.db import session_scope
from app.models import Baseline, Dataset, utcnow
from solvers import ProblemSpec, run
from worker.celery_app import celery_app
from worker.tables import dataset_table
from worker.threads import solve_threads
from worker.results import baseline_summary

log = logging.getLogger(__name__)
@celery_app.task(name="fairsolve.compute_baseline")
def compute_baseline(baseline_id: str) -> str:
    with session_scope() as s:
        claimed = s.execute(update(Baseline).where(Baseline.id == baseline_id,
                                                   Baseline.status.in_(("queued", "running")))
                            .values(status="running")).rowcount == 1
        if not claimed:
            return "skipped"
        row = s.get(Baseline, baseline_id)
        spec, dataset = ProblemSpec.model_validate(row.spec), s.get(Dataset, row.dataset_id)
        s.expunge(dataset)
    try:
        table, prepare_with = dataset_table(dataset)  # the job's cached table and, mostly, its prepared split
        with solve_threads(spec):
            out = run(table, spec, prepare_with=prepare_with)
        values = {"status": "succeeded", "result": baseline_summary(out), "error": None}
    except Exception as exc:  # a failed baseline is shown as such; it never fails a job
        log.error("baseline %s failed:\n%s", baseline_id, traceback.format_exc())
        values = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
    with session_scope() as s:
        s.execute(update(Baseline).where(Baseline.id == baseline_id).values(finished_at=utcnow(), **values))
    return values["status"]

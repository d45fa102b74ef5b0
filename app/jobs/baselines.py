"""The unconstrained baseline of a job: a cheap ``erm`` run on the same data and split, computed once.

Every job on the same dataset, target, positive label, sensitive columns and group rules (or overlapping groups),
features,
split, model, objective and constraint definitions (tolerances aside) shares one baseline: its key is
the SHA-256 of the canonical JSON of those spec fields. The first job that needs it inserts the row
(the unique key makes concurrent first jobs agree on one row) and sends ``fairsolve.compute_baseline``;
the others read it. The job page shows its accuracy and exact fairness gaps beside the job's own.
No torch here: the API reads baselines too.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.models import Baseline, new_id, utcnow
from app.core.queue import queue_for
from app.schemas import problem_fields
from solvers.leakage import implausible_accuracy
from app.core.celery import celery_app

COMPUTE_BASELINE = "fairsolve.compute_baseline"
KEY_FIELDS = ("dataset_id", "target", "positive_label", "sensitive", "group_rules", "features", "split", "model",
              "objective")
MAX_ITERATIONS = 1000  # ERM (Adam) settles long before this on the tables the service trains on
MAX_TIME_S = 300.0


def baseline_key(job_spec: dict[str, Any]) -> str:
    """SHA-256 of the fields that determine the unconstrained model and the metrics reported beside it."""
    fields = {k: job_spec.get(k) for k in KEY_FIELDS}
    fields["constraints"] = [{k: v for k, v in c.items() if k != "tolerance"} for c in job_spec.get("constraints", [])]
    if job_spec.get("overlapping_groups") is not None:  # only when given: the keys of partition jobs stay as they were
        fields["overlapping_groups"] = job_spec["overlapping_groups"]
    return hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def baseline_spec(job_spec: dict[str, Any]) -> dict[str, Any]:
    """The job's spec with the ``erm`` solver (paper defaults), at most ``MAX_ITERATIONS`` iterations and
    ``MAX_TIME_S`` seconds, seed 0, no guarantee and no exact enforcement: the plain model on the same split."""
    spec = {k: v for k, v in problem_fields(job_spec).items() if k != "guarantee"}
    spec.update(solver={"name": "erm", "params": {}}, seed=0, exact_enforcement=False,
                max_iterations=min(int(job_spec.get("max_iterations", MAX_ITERATIONS)), MAX_ITERATIONS),
                time_limit_s=min(float(job_spec.get("time_limit_s", MAX_TIME_S)), MAX_TIME_S))
    return spec


#: fields of an ``erm`` job that do not change its solve: exact enforcement and the guarantee are not applied after
#: ``erm`` (``solvers.api.keep_promise``), and the caps change it only for a run that reaches them
ERM_INERT = frozenset({"exact_enforcement", "enforcement_iterations", "guarantee", "max_iterations", "time_limit_s"})


def solves_as_baseline(job_spec: dict[str, Any]) -> bool:
    """Whether the job's solve is its baseline's (:func:`baseline_spec`) up to :data:`ERM_INERT`: an ``erm`` job with
    the default params and seed 0 on the same fields. Its result can then be stored as the baseline
    (:func:`store_as_baseline`) instead of a second fit of the same model, once :func:`solved_as_baseline`."""
    fields = problem_fields(job_spec)
    return all(fields.get(k) == v for k, v in baseline_spec(job_spec).items() if k not in ERM_INERT)


def solved_as_baseline(job_spec: dict[str, Any], iterations: int, stop_reason: str | None, seconds: float) -> bool:
    """:func:`solves_as_baseline`, and the run stopped before the baseline's caps would have: not on its time limit,
    in fewer seconds than the baseline's limit, and in fewer iterations than the baseline's ``max_iterations``
    unless the job's own cap is no larger."""
    base = baseline_spec(job_spec)
    within = iterations < base["max_iterations"] or int(job_spec.get("max_iterations", MAX_ITERATIONS)) <= \
        base["max_iterations"]
    return solves_as_baseline(job_spec) and stop_reason != "time_limit" and seconds < base["time_limit_s"] and within


def store_as_baseline(session: Session, job_spec: dict[str, Any], result: dict[str, Any]) -> bool:
    """Store a job's result as its baseline while the baseline row is queued (no ``compute_baseline`` has started
    it) and describes the same run (its stored spec, tolerances included, is this job's :func:`baseline_spec`);
    True when stored."""
    row = session.scalar(select(Baseline).where(Baseline.key == baseline_key(job_spec), Baseline.status == "queued")
                         .with_for_update())
    if row is None or row.spec != baseline_spec(job_spec):
        return False
    row.status, row.result, row.error, row.finished_at = "succeeded", result, None, utcnow()
    return True


def queued_baseline_id(session: Session, job_spec: dict[str, Any]) -> str | None:
    """The id of the job's baseline row while it is queued."""
    return session.scalar(select(Baseline.id).where(Baseline.key == baseline_key(job_spec), Baseline.status == "queued"))


def ensure_baseline(session: Session, job_spec: dict[str, Any], resend_after_s: float = 120.0) -> str | None:
    """Insert the job's baseline row when it is missing and return its id to be computed (the caller sends
    :func:`send_baseline` after committing); None when it exists already. A row still ``queued`` after
    ``resend_after_s`` (its message was lost) is claimed again with a compare-and-set on ``created_at``,
    so of several jobs exactly one sends it again."""
    key = baseline_key(job_spec)
    found = session.execute(select(Baseline.id, Baseline.status, Baseline.created_at)
                            .where(Baseline.key == key)).one_or_none()
    if found is not None:
        cutoff = utcnow() - timedelta(seconds=resend_after_s)
        stale = (Baseline.id == found.id) & (Baseline.status == "queued") & (Baseline.created_at < cutoff)
        claimed = found.status == "queued" and session.execute(
            update(Baseline).where(stale).values(created_at=utcnow())).rowcount == 1
        return found.id if claimed else None
    row = Baseline(id=new_id(), key=key, dataset_id=job_spec["dataset_id"], spec=baseline_spec(job_spec),
                   status="queued")
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:  # another job inserted it first
        return None
    return row.id


def send_baseline(baseline_id: str, device: str) -> None:
    celery_app.send_task(COMPUTE_BASELINE, args=[baseline_id], queue=queue_for(device),
                         task_id=f"baseline-{baseline_id}")


def baseline_warnings(baseline: Baseline | None) -> list[str]:
    """What every job on this baseline must say of it: that the unconstrained model is implausibly accurate for the
    table (:func:`solvers.leakage.implausible_accuracy` of its test split), a sign of a column known after the
    outcome."""
    if baseline is None or baseline.status != "succeeded" or not baseline.result:
        return []
    warning = implausible_accuracy((baseline.result.get("metrics") or {}).get("test"))
    return [warning] if warning else []


def baselines_for(session: Session, job_specs: list[dict[str, Any]]) -> list[Baseline | None]:
    """The baseline of each spec (None where none was made yet), in one query."""
    keys = [baseline_key(s) for s in job_specs]
    found = {b.key: b for b in session.scalars(select(Baseline).where(Baseline.key.in_(set(keys))))} if keys else {}
    return [found.get(k) for k in keys]

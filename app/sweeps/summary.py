"""A sweep's state and results, computed on read from its jobs (nothing to lose if a process dies).

Per sweep point (solver, params, tolerance) the mean and a 95% confidence interval
over seeds (Student t: mean ± t₀.₉₇₅,ₙ₋₁ · s/√n, cut to the quantity's range: rates, gaps and AUCs in [0, 1],
losses, seconds and iterations ≥ 0, :func:`metric_range`) of every numeric metric on test
and validation, of the solver time and of the iterations. With fewer than :data:`MIN_SEEDS` values there is no
interval (``ci_low`` / ``ci_high`` None, ``ci_note`` says why): from 2 seeds t₀.₉₇₅,₁ = 12.7 makes the
half-width 9 standard deviations, intervals like a solver time of [−546, 718] s. The share of its succeeded jobs
that keep every
tolerance on the test split (exact metric ≤ tolerance for each constraint of the job's fairness report;
None when no job has a report); and the Pareto front
(non-dominated points by their means) for a pair of metrics whose directions are
known: accuracy-like metrics are maximised, gaps and losses minimised.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Job, Sweep

MAXIMISE = {"accuracy", "balanced_accuracy", "roc_auc", "auc"}
SPLITS = ("test", "validation")


def direction(metric: str) -> str:
    """'max' for accuracy-like metrics, 'min' for gaps, losses and violations."""
    return "max" if metric in MAXIMISE or metric.endswith("_auc") or metric.startswith("auc") else "min"


#: fewest values (seeds) a mean's interval is given for
MIN_SEEDS = 3
#: quantities in [0, 1] (rates, gaps of rates, accuracies, AUCs, distances between score distributions)
UNIT = {"accuracy", "balanced_accuracy", "roc_auc", "auc", "inaccuracy", "demographic_parity", "equal_opportunity",
        "equalized_odds", "independence", "separation", "sufficiency", "wasserstein", "minority_rate",
        "kept_on_test", "zero_gap_keeps"}


def metric_range(name: str) -> tuple[float, float]:
    """The values a metric can take: [0, 1] for rates, gaps of rates, accuracies and AUCs (:data:`UNIT`, names
    ending in ``_rate`` or ``_auc``, AUC and partial-fairness gaps), else [0, ∞) (losses, loss gaps, seconds,
    iterations: every other quantity the jobs report is a non-negative size)."""
    unit = (name in UNIT or name.endswith(("_rate", "_auc", "_parity")) or name.startswith(("auc", "partial_")))
    return (0.0, 1.0) if unit else (0.0, math.inf)


def mean_ci(values: list[float], bounds: tuple[float, float] = (-math.inf, math.inf)) -> dict[str, Any]:
    """Mean, its Student-t 95 % interval cut to ``bounds`` (None with a ``ci_note`` below :data:`MIN_SEEDS`
    values), standard deviation and count of the finite ``values``."""
    arr = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return {"mean": None, "ci_low": None, "ci_high": None, "std": None, "n": 0}
    mean = float(arr.mean())
    std = float(arr.std(ddof=1)) if arr.size > 1 else None
    if arr.size < MIN_SEEDS:
        return {"mean": mean, "ci_low": None, "ci_high": None, "std": std, "n": int(arr.size),
                "ci_note": f"too few seeds for an interval ({arr.size}; {MIN_SEEDS} needed)"}
    from scipy.special import stdtrit  # t quantile (= scipy.stats.t.ppf); scipy.special costs the API 14 MiB on first use

    half = float(stdtrit(arr.size - 1, 0.975) * std / math.sqrt(arr.size))
    low, high = bounds
    return {"mean": mean, "ci_low": max(mean - half, low), "ci_high": min(mean + half, high), "std": std,
            "n": int(arr.size)}


def sweep_status(counts: Counter) -> str:
    total = sum(counts.values())
    if counts["queued"] or counts["running"] or counts["waiting"]:
        return "running"
    if counts["succeeded"] == total:
        return "succeeded"
    return "failed" if counts["succeeded"] == 0 else "partial"


def point_key(job: Job) -> str:
    p = job.sweep_point or {}
    return json.dumps([p.get("solver"), p.get("params"), p.get("tolerance")], sort_keys=True)


def summarize(jobs: list[Job]) -> dict[str, Any]:
    """Status, progress per status, failures, and per-point aggregates over seeds."""
    counts = Counter(j.status for j in jobs)
    groups: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        groups[point_key(job)].append(job)
    points = [_aggregate(members) for members in groups.values()]
    points.sort(key=lambda p: (p["solver"], json.dumps(p["params"], sort_keys=True),
                               -1.0 if p["tolerance"] is None else p["tolerance"]))
    return {
        "status": sweep_status(counts),
        "progress": {s: counts.get(s, 0) for s in ("waiting", "queued", "running", "succeeded", "failed",
                                                   "cancelled")},
        "n_jobs": len(jobs),
        "failures": [{"job_id": j.id, "point": j.sweep_point, "error": j.error} for j in jobs
                     if j.status in ("failed", "cancelled")],
        "points": points,
    }


def _aggregate(members: list[Job]) -> dict[str, Any]:
    point = members[0].sweep_point or {}
    done = [j for j in members if j.status == "succeeded" and j.metrics]
    metrics: dict[str, dict[str, Any]] = {}
    for split in SPLITS:
        names = sorted({k for j in done for k, v in (j.metrics.get(split) or {}).items()
                        if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "n"})
        if names:
            metrics[split] = {m: mean_ci([(j.metrics.get(split) or {}).get(m) for j in done], metric_range(m))
                              for m in names}
    return {
        "solver": point.get("solver"), "params": point.get("params") or {}, "tolerance": point.get("tolerance"),
        "job_ids": [j.id for j in sorted(members, key=lambda j: (j.sweep_point or {}).get("seed", 0))],
        "seeds": sorted((j.sweep_point or {}).get("seed", 0) for j in members),
        "succeeded": len(done),
        "metrics": metrics,
        **{key: mean_ci([(j.result or {}).get(key) for j in done], metric_range(key))
           for key in ("solver_time_s", "iterations", "iterations_to_target")},
        "kept_on_test": kept_share(done),
        "zero_gap_keeps": zero_gap_share(done),
    }


def kept_share(jobs: list[Job]) -> float | None:
    """Share of ``jobs`` whose every constraint keeps its tolerance on the test split (jobs with a report)."""
    reports = [(j.result or {}).get("fairness") for j in jobs]
    kept = [all(e.get("kept_on_test") is True for e in r) for r in reports if r]
    return sum(kept) / len(kept) if kept else None


def zero_gap_share(jobs: list[Job]) -> float | None:
    """The ceiling beside :func:`kept_share`: the mean over ``jobs`` of min over a job's constraints of the chance
    that a model with no gap on the population keeps that tolerance on the job's test split (its report's
    ``test_noise_floor``) — an upper bound on that model's chance to keep them all. None when a job's constraint
    has no such figure (loss and AUC gaps, overlapping groups)."""
    floors = []
    for job in jobs:
        report = (job.result or {}).get("fairness") or []
        chances = [(e.get("test_noise_floor") or {}).get("keep_probability") for e in report]
        if not chances or any(c is None for c in chances):
            return None
        floors.append(min(chances))
    return sum(floors) / len(floors) if floors else None


def pareto_front(points: list[dict[str, Any]], x: str, y: str, split: str = "test") -> list[dict[str, Any]]:
    """Non-dominated points for metrics x and y (means), each in its own direction; sorted by x."""
    def value(p, m):
        return ((p["metrics"].get(split) or {}).get(m) or {}).get("mean")

    sign = {m: (1.0 if direction(m) == "min" else -1.0) for m in (x, y)}
    cands = [(sign[x] * value(p, x), sign[y] * value(p, y), p) for p in points
             if value(p, x) is not None and value(p, y) is not None]
    front = [p for a, b, p in cands
             if not any(a2 <= a and b2 <= b and (a2 < a or b2 < b) for a2, b2, _ in cands)]
    return sorted(front, key=lambda p: value(p, x))


def sweep_jobs(db: Session, sweep_id: str) -> list[Job]:
    return list(db.scalars(select(Job).where(Job.sweep_id == sweep_id).order_by(Job.created_at)))


def default_axes(sweep: Sweep) -> tuple[str, str]:
    constraints = sweep.spec["base"].get("constraints") or []
    return (constraints[0]["type"] if constraints else "demographic_parity"), "accuracy"

"""What the job page shows of a job's promise: a pass / fail badge per constraint against its tolerance
(the exact metric on the test split), the exact value and 95 % CI on every split, the unconstrained
(``erm``) baseline beside the job, the guarantee and the candidates ``auto`` tried.

A constraint passes when its exact test value is ≤ the tolerance (``kept_on_test``), fails when it is
above, and is "undefined" when the metric has no value on the test split (e.g. a TPR gap without positives).
Beside it, the share of test splits of this size on which a model with no gap on the population keeps the
tolerance: a verdict the split's own noise could have given.
"""

from __future__ import annotations

from typing import Any

SPLITS = ("train", "validation", "test")
SCALARS = ("accuracy", "balanced_accuracy")


def verdict(kept: bool | None) -> str:
    return "undefined" if kept is None else "pass" if kept else "fail"


def job_verdict(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """The jobs list's summary: how many constraints keep their tolerance on test, and ``pass`` when all do
    (``fail`` otherwise); None for a job without a fairness report."""
    report = (result or {}).get("fairness") or []
    if not report:
        return None
    kept = sum(e.get("kept_on_test") is True for e in report)
    return {"kept": kept, "total": len(report), "verdict": verdict(kept == len(report))}


def constraint_rows(result: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One row per constraint: type, tolerance, verdict, per split (value, ci, kept), the test upper bound and
    what the test split can show (``floor``: a zero-gap model's chance to keep the tolerance there)."""
    rows = []
    for entry in (result or {}).get("fairness") or []:
        rows.append({"type": entry.get("type"), "tolerance": entry.get("tolerance"),
                     "verdict": verdict(entry.get("kept_on_test")), "upper": entry.get("test_upper_95"),
                     "floor": entry.get("test_noise_floor"),
                     "splits": {s: entry.get(s) for s in SPLITS}})
    return rows


def _test_values(metrics: dict[str, Any] | None, fairness: list[dict[str, Any]] | None) -> dict[str, Any]:
    test = (metrics or {}).get("test") or {}
    out = {k: test.get(k) for k in SCALARS}
    for entry in fairness or []:
        out[entry.get("type")] = (entry.get("test") or {}).get("value")
    return out


def baseline_rows(job: dict[str, Any]) -> dict[str, Any]:
    """The job and its unconstrained baseline on the test split: accuracy, balanced accuracy and each
    constraint's exact value; ``status`` of the baseline (None when none was requested)."""
    result = job.get("result") or {}
    columns = [*SCALARS, *[e.get("type") for e in result.get("fairness") or []]]
    baseline = job.get("baseline")
    rows = [{"name": "this job", "values": _test_values(job.get("metrics"), result.get("fairness"))}]
    if baseline and baseline.get("status") == "succeeded":
        done = baseline.get("result") or {}
        rows.append({"name": "unconstrained (erm)", "values": _test_values(done.get("metrics"), done.get("fairness"))})
    return {"columns": columns, "rows": rows, "status": baseline.get("status") if baseline else None,
            "error": baseline.get("error") if baseline else None}

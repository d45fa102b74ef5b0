"""Why a job misses its tolerance on test (a section of ``bench/results/promise.md``): the model's own gap, or the
test split's noise?

Each job whose exact test gap is above its tolerance ε falls in the first class that holds:

1. **over ε before test**: its exact gap on the training or on the validation split is already above ε (the model
   was aimed at ε, or the correction could not reach its aim: a randomised or non-linear model);
2. **test split** (demographic parity only): a *reference* model with no gap of its own on the rows it was fitted
   on — an unconstrained logistic regression shifted per group to the tightest DP band fitted on train ∪
   validation (:func:`bench.pooling.split_gaps`) — misses ε on the same test split too: the test rows alone show
   a gap above ε for a near-zero-gap model, so no method of the cell keeps ε there except by its own luck;
3. **population gap**: otherwise (the model's gap on the population is large enough that the test split shows
   it; for equalized odds, where no reference is computed, also the test split's noise: its zero-gap model
   keeps ε in only the share of :mod:`bench.noise_floor`).
"""
from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from bench.pooling import split_gaps

CLASSES = ("over ε before test", "test split", "population gap")


def references(cells: set[tuple[str, int]], cached: dict[str, float], spec_of: Callable[[str, int], dict],
               tables: Callable[[str], pd.DataFrame]) -> dict[str, float]:
    """``cached`` completed with the reference model's test DP for every (dataset, seed) (key "dataset|seed")."""
    out = dict(cached)
    for dataset, seed in sorted(cells):
        key = f"{dataset}|{seed}"
        if key not in out:
            out[key] = split_gaps(tables(dataset), spec_of(dataset, seed))["train+validation"][0]
    return out


def classify(job: dict[str, Any], reference: float | None) -> str | None:
    """The job's class (module docstring), None when it keeps ε on test (or has no result)."""
    eps = job["tolerance"] + 1e-12
    if job.get("test_gap") is None or job["test_gap"] <= eps:
        return None
    before = [v for v in (job.get("train_gap"), job.get("validation_gap")) if v is not None]
    if before and max(before) > eps:
        return CLASSES[0]
    if job["constraint"] == "demographic_parity" and reference is not None and reference > eps:
        return CLASSES[1]
    return CLASSES[2]


def report(jobs: dict[str, dict], refs: dict[str, float], methods: tuple[str, ...]) -> list[str]:
    """Per method and constraint: the misses by class (module docstring)."""
    rows: dict[tuple[str, str], dict[str, int]] = {}
    for job in jobs.values():
        if job["method"] not in methods or f"{job['dataset']}|{job['seed']}" not in refs:
            continue
        cls = classify(job, refs.get(f"{job['dataset']}|{job['seed']}"))
        counts = rows.setdefault((job["method"], job["constraint"]), {"jobs": 0, **{c: 0 for c in CLASSES}})
        counts["jobs"] += 1
        if cls is not None:
            counts[cls] += 1
    if not rows:
        return []
    dp = [j for j in jobs.values() if j["constraint"] == "demographic_parity" and j["method"] == methods[-1]
          and refs.get(f"{j['dataset']}|{j['seed']}") is not None and j.get("test_gap") is not None]
    reference_keeps = sum(refs[f"{j['dataset']}|{j['seed']}"] <= j["tolerance"] + 1e-12 for j in dp)
    method_keeps = sum(j["test_gap"] <= j["tolerance"] + 1e-12 for j in dp)
    md = ["## Why jobs miss on test", "",
          "Each miss in the first class that holds (`bench/misses.py`): its exact train or validation gap is already "
          "above ε; else (DP) a reference with no gap of its own on train ∪ validation (a logistic regression shifted "
          "to the tightest DP band there) misses ε on the same test split too — the test rows' noise; else the "
          "model's population gap (for equalized odds also the test split's noise: no reference). "
          f"On the test splits of the {len(dp)} DP jobs of {methods[-1]} the reference keeps {reference_keeps} "
          f"({methods[-1]}: {method_keeps}): what a model with no gap on the rows it is fitted on shows on these "
          "very splits, beside the zero-gap model's mean over splits of their sizes.", "",
          "| method | constraint | jobs | misses | " + " | ".join(CLASSES) + " |", "|---|---|---|---|---|---|---|"]
    for (method, constraint), c in sorted(rows.items()):
        md.append(f"| {method} | {constraint} | {c['jobs']} | {sum(c[k] for k in CLASSES)} | "
                  + " | ".join(str(c[k]) for k in CLASSES) + " |")
    return md + [""]

"""Why a job misses its tolerance on test (a section of ``bench/quality/results/promise.md``): the model's own gap, or the
test split's noise?

Each job whose exact test gap is above its tolerance ε falls in the first class that holds:

1. **over ε on train**: its exact gap on the training split is already above ε (the model was aimed at ε and
   the split's rows moved it, or the correction could not reach its aim: a randomised or thresholded model);
2. **test split** (demographic parity): a *reference* model with no gap of its own on the rows it was fitted
   on — an unconstrained logistic regression shifted per group to the tightest DP band fitted on train ∪
   validation (:func:`bench.quality.pooling.split_gaps`) — misses ε on the same test split too: the test rows alone show
   a gap above ε for a near-zero-gap model, so no method of the cell keeps ε there except by its own luck;
3. **population gap** (demographic parity): otherwise — the reference keeps ε on this test split, the model does
   not: its own gap on the population shows;
4. **not separated** (other constraints, no reference): the model's population gap or the test split's noise
   (its zero-gap model keeps ε in only the share of :mod:`bench.quality.noise_floor`).

The validation gap is not used: for equalized odds on COMPAS its own noise is as large as the test split's.
"""
from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from bench.quality.pooling import split_gaps

CLASSES = ("over ε on train", "test split", "population gap", "not separated")


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
    if job.get("train_gap") is not None and job["train_gap"] > eps:
        return CLASSES[0]
    if job["constraint"] != "demographic_parity" or reference is None:
        return CLASSES[3]
    return CLASSES[1] if reference > eps else CLASSES[2]


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
          "Each miss in the first class that holds (`bench/quality/misses.py`): its exact train gap is already above ε; "
          "else (DP) a reference with no gap of its own on train ∪ validation (a logistic regression shifted to the "
          "tightest DP band there) misses ε on the same test split too — the test rows' noise; else (DP) the "
          "model's population gap; other constraints have no reference: population gap and test noise are not "
          "separated. "
          f"On the test splits of the {len(dp)} DP jobs of {methods[-1]} the reference keeps {reference_keeps} "
          f"({methods[-1]}: {method_keeps}): what a model with no gap on the rows it is fitted on shows on these "
          "very splits, beside the zero-gap model's mean over splits of their sizes.", "",
          "| method | constraint | jobs | misses | " + " | ".join(CLASSES) + " |", "|---|---|---|---|---|---|---|---|"]
    for (method, constraint), c in sorted(rows.items()):
        md.append(f"| {method} | {constraint} | {c['jobs']} | {sum(c[k] for k in CLASSES)} | "
                  + " | ".join(str(c[k]) for k in CLASSES) + " |")
    return md + [""]

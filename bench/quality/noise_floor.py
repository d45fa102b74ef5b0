"""What the benchmarks' test splits can show (:mod:`solvers.fairness.noise_floor`), for ``bench.quality.promise`` and
``bench.quality.frontier``: per dataset and seed, the test split's group sizes and positive labels and the pooled test rates
of an unconstrained logistic regression fitted on the training split (selection rate, TPR, FPR and the standard
deviation of its per-sample log loss) — the rates of the "zero-gap model" whose every group is at these pooled
rates. Per cell (constraint, tolerance): the probability that this model keeps the tolerance on the test split
and its expected test gap. The mean of that probability over a grid's cells is the best share of jobs ANY
method can keep there (a model that is exactly fair on the population)."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from solvers.fairness.noise_floor import noise_floor, split_counts

REPETITIONS = 20_000


def split_info(table: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    """The test split of ``spec`` (any job spec of the cell: only its data fields and split matter): group sizes,
    positive labels, and the pooled test rates of a logistic regression fitted on its training split."""
    from sklearn.linear_model import LogisticRegression

    from solvers import ProblemSpec, prepare

    data = prepare(table, ProblemSpec.model_validate(spec))
    train, test = data.splits["train"], data.splits["test"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LogisticRegression(max_iter=1000).fit(data.X[train], data.y[train])
    z = model.decision_function(data.X[test]).astype(np.float64)
    y, pred = data.y[test], z > 0
    counts, positives = split_counts(y, data.group[test], len(data.group_names))
    loss = np.logaddexp(0.0, np.where(y == 1, -z, z))  # the per-sample log loss
    return {"counts": counts.tolist(), "positives": positives.tolist(), "rate": float(pred.mean()),
            "tpr": float(pred[y == 1].mean()), "fpr": float(pred[y == 0].mean()), "loss_sd": float(loss.std())}


def keeps(info: dict[str, Any], kind: str, tolerance: float) -> dict[str, float]:
    """The zero-gap model on this split: ``keep_probability`` (P(test gap ≤ tolerance)) and ``expected_gap``."""
    floor = noise_floor(kind, info["counts"], info["positives"], tolerance, rate=info["rate"], tpr=info["tpr"],
                        fpr=info["fpr"], loss_sd=info["loss_sd"], repetitions=REPETITIONS)
    return {"keep_probability": floor.keep_probability, "expected_gap": floor.expected_gap}


def infos_for(cells: set[tuple[str, int]], cached: dict[str, Any], spec_of, tables) -> dict[str, Any]:
    """``cached`` completed with :func:`split_info` for every (dataset, seed) of ``cells`` (key "dataset|seed");
    ``spec_of(dataset, seed)`` a job spec of that split, ``tables(dataset)`` its table."""
    out = dict(cached)
    for dataset, seed in sorted(cells):
        key = f"{dataset}|{seed}"
        if key not in out:
            out[key] = split_info(tables(dataset), spec_of(dataset, seed))
    return out



def excess_chance(jobs: list[dict[str, Any]], infos: dict[str, Any], excess: float) -> dict[str, Any]:
    """For the zero-gap model on each job's test split: P(test gap ≤ tolerance) and P(test gap ≤ tolerance +
    ``excess``); over the jobs, the mean of the first (the best share kept), the expected number of jobs beyond
    tolerance + ``excess`` and the probability that none is (the splits are independent draws per job)."""
    keep, within = [], []
    for job in jobs:   # one noise floor per job: a handful of cells, each vectorised over repetitions and groups
        info = infos[f"{job['dataset']}|{job['seed']}"]
        keep.append(keeps(info, job["constraint"], job["tolerance"])["keep_probability"])
        within.append(keeps(info, job["constraint"], job["tolerance"] + excess)["keep_probability"])
    within_arr = np.asarray(within)
    return {"jobs": len(jobs), "excess": excess, "mean_keep": float(np.mean(keep)),
            "expected_beyond": float((1.0 - within_arr).sum()),
            "none_beyond": float(np.exp(np.log(np.clip(within_arr, 1e-300, 1.0)).sum()))}


def main() -> None:
    """``python -m bench.quality.noise_floor --excess 0.01``: :func:`excess_chance` over the ``auto+guarantee`` jobs of
    ``bench/quality/results/promise.json`` (issue 17's targets: ≥ 95 % kept, none beyond the tolerance by more than 0.01),
    written to ``bench/quality/results/noise_floor_excess.md``."""
    import argparse
    import json
    import time
    from pathlib import Path

    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("--excess", type=float, default=0.01)
    parser.add_argument("--method", default="auto+guarantee")
    args = parser.parse_args()
    results = Path(__file__).resolve().parent / "results"
    stored = json.loads((results / "promise.json").read_text())
    jobs = [j for j in stored["jobs"].values() if j["method"] == args.method and "test_gap" in j]
    out = excess_chance(jobs, stored["noise_floor"], args.excess)
    kept = float(np.mean([j["test_gap"] <= j["tolerance"] for j in jobs]))
    beyond = sum(j["test_gap"] > j["tolerance"] + args.excess for j in jobs)
    measured = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    md = [f"# What the promise grid's test splits allow: {args.method} jobs against a zero-gap model", "",
          f"Generated by `python -m bench.quality.noise_floor --excess {args.excess:g}` ({measured}) from "
          "`bench/quality/results/promise.json`: for each of its jobs, a model whose gap on the POPULATION is exactly 0 "
          "(every group at the pooled test rates of an unconstrained logistic regression), on that job's test "
          f"split ({REPETITIONS:,} simulated splits per job).", "",
          "| | zero-gap model (expected) | the jobs as measured |", "|---|---|---|",
          f"| jobs | {out['jobs']} | {len(jobs)} |",
          f"| share with test gap ≤ tolerance (target ≥ 95 %) | {out['mean_keep']:.0%} | {kept:.0%} |",
          f"| jobs beyond tolerance + {args.excess:g} (target 0) | {out['expected_beyond']:.1f} | {beyond} |",
          f"| probability that none is beyond tolerance + {args.excess:g} | {out['none_beyond']:.2g} | |", "",
          "A model with no gap at all on the population, predicting at these rates, would keep the tolerance on "
          "these test splits on the share in the first column and exceed it by more than the excess on the number "
          "of jobs given: both targets are out of reach of such models, whatever the method. (A constant model "
          "keeps every tolerance on every split; the service flags it as near-trivial instead of calling it fair.)"]
    (results / "noise_floor_excess.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()

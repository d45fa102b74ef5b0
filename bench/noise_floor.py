"""What the benchmarks' test splits can show (:mod:`solvers.fairness.noise_floor`), for ``bench.promise`` and
``bench.frontier``: per dataset and seed, the test split's group sizes and positive labels and the pooled test rates
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


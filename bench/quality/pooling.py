"""Where should an unverifiable tolerance's exact correction be fitted? (``python -m bench.quality.promise --pooling``)

:mod:`solvers.fairness.guarantee` fits the exact threshold correction of an unverifiable tolerance (nothing is
tested on the validation split) on train ∪ validation instead of on train alone. The corrected model's
population gap is then off by the sampling error of more rows (a band of width τ on n_g rows per group: about
√(Σ_g p_g(1 − p_g)/n_g) instead of the train rows' figure), so its test gap spreads less around the test split's
own noise. This measures it on many splits of a table, cheaply and without the solvers: per split seed, an
unconstrained logistic regression fitted on the training split, shifted per group to the tightest DP band
(:data:`~solvers.fairness.guarantee.TIGHTEST_ROWS` / the smallest group's rows, :func:`~solvers.fairness.enforce.group_offsets`)
fitted on train, or on train ∪ validation; per way: the test DP's root mean square, its largest value, the
share of splits whose test DP is ≤ each tolerance, the mean test accuracy. The same splits serve both ways, so
the difference is paired.
"""
from __future__ import annotations

import time
import warnings
from typing import Any, Callable

import numpy as np
import pandas as pd

from solvers.fairness.enforce import group_offsets
from solvers.fairness.guarantee import TIGHTEST_ROWS

WAYS = ("train", "train+validation")


def _dp(pred: np.ndarray, group: np.ndarray, n_groups: int) -> float:
    """The exact DP gap: max − min over the groups of the predicted-positive share."""
    counts = np.bincount(group, minlength=n_groups)
    rates = np.bincount(group, weights=pred, minlength=n_groups)[counts > 0] / counts[counts > 0]
    return float(rates.max() - rates.min())


def split_gaps(table: pd.DataFrame, spec: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """{way: (test DP, test accuracy)} of the tightest-band correction fitted on each way's rows (module docstring)."""
    from sklearn.linear_model import LogisticRegression

    from solvers import ProblemSpec, prepare

    data = prepare(table, ProblemSpec.model_validate(spec))
    train, val, test = data.splits["train"], data.splits["validation"], data.splits["test"]
    y, group, k = data.y, data.group, len(data.group_names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LogisticRegression(max_iter=2000).fit(data.X[train], y[train])
    z = model.decision_function(data.X).astype(np.float64)
    out = {}
    for way, rows in zip(WAYS, (train, np.concatenate([train, val]))):
        sizes = np.bincount(group[rows], minlength=k)
        width = TIGHTEST_ROWS / sizes[sizes > 0].min()
        b = group_offsets(z[rows], y[rows], group[rows], np.ones(len(rows), dtype=bool), k, width)
        shifted = z[test] + (0.0 if b is None else b[group[test]])
        out[way] = (_dp(shifted > 0, group[test], k), float(((shifted > 0) == (y[test] == 1)).mean()))
    return out


def pooling(table: pd.DataFrame, spec_of: Callable[[int], dict[str, Any]], seeds: list[int],
            tolerances: tuple[float, ...]) -> dict[str, Any]:
    """The module docstring's figures over ``seeds`` (``spec_of(seed)``: a job spec of that split)."""
    runs = [split_gaps(table, spec_of(seed)) for seed in seeds]
    out: dict[str, Any] = {"seeds": list(seeds), "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for way in WAYS:
        gaps = np.asarray([r[way][0] for r in runs])
        out[way] = {"rms_test_gap": float(np.sqrt(np.mean(gaps ** 2))), "max_test_gap": float(gaps.max()),
                    "kept": {str(t): float(np.mean(gaps <= t + 1e-12)) for t in tolerances},
                    "mean_test_accuracy": float(np.mean([r[way][1] for r in runs]))}
    return out


def report(results: dict[str, dict[str, Any]]) -> list[str]:
    """The report section: one row per dataset and way."""
    if not results:
        return []
    md = ["## An unverifiable tolerance's correction: fitted on train or on train ∪ validation (`--pooling`)", "",
          "An unconstrained logistic regression per split seed, shifted per group to the tightest DP band (2 rows of "
          "the smallest group) fitted on the rows of each way; the test DP over the seeds (the same splits both ways). "
          "`solvers.fairness.guarantee` now fits an unverifiable tolerance's correction on train ∪ validation.", "",
          "| dataset | seeds | fitted on | rms test DP | largest test DP | kept at " + " / ".join(
              next(iter(results.values()))["train"]["kept"]) + " | mean test accuracy | measured |",
          "|---|---|---|---|---|---|---|---|"]
    for dataset, r in sorted(results.items()):
        for way in WAYS:
            w = r[way]
            md.append(f"| {dataset} | {len(r['seeds'])} | {way} | {w['rms_test_gap']:.4f} | {w['max_test_gap']:.4f} | "
                      + " / ".join(f"{100 * v:.0f} %" for v in w["kept"].values())
                      + f" | {w['mean_test_accuracy']:.4f} | {r['measured_at']} |")
    return md + [""]

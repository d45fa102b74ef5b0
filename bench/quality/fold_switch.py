r"""Which model should carry thresholds fitted to out-of-fold scores: the model refitted on every fitting row, one
fold model per row, or the fold models' average?

``auto`` over gbdt fits demographic-parity thresholds to cross-fitted (out-of-fold) scores and stores them on the
base refitted on all fitting rows (:mod:`solvers.algorithms.group_thresholds`, "Which model is stored"). The safety
margin (:mod:`solvers.fairness.threshold_margin`) bounds the fitted rates' sampling error only; the move from the
fold models' scores to the refitted model's is left out, and on small groups the population gap then lands past ε
more often than the margin says. A model that scores each row with ONE fold model, chosen by a hash of the row, gives
rows no fit saw exactly the out-of-fold score distribution the thresholds were fitted to.

This replica runs outside the service and outside ``group_thresholds``, per bootstrap sample of the population
protocol (:mod:`bench.quality.population`: the same samples, encoding and split): K = 3 folds of train ∪ validation
(:func:`solvers.models.gbdt.cross_fit.fold_of`), the tuned base's LightGBM settings
(:data:`solvers.models.gbdt.threshold_base.TUNED`), deterministic thresholds at the margin of
:func:`solvers.fairness.threshold_margin.with_margin` (δ = 0.1) on the out-of-fold scores; then every row of the
table is scored (a) by the refitted model, (b) by the fold model a seeded per-row draw picks (a stand-in for a hash
of the row), (c) by the mean of the K fold models' raw scores (bagging: one LightGBM model of all their trees, leaf
values divided by K, models of the out-of-fold scores' size), and the exact population accuracy and gap of each is
reported. It differs from the service's job
(there the validation rows are one fold, scored by the base of the train split), so compare its two columns with
each other, not with ``population.md``.

Run::

    python -m bench.quality.fold_switch --table compas_race --seeds 0 1 2 3 4 5 6 7 8 9 10 11

Results: ``bench/quality/results/fold_switch.md`` (one section per table, rewritten by each run of it).
"""
from __future__ import annotations

import argparse
import os
import re
import time

import numpy as np

from bench.quality.population import POPULATIONS, RESULTS, Context, bootstrap_rows, population_metrics, spec_for

REPORT = RESULTS / "fold_switch.md"
FOLDS = 3
DELTA = 0.1
MODELS = ("refit", "fold per row", "fold average")


def one_sample(context: Context, table: str, tolerance: float, seed: int) -> dict[str, tuple[float, float]]:
    """{stored model (:data:`MODELS`): (population accuracy, population DP gap)} of one sample (module docstring)."""
    import lightgbm as lgb

    from solvers import ProblemSpec, prepare
    from solvers.fairness.threshold_lp import solve_thresholds
    from solvers.fairness.threshold_margin import denominators, with_margin
    from solvers.models.gbdt.cross_fit import fold_of
    from solvers.models.gbdt.threshold_base import TUNED

    pop = context.population(table)
    P, y_pop = pop["table"], pop["y"]
    names, g_pop = pop["groups"][table]["names"], pop["groups"][table]["index"]
    idx = bootstrap_rows(len(P), POPULATIONS[table].sample_rows, seed)
    data = prepare(P.iloc[idx].reset_index(drop=True),
                   ProblemSpec.model_validate(spec_for(table, "gbdt", "demographic_parity", tolerance, "default",
                                                       seed)))
    fit = np.concatenate([data.splits["train"], data.splits["validation"]])
    X, y = np.asarray(data.X, dtype=np.float64)[fit], np.asarray(data.y)[fit].astype(np.float64)
    g = np.asarray([names.index(n) for n in data.group_names])[np.asarray(data.group)[fit]]
    X_pop = np.asarray(data.encoder.transform(P), dtype=np.float64)
    params = {"objective": "binary", "learning_rate": 0.1, "num_leaves": TUNED["num_leaves"],
              "colsample_bytree": TUNED["colsample_bytree"], "verbosity": -1, "deterministic": True,
              "force_row_wise": True, "seed": seed}
    fold = fold_of(y, g, FOLDS, seed)
    oof, folds = np.zeros(len(y)), []
    for k in range(FOLDS):
        model = lgb.train(params, lgb.Dataset(X[fold != k], y[fold != k]), TUNED["n_estimators"])
        oof[fold == k] = model.predict(X[fold == k], raw_score=True)
        folds.append(model.predict(X_pop, raw_score=True))
    refit = lgb.train(params, lgb.Dataset(X, y), TUNED["n_estimators"]).predict(X_pop, raw_score=True)
    k_groups = len(names)
    rule, _ = with_margin(lambda fams: solve_thresholds(oof, y, g, k_groups, fams, randomized=False),
                          [("demographic_parity", tolerance)], denominators(y, g, k_groups), DELTA)
    t = rule.thresholds[:, 0][g_pop]
    pick = np.random.default_rng(10_000 + seed).integers(0, FOLDS, len(P))
    out = {}
    for name, scores in zip(MODELS, (refit, np.choose(pick, folds), np.mean(folds, axis=0))):
        m = population_metrics((scores > t).astype(np.float64), y_pop, g_pop, k_groups)
        out[name] = (m["accuracy"], m["demographic_parity"])
    return out


def section(table: str, tolerance: float, rows: list[dict]) -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [f"## {table}, demographic parity ≤ {tolerance}, {len(rows)} samples", "",
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load:.2f}.", "",
             "| stored model | kept ≤ ε | population accuracy | gap mean / worst |", "|---|---|---|---|"]
    for name in MODELS:
        acc = np.array([r[name][0] for r in rows])
        gap = np.array([r[name][1] for r in rows])
        lines.append(f"| {name} | {int((gap <= tolerance).sum())}/{len(rows)} | {acc.mean():.4f} | "
                     f"{gap.mean():.4f} / {gap.max():.4f} |")
    lines += ["", "| seed | " + " | ".join(f"{name}: accuracy / gap" for name in MODELS) + " |",
              "|---" * (len(MODELS) + 1) + "|"]
    lines += [f"| {r['seed']} | " + " | ".join(f"{r[name][0]:.4f} / {r[name][1]:.4f}" for name in MODELS) + " |"
              for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", default="compas_race", choices=sorted(POPULATIONS))
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(6)))
    args = parser.parse_args(argv)
    context = Context()
    rows = []
    for seed in args.seeds:
        rows.append({"seed": seed, **one_sample(context, args.table, args.tolerance, seed)})
        print(seed, {k: v for k, v in rows[-1].items() if k != "seed"}, flush=True)
    new = section(args.table, args.tolerance, rows)
    old = REPORT.read_text() if REPORT.exists() else "# Thresholds on out-of-fold scores: which model carries them " \
                                                      "(`python -m bench.quality.fold_switch`)\n"
    REPORT.write_text(with_section(old, args.table, new))
    print(new)


def with_section(report: str, table: str, new: str) -> str:
    """``report`` with its section of ``table`` (if any) removed and ``new`` appended."""
    kept = re.sub(rf"\n## {re.escape(table)}, .*?(?=\n## |\Z)", "", report, flags=re.S)
    return kept.rstrip() + "\n\n" + new


if __name__ == "__main__":
    main()

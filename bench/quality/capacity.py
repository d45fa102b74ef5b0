r"""Which gbdt base ``group_thresholds`` should boost: does the out-of-fold choice follow the population?

``base_model: "select"`` (:mod:`solvers.models.gbdt.threshold_base`, what ``auto`` asks over gbdt) cross-fits the
tuned base (100 trees of 15 leaves on half the features) and LightGBM's own defaults (100 trees of 31 leaves on
every feature) and stores the one whose rule is the more accurate on the validation fold when that is decisive, else
on every fitting row's out-of-fold score. Whether that is the
right one depends on the population: where future rows repeat fitting rows exactly, the memorising base wins on
them; where they are fresh, the tuned base generalises better. The population protocol's populations
(:mod:`bench.quality.population`) give both cases from one table P:

* ``bootstrap``: the protocol's sample (n rows drawn from P with replacement): P's rows are the population, a third
  to two thirds of them among the fitting rows;
* ``fresh``: n' = min(n, |P| / 2) rows drawn without replacement, judged on the rows of P not drawn (rows a fit never
  saw, as on a user's next data).

Each sample runs the job of the cell in process (:func:`solvers.run`, demographic parity ≤ 0.05, the protocol's
split) three times — ``tuned``, ``capacity`` (``base_model: "spec"`` with LightGBM's defaults) and ``select`` — and
reports each model's accuracy on its judging rows, the rule accuracies ``select`` compared and on which rows
(``enforcement.base_selection``: the validation fold, or every row out of fold, with the paired z), its choice,
whether the choice is the more accurate of the two there, and the seconds of each job. Run::

    python -m bench.quality.capacity --tables adult_sex bank_age compas_race --seeds 0 1 2 3

Results: ``bench/quality/results/capacity.md`` (rewritten by each run).
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from bench.quality.population import (POPULATIONS, RESULTS, Context, bootstrap_rows, population_metrics,
                                      sample_generator, spec_for)

REPORT = RESULTS / "capacity.md"
KIND, TOLERANCE = "demographic_parity", 0.05
VARIANTS = {
    "tuned": ({}, {"cross_fit": 3, "base_model": "tuned"}),
    "capacity": ({"n_estimators": 100}, {"cross_fit": 3, "base_model": "spec"}),
    "select": ({}, {"cross_fit": 3, "base_model": "select"}),
}


def sample_of(n_population: int, n: int, seed: int, draw: str) -> tuple[np.ndarray, np.ndarray]:
    """(the sample's rows of P, the judging rows of P: all of them, or those not drawn)."""
    if draw == "bootstrap":
        return bootstrap_rows(n_population, n, seed), np.arange(n_population)
    idx = sample_generator(seed).choice(n_population, size=min(n, n_population // 2), replace=False)
    return idx, np.setdiff1d(np.arange(n_population), idx)


def one(context: Context, table: str, seed: int, draw: str) -> dict:
    """The three jobs on one sample: accuracy on the judging rows, the choice and its out-of-fold accuracies."""
    import torch

    from fairsolve.model import FairModel
    from solvers import ProblemSpec, run
    from solvers.data.encoding import TableEncoder
    from worker.threads import solve_threads

    pop = context.population(table)
    P, y = pop["table"], pop["y"]
    groups = pop["groups"][table]
    idx, judged = sample_of(len(P), POPULATIONS[table].sample_rows, seed, draw)
    sample = P.iloc[idx].reset_index(drop=True)
    row: dict = {"table": table, "seed": seed, "draw": draw}
    for name, (model, params) in VARIANTS.items():
        fields = spec_for(table, "gbdt", KIND, TOLERANCE, "default", seed)
        fields["model"].update(model)
        fields["solver"] = {"name": "group_thresholds", "params": params}
        spec = ProblemSpec.model_validate(fields)
        with torch.random.fork_rng(devices=[]), solve_threads(spec):   # a worker's threads (worker.threads)
            start = time.perf_counter()
            out = run(sample, spec)
            seconds = time.perf_counter() - start
        fitted = FairModel.from_state(TableEncoder.from_dict(out.encoder), spec.model, out.state_dict)
        decision = (fitted.decision_function(P.iloc[judged]) > 0).astype(np.float64)
        metrics = population_metrics(decision, y[judged], groups["index"][judged], len(groups["names"]))
        row[name] = {"accuracy": metrics["accuracy"], "gap": metrics[KIND], "seconds": seconds}
        if name == "select":
            row["selection"] = out.enforcement["base_selection"]
    better = "capacity" if row["capacity"]["accuracy"] > row["tuned"]["accuracy"] else "tuned"
    row["right"] = row["selection"]["chosen"] == better
    return row


def markdown(rows: list[dict]) -> list[str]:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    md = ["# Which gbdt base: the out-of-fold choice against the population (`python -m bench.quality.capacity`)",
          "", *[" ".join(part.split()).replace(" * ", "\n* ") + "\n" for part in __doc__.split("\n\n")[1:3]],
          f"Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load:.2f}; {KIND} ≤ {TOLERANCE}. "
          "Accuracy on the judging rows (bootstrap: every row of P; fresh: P's rows not drawn).", "",
          "| table | draw | seed | tuned | capacity | select | judged on: tuned / capacity (z) | chosen | right |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["selection"]
        md.append(f"| {r['table']} | {r['draw']} | {r['seed']} | {r['tuned']['accuracy']:.4f} | "
                  f"{r['capacity']['accuracy']:.4f} | {r['select']['accuracy']:.4f} | {s.get('rows', 'out_of_fold')}: "
                  f"{s['tuned']:.4f} / {s['capacity']:.4f} ({s.get('z', float('nan')):.2f}) | {s['chosen']} | "
                  f"{'yes' if r['right'] else '**no**'} |")
    md += ["", "Means per table and draw (accuracy; the choice right in k of n samples; decided on the validation "
           "fold in k of n; median seconds of each job, in process):", "",
           "| table | draw | tuned | capacity | select | right | on validation | seconds: tuned / capacity / select |",
           "|---|---|---|---|---|---|---|---|"]
    for key in dict.fromkeys((r["table"], r["draw"]) for r in rows):
        part = [r for r in rows if (r["table"], r["draw"]) == key]
        mean = {v: float(np.mean([r[v]["accuracy"] for r in part])) for v in VARIANTS}
        wall = {v: float(np.median([r[v]["seconds"] for r in part])) for v in VARIANTS}
        early = sum(r["selection"].get("rows") == "validation" for r in part)
        md.append(f"| {key[0]} | {key[1]} | {mean['tuned']:.4f} | {mean['capacity']:.4f} | {mean['select']:.4f} | "
                  f"{sum(r['right'] for r in part)} of {len(part)} | {early} of {len(part)} | {wall['tuned']:.2f} / "
                  f"{wall['capacity']:.2f} / {wall['select']:.2f} |")
    return md + [""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", nargs="+", default=["adult_sex", "bank_age", "compas_race"],
                        choices=sorted(POPULATIONS))
    parser.add_argument("--draws", nargs="+", default=["bootstrap", "fresh"], choices=["bootstrap", "fresh"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    args = parser.parse_args(argv)
    context, rows = Context(), []
    for table in args.tables:
        for draw in args.draws:
            for seed in args.seeds:
                rows.append(one(context, table, seed, draw))
                r = rows[-1]
                print(f"{table} {draw} {seed}: tuned {r['tuned']['accuracy']:.4f} capacity "
                      f"{r['capacity']['accuracy']:.4f} select {r['select']['accuracy']:.4f} "
                      f"({r['selection']['chosen']}, right: {r['right']})", flush=True)
    REPORT.write_text("\n".join(markdown(rows)) + "\n")
    print(REPORT.read_text())


if __name__ == "__main__":
    main()

r"""Where a job's population gap comes from: the rows of the population its sample holds, and the others.

The population protocol (:mod:`bench.quality.population`) scores a job's model on every row of a FINITE table P
from which the job's sample was drawn with replacement. P's rows are then of two kinds: those the sample holds in
its fitting rows (train ∪ validation: "seen", scored by a model boosted on them) and the rest ("unseen"). Each
part's rates are means over its rows, so P's rate of a group is the mixture of the parts' with the group's seen
share; the sample is drawn alike from every group, so these shares are equal up to sampling noise (about a third
of bank's rows in each group), and since a band's spread max_g R_g − min_g R_g is convex in the rates, with
equal shares

    gap(P) ≤ max(gap(seen), gap(unseen)).

This module runs the job of a cell in process (:func:`solvers.run`, the spec of the protocol), scores P with the
job's model (:class:`fairsolve.FairModel`, the same rule as the ONNX export) and reports, per sample, the gap on P,
on the seen and on the unseen rows, the rule's gap on the rows it was fitted on (``enforcement.gaps``) and the
share of the sample's draws whose row is drawn more than once ("twins": bootstrap copies of one row of P), and the
cell's mean accuracy on P. With ``--without-replacement`` the sample is drawn without replacement (no twins), the
same size.

Run::

    python -m bench.quality.population_parts --table bank_age --kind equalized_odds --seeds 0 1 2 3 4 5
    python -m bench.quality.population_parts --table bank_age --kind equalized_odds --seeds 0 1 2 3 4 5 \
        --without-replacement
    python -m bench.quality.population_parts --table bank_age --kind equalized_odds --seeds 0 1 2 3 4 5 \
        --thresholds '{"cross_fit": 3, "base_model": "spec", "cross_fit_model": "refit"}'
    python -m bench.quality.population_parts --table adult_sex --kind demographic_parity --mode guarantee \
        --seeds 0 1 2 3 --split-slack 0         # the guarantee, its safety share at the smallest shortfall

Results are appended to ``bench/quality/results/population_parts.md`` (one section per run).
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from bench.quality.population import (POPULATIONS, RESULTS, Context, bootstrap_rows, population_metrics,
                                      sample_generator, spec_for)

REPORT = RESULTS / "population_parts.md"


def sample_rows(table: str, seed: int, n_population: int, with_replacement: bool) -> np.ndarray:
    """The protocol's bootstrap sample of ``table`` (or, without replacement, as many distinct rows), seeded."""
    n = POPULATIONS[table].sample_rows
    if with_replacement:
        return bootstrap_rows(n_population, n, seed)
    return sample_generator(seed).choice(n_population, size=n, replace=False)


def parts(table: str, kind: str, tolerance: float, seed: int, with_replacement: bool = True,
          context: Context | None = None, thresholds: dict | None = None, mode: str = "default") -> dict:
    """One sample's job in process and its gap on P, on P's seen rows and on its unseen rows (module docstring);
    ``thresholds``: run ``group_thresholds`` with these params instead of ``auto``; ``mode`` ``"guarantee"``: the
    job asks for the guarantee at 0.95 (its ``met`` is reported)."""
    import torch

    from fairsolve.model import FairModel
    from solvers import ProblemSpec, run
    from solvers.data.encoding import TableEncoder

    pop = (context or Context()).population(table)
    P, y = pop["table"], pop["y"]
    groups = pop["groups"][table]
    group, k = groups["index"], len(groups["names"])
    idx = sample_rows(table, seed, len(P), with_replacement)
    fields = spec_for(table, "gbdt", kind, tolerance, mode, seed)
    if thresholds is not None:
        fields["solver"] = {"name": "group_thresholds", "params": thresholds}
    spec = ProblemSpec.model_validate(fields)
    with torch.random.fork_rng(devices=[]):
        out = run(P.iloc[idx].reset_index(drop=True), spec)
    model = FairModel.from_state(TableEncoder.from_dict(out.encoder), spec.model, out.state_dict)
    decision = (model.decision_function(P) > 0).astype(np.float64)
    fitting = np.setdiff1d(np.arange(len(idx)), np.asarray(out.predictions["row"]))   # train ∪ validation draws
    seen = np.zeros(len(P), dtype=bool)
    seen[idx[fitting]] = True
    _, counts = np.unique(idx, return_counts=True)

    def gap(mask: np.ndarray) -> float:
        return population_metrics(decision[mask], y[mask], group[mask], k)[kind]

    fitted = (out.enforcement or {}).get("gaps") or {}
    everyone = population_metrics(decision, y, group, k)
    return {"seed": seed, "population": everyone[kind], "accuracy": everyone["accuracy"], "seen": gap(seen),
            "unseen": gap(~seen),
            "seen_share": float(seen.mean()), "fitted": fitted.get(kind),
            "twins": float(counts[counts > 1].sum() / len(idx)),
            "met": None if out.guarantee is None else bool(out.guarantee.get("met"))}


def markdown(table: str, kind: str, tolerance: float, with_replacement: bool, rows: list[dict],
             thresholds: dict | None = None, split_slack: float | None = None) -> list[str]:
    draw = "bootstrap (with replacement)" if with_replacement else "without replacement"
    solver = "auto" if thresholds is None else f"group_thresholds {json.dumps(thresholds)}"
    met = [r["met"] for r in rows if r.get("met") is not None]
    if met:
        solver += ", guarantee 0.95" + ("" if split_slack is None else f" (SPLIT_SLACK {split_slack:g})")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    kept = sum(r["population"] <= tolerance for r in rows)
    accuracy = float(np.mean([r["accuracy"] for r in rows]))
    md = [f"## {table}, gbdt, {solver}, {kind} ≤ {tolerance}, samples {draw}", "",
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load:.2f}; kept on P in {kept} of {len(rows)}; "
          f"mean accuracy on P {accuracy:.4f}" + (f"; guarantee met in {sum(met)} of {len(met)}" if met else "") + ".",
          "", "| seed | gap on P | seen rows | unseen rows | seen share of P | gap fitted | draws with a twin |",
          "|---|---|---|---|---|---|---|"]
    for r in rows:
        fitted = "—" if r["fitted"] is None else f"{r['fitted']:.4f}"
        md.append(f"| {r['seed']} | {r['population']:.4f} | {r['seen']:.4f} | {r['unseen']:.4f} | "
                  f"{r['seen_share']:.2f} | {fitted} | {r['twins']:.2f} |")
    return md + [""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", default="bank_age", choices=sorted(POPULATIONS))
    parser.add_argument("--kind", default="equalized_odds")
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    parser.add_argument("--without-replacement", action="store_true")
    parser.add_argument("--thresholds", type=json.loads, default=None,
                        help='group_thresholds params (JSON) instead of auto, e.g. \'{"cross_fit": 3, "base_model": '
                             '"spec", "cross_fit_model": "refit"}\' (auto\'s gbdt setting with the refitted model)')
    parser.add_argument("--mode", default="default", choices=["default", "guarantee"])
    parser.add_argument("--split-slack", type=float, default=None,
                        help="guarantee: the safety share rule's slack (solvers.fairness.promise.SPLIT_SLACK; 0: the "
                             "share of the smallest shortfall), to measure the constant")
    args = parser.parse_args(argv)
    if args.split_slack is not None:
        from solvers.fairness import promise

        promise.SPLIT_SLACK = args.split_slack
    context = Context()
    rows = []
    for seed in args.seeds:
        rows.append(parts(args.table, args.kind, args.tolerance, seed, not args.without_replacement, context,
                          args.thresholds, args.mode))
        r = rows[-1]
        print(f"seed {seed}: P {r['population']:.4f}  seen {r['seen']:.4f}  unseen {r['unseen']:.4f}", flush=True)
    md = markdown(args.table, args.kind, args.tolerance, not args.without_replacement, rows, args.thresholds,
                  args.split_slack)
    if not REPORT.exists():
        REPORT.write_text("# Population gap by part (`python -m bench.quality.population_parts`)\n\n"
                          + __doc__.split("Run::")[0].split("\n\n", 1)[1].strip() + "\n\n")
    with REPORT.open("a") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()

"""PLADA's Communities & Crime experiment (its Section 5.3, Figure 3): intersectional fairness over
overlapping threshold groups, and the cost of the membership path on a partition (Adult).

1. C&C: ``communities_crime.csv`` (the 105-column cleaned copy), label ``class`` (ViolentCrimesPerPop ≥ 0.7),
   features every other numeric column except ``ViolentCrimesPerPop`` (the label's source), ``Black`` (a
   threshold of ``racepctblack``), ``fold``, ``state`` and ``communityname``; standardised on train. Groups: 10
   cuts on each of ``racepctblack``, ``racePctHisp``, ``racePctAsian`` (their 10%, 20%, ..., 100% quantiles on
   the whole table; duplicates merged), a row in every group whose cuts it reaches (``x ≥ cut`` on all three),
   groups with more than 1% of the rows kept. Model: 5 hidden ReLU layers of ``--width`` units; objective and
   constraint: hinge, PLADA eq. (18) one row per group (``intersectional``, ε = ``--tolerance``); PLADA with
   Table 2's neural-network row except η = ``--eta`` (Table 2's η = 0.1 is run too, for ``--probe`` iterations:
   with one multiplier per group it diverges); full batch, so one iteration is one epoch. Split 60/20/20 (train/validation/
   test) stratified on the label, seed 0. Measured through :func:`solvers.solve`: time per iteration (a run
   without tracing), then the exact violation max_g (L_g − L) − ε on train and validation every iteration
   (a traced run; the tracer keeps its share of the run's time, so some iterations are skipped).
2. Adult (label income, sensitive race × sex, 10 groups, one-sided ``loss_gap`` logistic): G and its VJP on the
   32,561 rows through the partition index and through the same partition as a one-hot membership (median of
   ``--repeats``). Run it from another checkout (its directory as the current one) to time that checkout's
   partition path; the membership timing is skipped where ``solvers.membership`` does not exist.

Writes ``bench/results/communities_crime.json`` and ``.md``. Run: ``python -m bench.communities_crime``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from bench.datasets import adult, data_dir

RESULTS = Path(__file__).resolve().parent / "results"
GROUP_COLUMNS = ["racepctblack", "racePctHisp", "racePctAsian"]
NOT_FEATURES = ["class", "ViolentCrimesPerPop", "Black", "fold", "state", "communityname"]


def communities_crime() -> pd.DataFrame:
    return pd.read_csv(data_dir() / "communities_crime.csv")


def cc_problem(width: int, tolerance: float, seed: int):
    from solvers.constraints.intersectional import Intersectional
    from solvers.encoding import TableEncoder
    from solvers.membership import threshold_membership
    from solvers.models import mlp
    from solvers.problem import Problem
    from solvers.splitting import split_indices

    table = communities_crime()
    y = table["class"].to_numpy(dtype=np.int64)
    features = [c for c in table.columns if c not in NOT_FEATURES]
    cuts = {c: sorted({round(float(q), 6) for q in np.quantile(table[c], np.arange(1, 11) / 10)})
            for c in GROUP_COLUMNS}
    membership = threshold_membership(table, {"thresholds": cuts, "min_group_fraction": 0.01})
    train, val, test = split_indices(y, 0.2, 0.2, seed)
    encoder = TableEncoder(features).fit(table, train)

    def split(rows, constraints):
        return Problem(encoder.transform(table, rows), y[rows], None, membership.names,
                       model_factory=lambda d: mlp(d, [width] * 5), model_type="mlp", objective="hinge",
                       constraints=constraints, device="cpu", membership=membership.take(rows))

    family = Intersectional(tolerance, {"min_group_fraction": 0.01})
    info = {"rows": len(table), "columns": table.shape[1], "features": len(features), "cuts": cuts,
            "groups_of_1000_grid": int(np.prod([len(c) for c in cuts.values()])),
            "groups_over_1pct": membership.n_groups, "membership_pairs": int(membership.rows.size),
            "split": {"train": len(train), "validation": len(val), "test": len(test)}}
    return split(train, [family]), split(val, []), split(test, []), family, info


def cc_run(iterations: int, width: int, tolerance: float, seed: int, eta: float, probe: int) -> dict:
    from solvers import solve
    from solvers.fairness.exact import exact_gaps
    from solvers.models import scores_in_blocks
    from solvers.observer import RecordingObserver

    train, val, test, family, info = cc_problem(width, tolerance, seed)
    info["constraints"] = len(family.names)
    paper = solve(train, "plada", RecordingObserver(), max_iterations=probe, time_limit_s=600, seed=seed)
    solver = {"name": "plada", "params": {"eta": eta}}
    plain = RecordingObserver()
    result = solve(train, solver, plain, max_iterations=iterations, time_limit_s=600, seed=seed)
    per_iteration = np.diff([0.0] + [r.elapsed_s for r in plain.records])
    traced = RecordingObserver(exact_every=1)
    solve(train, solver, traced, max_iterations=iterations, time_limit_s=600, seed=seed, validation=val)

    def rate_error(problem) -> tuple[float, float, float]:
        with torch.no_grad():
            logits = scores_in_blocks(result.model, problem.X).double().numpy()
        y = problem.y.numpy()
        gap = exact_gaps([family], y, logits, None, problem.group_names, membership=problem.membership)[0]
        return float(((logits > 0) != (y > 0.5)).mean()), float(gap - tolerance), float((logits > 0).mean())

    trace = [{"iteration": r.iteration, "train": r.exact["train"][0] - tolerance,
              "validation": r.exact["validation"][0] - tolerance} for r in traced.records if r.exact]
    surrogate = [r.max_violation for r in plain.records]
    errors = {name: rate_error(p) for name, p in (("train", train), ("validation", val), ("test", test))}
    late = [t for t in trace if t["iteration"] > iterations // 2]
    return {
        **info, "iterations": iterations, "width": width, "tolerance": tolerance, "seed": seed,
        "table2_eta": {"eta": paper.config.eta, "status": paper.status, "iterations": paper.iterations,
                       "last_max_violation": paper.last.max_violation if paper.last else None},
        "config": result.config.model_dump(),
        "time_per_iteration_ms": {"median": 1e3 * float(np.median(per_iteration)),
                                  "mean": 1e3 * float(per_iteration.mean())},
        "solver_time_s": result.solver_time_s,
        "surrogate_max_violation": {"first": surrogate[0], "last": surrogate[-1],
                                    "max_over_last_half": max(surrogate[len(surrogate) // 2:])},
        "exact_violation_trace": trace,
        "exact_violation_second_half": {split: max(t[split] for t in late) if late else None
                                        for split in ("train", "validation")},
        "final": {name: {"error_rate": e, "exact_violation": v, "positive_rate": p, "label_rate": float(q.y.mean())}
                  for (name, (e, v, p)), q in zip(errors.items(), (train, val, test))},
        "violated_groups_train_final": int(sum(g > 1e-12 for g in plain.records[-1].constraints)),
    }


def adult_partition(repeats: int) -> dict:
    """G and its VJP (w = 1) through the partition index vs the one-hot membership of the same groups."""
    from solvers.constraints.loss_gap import LossGap
    from solvers.encoding import build_groups
    from solvers.problem import Problem

    table = adult()
    group, names = build_groups(table, ["race", "sex"])
    y = (table["income"].str.strip() == ">50K").to_numpy(dtype=np.float32)
    X = torch.randn(len(table), 4)
    scores = torch.randn(len(table))

    def timing(**membership) -> float:
        family = LossGap(0.02, {"loss": "logistic"})
        p = Problem(X, y, group if not membership else None, names, constraints=[family], device="cpu", **membership)
        w = torch.ones(len(family.names))
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            for _ in range(20):
                family.surrogate(scores, p.data)
                family.vjp(scores, p.data, w)
            times.append((time.perf_counter() - started) / 20)
        return 1e6 * statistics.median(times)

    out = {"rows": len(table), "groups": len(names), "partition_us": timing()}
    try:
        from solvers.membership import Membership
    except ImportError:
        return out
    out["one_hot_membership_us"] = timing(membership=Membership.from_partition(group, names))
    return out


def markdown(res: dict) -> str:
    cc, ad = res["communities_crime"], res["adult_partition"]
    trace = cc["exact_violation_trace"]
    picks = [trace[i] for i in sorted({round(x) for x in np.linspace(0, len(trace) - 1, min(len(trace), 12))})]
    rows = "\n".join(f"| {t['iteration']} | {t['train']:+.4f} | {t['validation']:+.4f} |" for t in picks)
    final = "\n".join(f"| {k} | {v['error_rate']:.4f} | {v['positive_rate']:.4f} | {v['label_rate']:.4f} | "
                      f"{v['exact_violation']:+.4f} |" for k, v in cc["final"].items())
    late = cc["exact_violation_second_half"]
    return f"""# PLADA on Communities & Crime: overlapping intersectional groups (PLADA Sec. 5.3, Fig. 3)

Command: `{res['command']}` ({res['when']}, CPU, torch {res['torch']}, {torch.get_num_threads()} thread(s); a shared
machine of {res['cpu_count']} cores with load average {res['load_average_before']:.1f} before and
{res['load_average_after']:.1f} after: every time below is inflated by that contention).

Data: {cc['rows']} rows, {cc['columns']} columns in the cleaned copy, {cc['features']} features;
split {cc['split']}. Grid: {cc['groups_of_1000_grid']} threshold groups (cuts per column:
{ {k: len(v) for k, v in cc['cuts'].items()} }), **{cc['groups_over_1pct']}** with more than 1% of the rows
(paper: 535 of 1000), {cc['membership_pairs']} membership pairs (a row is in
{cc['membership_pairs'] / cc['rows']:.0f} groups on average); {cc['constraints']} constraints on train (> 1% of
the training rows).

Table 2's neural-network row as is (η = {cc['table2_eta']['eta']}): **{cc['table2_eta']['status']}** after
{cc['table2_eta']['iterations']} iterations (last max violation {cc['table2_eta']['last_max_violation']:.3g}): with
one multiplier per group, λ_0 = ρ(G(θ_0) + u_0) on {cc['constraints']} rows weighs ∂G far above ∇F.

PLADA (Table 2, neural-network row, η lowered): {json.dumps({k: cc['config'][k] for k in ('eta', 'tau', 'alpha', 'beta', 'gamma0', 'kappa')})},
MLP 5 × {cc['width']} ReLU, hinge objective and constraint, ε = {cc['tolerance']}, {cc['iterations']} full-batch
iterations (= epochs).

**Time per iteration: {cc['time_per_iteration_ms']['median']:.2f} ms** (median; mean
{cc['time_per_iteration_ms']['mean']:.2f} ms; {cc['solver_time_s']:.2f} s in all). The paper reports no time for
this experiment.

Surrogate max violation max(0, max_g G_g) on train: first iteration {cc['surrogate_max_violation']['first']:.4f},
last {cc['surrogate_max_violation']['last']:.4f}, worst over the second half
{cc['surrogate_max_violation']['max_over_last_half']:.4f}; groups violated at the end:
{cc['violated_groups_train_final']} of {cc['constraints']}.

Exact violation max_g (L_g − L) − ε (hinge, ≤ 0 = feasible) on {len(trace)} traced iterations (worst over the
second half: train {late['train']:+.4f}, validation {late['validation']:+.4f}):

| iteration | train | validation |
|---|---|---|
{rows}

Final model:

| split | error rate | predicted positive | label positive | exact violation |
|---|---|---|---|---|
{final}

Adult partition cost ({ad['rows']} rows, {ad['groups']} groups, G + VJP of one-sided `loss_gap`, µs, median):
partition index {ad['partition_us']:.0f}, the same partition as a one-hot membership
{ad.get('one_hot_membership_us', float('nan')):.0f}.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--eta", type=float, default=0.01)
    parser.add_argument("--probe", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--adult-only", action="store_true", help="print the Adult timing only (another checkout)")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    if args.adult_only:
        print(json.dumps(adult_partition(args.repeats)))
        return
    res = {"command": "python -m bench.communities_crime " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "adult_only"),
        "when": time.strftime("%Y-%m-%d", time.gmtime()), "torch": torch.__version__,
        "load_average_before": os.getloadavg()[0], "cpu_count": os.cpu_count(),
        "communities_crime": cc_run(args.iterations, args.width, args.tolerance, args.seed, args.eta, args.probe),
        "adult_partition": adult_partition(args.repeats)}
    res["load_average_after"] = os.getloadavg()[0]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "communities_crime.json").write_text(json.dumps(res, indent=1))
    (RESULTS / "communities_crime.md").write_text(markdown(res))
    print(markdown(res))


if __name__ == "__main__":
    main()

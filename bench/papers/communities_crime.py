"""PLADA's Communities & Crime experiment (its Section 5.3, Appendix E, Figure 3): intersectional fairness over
overlapping threshold groups, and the cost of the membership path on a partition (Adult).

The paper states the model (5 hidden ReLU layers), the constraint (eq. 18, hinge, one-sided), the groups (ten
thresholds on each of the percentages of Black, Hispanic and Asian population, groups above 1 % of the data) and
Table 2's step sizes, and says it "followed the hyperparameter settings of ... Narasimhan et al. (2020)", the
baseline of its Figure 3. Everything else is taken from that baseline's published C&C set-up (google-research,
``intersectional fairness with many constraints``):

1. Data: ``communities_crime.csv`` (the 105-column cleaned copy). Label: ``ViolentCrimesPerPop`` ≥ its 70th
   percentile on the whole table (30.5 % positive; the copy's own ``class`` is ≥ 0.7, 6.1 %). Features: every
   numeric column except the label's source, ``class``, ``Black`` (a threshold of ``racepctblack``), ``fold``,
   ``state`` and ``communityname`` (99), standardised on train. Split 50/25/25: scikit-learn's
   ``train_test_split`` twice (test 0.25, then validation 1/3 of the rest) on ``RandomState(121212)``, the
   baseline's seed and calls.
2. Groups: cuts at the 5 %, 15 %, ..., 95 % quantiles of each of ``racepctblack``, ``racePctAsian``,
   ``racePctHisp`` on the training rows; a row is in group (t_b, t_a, t_h) iff it is strictly above all three
   (``x > t``: each cut is moved to the next float up for :func:`solvers.membership.threshold_membership`'s
   ``x ≥ cut``; repeated quantiles are one cut); a group is kept iff it holds more than 1 % of the rows of each
   of train, validation and test.
3. Problem: hinge objective, ``intersectional`` (eq. 18) with ε = ``--tolerance`` (the baseline's 0.01; the
   paper gives none); MLP with 5 hidden ReLU layers of ``--width`` (width not given); full batch, so one iteration
   is one epoch.
4. Runs (all ``--iterations`` long unless said): PLADA with Table 2's neural-network row and the constraint term
   of step (9) as eq. 18's expectation over groups (``row_weights`` 'auto' = 'mean'); the same with
   Algorithm 1's plain sum (``row_weights`` 'sum') at Table 2's η (``--probe`` iterations: it diverges) and at
   ``--eta-sum``; the linear model (the baseline's model; Table 2's 5.3 row); plain gradient descent without
   the constraint (``erm``, gd, lr = η) as the reference. Feasibility: each run evaluated every
   ``--trace-every`` iterations on the three splits: the hinge violation max_g (L_g − L) − ε
   (:func:`solvers.fairness.exact.exact_gaps`) and the baseline's error-rate violation max_g (err_g − err) − ε with
   its 99th percentile over the groups; beside it, what chance gives (errors drawn independently of the groups at
   the final error rate, :func:`noise_floor`). Timing: untraced runs of ``--time-iterations``, the solvers in turn,
   ``--time-repeats`` times (median wall time per iteration).
5. Adult (label income, sensitive race × sex, 10 groups, one-sided ``loss_gap`` logistic): G and its VJP on the
   32,561 rows through the partition index and through the same partition as a one-hot membership (median of
   ``--repeats``). ``--adult-only`` prints it alone (run it from another checkout to time that one).

Writes ``bench/papers/results/communities_crime.json`` and ``.md``. Run: ``python -m bench.papers.communities_crime``.
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

from bench.common.datasets import adult, data_dir
from solvers.observer import Observer

RESULTS = Path(__file__).resolve().parent / "results"
GROUP_COLUMNS = ["racepctblack", "racePctAsian", "racePctHisp"]  # the baseline's order
NOT_FEATURES = ["class", "ViolentCrimesPerPop", "Black", "fold", "state", "communityname"]
SEED = 121212  # the baseline's split seed
QUANTILES = np.arange(0.05, 1.0, 0.1)


def communities_crime() -> pd.DataFrame:
    return pd.read_csv(data_dir() / "communities_crime.csv")


def baseline_split(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(train, validation, test) row positions as the baseline draws them (50/25/25)."""
    from sklearn.model_selection import train_test_split

    state = np.random.RandomState(SEED)
    rest, test = train_test_split(np.arange(n), test_size=0.25, random_state=state)
    train, val = train_test_split(rest, test_size=1.0 / 3.0, random_state=state)
    return train, val, test


def threshold_groups(table: pd.DataFrame, splits: tuple[np.ndarray, ...], min_fraction: float):
    """The grid of strict thresholds (module docstring, 2.), kept where every split holds > min_fraction."""
    from solvers.membership import Membership, threshold_membership

    train = splits[0]
    cuts = {c: sorted({float(np.nextafter(np.quantile(table[c].to_numpy(dtype=float)[train], q), np.inf))
                       for q in QUANTILES}) for c in GROUP_COLUMNS}
    grid = threshold_membership(table, {"thresholds": cuts})  # every non-empty group of the grid
    keep = np.ones(grid.n_groups, dtype=bool)
    for rows in splits:
        keep &= grid.take(rows).counts > min_fraction * len(rows)
    renumber = np.full(grid.n_groups, -1, dtype=np.int64)
    renumber[keep] = np.arange(int(keep.sum()))
    pair = renumber[grid.groups] >= 0
    kept = Membership(grid.rows[pair], renumber[grid.groups[pair]], grid.n_rows,
                      [n for n, k in zip(grid.names, keep) if k])
    values = table[GROUP_COLUMNS].to_numpy(dtype=float)
    everything = np.arange(len(table))
    variants = {  # the baseline's list (repeated quantiles as separate groups), then readings that could give 535
        "baseline (x > t, > 1 % of each split)": grid_count(values, train, QUANTILES, True, splits, min_fraction),
        "x >= t": grid_count(values, train, QUANTILES, False, splits, min_fraction),
        "> 1 % of the whole table": grid_count(values, train, QUANTILES, True, (everything,), min_fraction),
        "> 1 % of train only": grid_count(values, train, QUANTILES, True, (train,), min_fraction),
        "deciles 10 %, ..., 100 %": grid_count(values, train, np.arange(1, 11) / 10, True, splits, min_fraction),
    }
    return kept, cuts, {"group_count_variants": variants, "distinct_cuts": {c: len(v) for c, v in cuts.items()},
                        "non_empty_groups": grid.n_groups}


def grid_count(values: np.ndarray, train: np.ndarray, quantiles: np.ndarray, strict: bool,
               splits: tuple[np.ndarray, ...], min_fraction: float) -> int:
    """Groups of the 3-column threshold grid (cuts: ``quantiles`` of the training rows, repeated cuts kept) holding
    more than ``min_fraction`` of the rows of every split; counted at once (n × cuts per column, an einsum)."""
    cuts = [np.quantile(values[train, j], quantiles) for j in range(values.shape[1])]
    keep = np.ones([len(c) for c in cuts], dtype=bool)
    for rows in splits:
        above = [(values[rows, j, None] > c[None, :]) if strict else (values[rows, j, None] >= c[None, :])
                 for j, c in enumerate(cuts)]
        keep &= np.einsum("ia,ib,ic->abc", *(a.astype(np.int64) for a in above)) > min_fraction * len(rows)
    return int(keep.sum())


def cc_setting(width: int, tolerance: float):
    """Train / validation / test problems of the setting (module docstring, 1.–3.)."""
    from solvers.constraints.intersectional import Intersectional
    from solvers.encoding import TableEncoder
    from solvers.models import linear, mlp
    from solvers.problem import Problem

    table = communities_crime()
    source = table["ViolentCrimesPerPop"]
    y = (source >= source.quantile(0.7)).to_numpy(dtype=np.int64)
    features = [c for c in table.columns if c not in NOT_FEATURES]
    splits = baseline_split(len(table))
    membership, cuts, counts = threshold_groups(table, splits, 0.01)
    encoder = TableEncoder(features).fit(table, splits[0])
    factories = {"mlp": lambda d: mlp(d, [width] * 5), "linear": linear}

    def problems(model_type: str) -> dict:
        family = Intersectional(tolerance, {"min_group_fraction": 0.0})  # the 1 % filter is applied above
        return {name: Problem(encoder.transform(table, rows), y[rows], None, membership.names,
                              model_factory=factories[model_type], model_type=model_type, objective="hinge",
                              constraints=[family] if name == "train" else [], device="cpu",
                              membership=membership.take(rows))
                for name, rows in zip(("train", "validation", "test"), splits)} | {"family": family}

    info = {"rows": len(table), "columns": table.shape[1], "features": len(features),
            "label_threshold": float(source.quantile(0.7)), "label_rate": float(y.mean()),
            "split": {n: len(r) for n, r in zip(("train", "validation", "test"), splits)},
            "cuts": cuts, "groups": membership.n_groups, "membership_pairs": int(membership.rows.size), **counts,
            "group_rows": {n: _quartiles(membership.take(r).counts)
                           for n, r in zip(("train", "validation", "test"), splits)}}
    return problems, info


def _quartiles(counts: np.ndarray) -> dict:
    return {"min": int(counts.min()), "median": float(np.median(counts)), "max": int(counts.max())}


def split_metrics(model, problem, family) -> dict:
    """Error rate, positive rate, hinge violation and the baseline's error-rate violations on one split."""
    from solvers.fairness.exact import exact_gaps
    from solvers.models import scores_in_blocks

    with torch.no_grad():
        logits = scores_in_blocks(model, problem.X).double().numpy()
    y = problem.y.numpy()
    wrong = ((logits > 0) != (y > 0.5)).astype(float)
    rows, groups = problem.membership.pairs
    counts = problem.membership.counts
    group_error = np.bincount(groups, weights=wrong[rows], minlength=counts.size) / counts
    violation = group_error - wrong.mean() - family.tolerance
    hinge = exact_gaps([family], y, logits, None, problem.group_names, membership=problem.membership)[0]
    return {"error_rate": float(wrong.mean()), "positive_rate": float((logits > 0).mean()),
            "hinge_violation": float(hinge - family.tolerance), "error_violation": float(violation.max()),
            "error_violation_p99": float(np.quantile(violation, 0.99)),
            "groups_violated": float((violation > 0).mean())}


class SplitTrace(Observer):
    """Every ``every`` iterations (and the last), :func:`split_metrics` of the model being trained on each split."""

    def __init__(self, model, problems: dict, family, every: int, last: int) -> None:
        self.model, self.problems, self.family, self.every, self.last = model, problems, family, every, last
        self.points: list[dict] = []

    def on_iteration(self, record) -> None:
        k = record.iteration
        if k == 1 or k % self.every == 0 or k == self.last:
            self.model.eval()
            self.points.append({"iteration": k, "objective": record.objective,
                                **{name: split_metrics(self.model, p, self.family)
                                   for name, p in self.problems.items()}})
            self.model.train()


def noise_floor(problem, rate: float, tolerance: float, draws: int, seed: int) -> dict:
    """The error-rate violation a classifier fair in the population shows on this split by chance: errors drawn
    i.i.d. at ``rate`` for every row (independent of the groups), max_g and 99th percentile of err_g − err − ε per
    draw, their median and 90th percentile over ``draws`` (one sparse product Mᵀ E for all draws)."""
    errors = (np.random.default_rng(seed).random((problem.n_samples, draws)) < rate).astype(float)
    membership = problem.membership
    violation = (membership.csr().T.astype(float) @ errors) / membership.counts[:, None] \
        - errors.mean(axis=0)[None, :] - tolerance
    worst, p99 = violation.max(axis=0), np.quantile(violation, 0.99, axis=0)
    share = (violation > 0).mean(axis=0)
    return {"rate": rate, "draws": draws, "max_median": float(np.median(worst)), "max_p90": float(np.quantile(worst, 0.9)),
            "p99_median": float(np.median(p99)), "p99_p90": float(np.quantile(p99, 0.9)),
            "violated_median": float(np.median(share)), "violated_p90": float(np.quantile(share, 0.9))}


def timings(cases: dict, iterations: int, repeats: int, seed: int) -> dict:
    """Median wall time per iteration of each (problems, solver) case, the cases run in turn ``repeats`` times so
    that the machine's load falls on all of them alike (untraced runs of ``iterations``)."""
    from solvers import solve
    from solvers.observer import RecordingObserver

    seen: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, (problems, solver) in cases.items():
            observer = RecordingObserver()
            solve(problems["train"], solver, observer, max_iterations=iterations, time_limit_s=900, seed=seed)
            seen[name] += list(np.diff([0.0] + [r.elapsed_s for r in observer.records]))
    return {name: {"median_ms": 1e3 * float(np.median(v)), "mean_ms": 1e3 * float(np.mean(v)), "iterations": len(v)}
            for name, v in seen.items()}


def run(problems: dict, solver: dict, iterations: int, every: int, seed: int) -> dict:
    """One solver on the setting: a plain run (status, surrogate violations), then the same run traced."""
    from solvers import solve
    from solvers.observer import RecordingObserver

    train, family = problems["train"], problems["family"]
    plain = RecordingObserver()
    result = solve(train, solver, plain, max_iterations=iterations, time_limit_s=900, seed=seed)
    out = {"solver": solver, "status": result.status, "iterations": result.iterations,
           "config": result.config.model_dump(), "solver_time_s": result.solver_time_s,
           "last_surrogate_max_violation": plain.records[-1].max_violation if plain.records else None}
    if result.status == "diverged":
        return out | {"message": result.message, "surrogate_max_violation": [r.max_violation for r in plain.records]}
    per_iteration = np.diff([0.0] + [r.elapsed_s for r in plain.records])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = train.make_model()
    splits = {k: problems[k] for k in ("train", "validation", "test")}
    trace = SplitTrace(model, splits, family, every, iterations)
    solve(train, solver, trace, max_iterations=iterations, time_limit_s=900, seed=seed, model=model)
    final = trace.points[-1]
    late = [p for p in trace.points if p["iteration"] > iterations // 2]
    return out | {
        "full_run_ms_per_iteration": 1e3 * float(np.median(per_iteration)),
        "trace": trace.points,
        "final": {k: final[k] for k in splits},
        "worst_second_half": {k: {m: max(p[k][m] for p in late) for m in ("hinge_violation", "error_violation")}
                              for k in splits},
        "violated_rows_train_final": int(sum(g > 1e-12 for g in plain.records[-1].constraints)),
    }


def cc_runs(args) -> dict:
    problems, info = cc_setting(args.width, args.tolerance)
    mlp, lin = problems("mlp"), problems("linear")
    info["constraints"] = len(mlp["family"].names)
    table2 = {"eta": 0.1, "tau": 0.01, "alpha": 10.0, "beta": 0.5, "gamma0": 0.1}
    cases = {
        "plada_expectation": (mlp, {"name": "plada", "params": {"row_weights": "auto"}}),
        "plada_sum_table2": (mlp, {"name": "plada", "params": {"row_weights": "sum"}}),
        "plada_sum_small_eta": (mlp, {"name": "plada", "params": {"row_weights": "sum", "eta": args.eta_sum}}),
        "plada_linear": (lin, {"name": "plada", "params": {**table2, "row_weights": "auto"}}),
        "unconstrained_gd": (mlp, {"name": "erm", "params": {"optimizer": "gd", "lr": table2["eta"]}}),
    }
    runs = {name: run(problems_, solver, args.probe if name == "plada_sum_table2" else args.iterations,
                      args.trace_every, args.seed) for name, (problems_, solver) in cases.items()}
    timed = timings({k: v for k, v in cases.items() if runs[k]["status"] != "diverged"}, args.time_iterations,
                    args.time_repeats, args.seed)
    for name, t in timed.items():
        runs[name]["time_per_iteration_ms"] = t
    final = runs["plada_expectation"]["final"]
    floor = {split: noise_floor(mlp[split], final[split]["error_rate"], args.tolerance, 400, args.seed)
             for split in ("train", "validation", "test")}
    return {**info, "iterations": args.iterations, "width": args.width, "tolerance": args.tolerance,
            "runs": runs, "scale_at_start": start_scale(mlp, args.seed), "noise_floor": floor,
            "timing": {"iterations": args.time_iterations, "repeats": args.time_repeats}}


def start_scale(problems: dict, seed: int) -> dict:
    """At θ_0 (the seeded MLP): ‖∇F‖ against ‖∂Gᵀλ_0‖ (sum) and ‖∂Gᵀ(λ_0/m)‖ (mean), λ_0 = ρG(θ_0) (u_0 = μ_0 = 0)."""
    from solvers.algorithms.base import gradient

    train = problems["train"]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = train.make_model()
    params = list(model.parameters())
    at = train.evaluate(model)
    lam = (10.0 / (1.0 + 10.0 * 0.5)) * at.constraints.detach()
    norm = lambda gs: float(torch.sqrt(sum((g * g).sum() for g in gs)))  # noqa: E731
    grad_f = norm(gradient(at.objective, params))
    grad_g = norm(gradient((lam * train.evaluate(model).constraints).sum(), params))
    return {"grad_F": grad_f, "grad_lambda_G_sum": grad_g, "grad_lambda_G_mean": grad_g / lam.numel(),
            "lambda0_max": float(lam.max()), "lambda0_mean": float(lam.mean())}


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


def main() -> None:
    from bench.papers.communities_crime_report import markdown

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--probe", type=int, default=20, help="iterations of the diverging sum form at Table 2's η")
    parser.add_argument("--eta-sum", type=float, default=0.01, help="η of the sum form's second run")
    parser.add_argument("--trace-every", type=int, default=20)
    parser.add_argument("--time-iterations", type=int, default=300, help="iterations of each timed run")
    parser.add_argument("--time-repeats", type=int, default=3, help="timed runs of each solver, in turn")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--tolerance", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--adult-only", action="store_true", help="print the Adult timing only (another checkout)")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    if args.adult_only:
        print(json.dumps(adult_partition(args.repeats)))
        return
    res = {"command": "python -m bench.papers.communities_crime " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "adult_only"),
        "when": time.strftime("%Y-%m-%d", time.gmtime()), "torch": torch.__version__, "threads": args.threads,
        "load_average_before": os.getloadavg()[0], "cpu_count": os.cpu_count(),
        "communities_crime": cc_runs(args), "adult_partition": adult_partition(args.repeats)}
    res["load_average_after"] = os.getloadavg()[0]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "communities_crime.json").write_text(json.dumps(res, indent=1))
    (RESULTS / "communities_crime.md").write_text(markdown(res))
    print(markdown(res))


if __name__ == "__main__":
    main()

"""Reproduction of the partial-fairness paper's pSP results (He, Huang, Yao & Lin, Table 3/4 partial columns):
IDCA on a9a (I = [5%, 30%], Female = feature 72) and bank (I = [0%, 25%], age 25–60 vs other, 60/20/20),
linear model with cross terms h_w(ξ) = ⟨w, (1, ξ, γ, γξ)⟩, logistic loss, |Î| = 10, clipped-linear σ.

For every seed: the unconstrained model (ERM), then IDCA for each κ. Test accuracy and pSP fairness
1 − max pSP^I (exact metric of :mod:`solvers.partial.metrics`), mean and 95% CI (t) over seeds, beside
the paper's numbers. Writes ``bench/results/idca_reproduction.json`` / ``.md``.

**The paper's "Unconstrained" row is 1 − full SP (KS on I = [0, 1]), not 1 − pSP^I.** Its value
(a9a 0.5970) is identical in the I = [0, 100%] and I = [5%, 30%] columns of Tables 3/4; our
unconstrained logistic model (acc 0.849, as the paper's 0.8499) has 1 − KS = 0.595 / 0.598 (seeds 0/1)
but 1 − pSP^[5%,30%] = 0.161 / 0.162 with our estimator — and no estimator of pSP^I we tried
(kept-sample KS, the eq. (62) plug-in over all thresholds: 0.162; bottom-up percentiles: 0.20;
pooled percentiles: 0.98; the G.4.1 identity on a 10-point grid: < 0) gives 0.597, while the
constrained rows track 1 − κ (κ = 0.28 → 0.70, 0.1 → 0.87), as pSP^I does. So the unconstrained row
is not comparable to the others; we report both metrics (``psp_fairness`` and ``ks_fairness``).

Run: ``python -m bench.idca_reproduction --dataset a9a --seeds 5 --K 100 --T 200``. The paper picks
(T, ε) then K on validation accuracy (G.2.2); ``--select`` does that on a reduced grid.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from scipy import stats

from solvers import ConstraintSpec, Problem, solve
from solvers.partial import partial_dp, partial_sp

RESULTS = Path(__file__).resolve().parent / "results"

PAPER = {  # Table 4, |Î| = 10 column (= Table 3 partial): κ -> (pSP fairness, accuracy)
    "a9a": {"interval": [0.05, 0.30], "unconstrained": (0.5970, 0.8499),
            "points": {0.28: (0.7017, 0.8492), 0.2: (0.7841, 0.8479), 0.1: (0.8732, 0.8445),
                       0.05: (0.9310, 0.8393), 0.01: (0.9752, 0.8311)}},
    "bank": {"interval": [0.0, 0.25], "unconstrained": (0.4366, 0.9015),
             "points": {0.3: (0.6582, 0.9027), 0.22: (0.7376, 0.9028), 0.08: (0.8954, 0.9025),
                        0.01: (0.9634, 0.8983)}},
}


def cross_terms(X: np.ndarray, g: np.ndarray) -> np.ndarray:
    """(ξ, γ, γξ); the model's bias is the constant 1: dimension 2d + 2."""
    g = g.astype(np.float32)[:, None]
    return np.hstack([X, g, g * X]).astype(np.float32)


def load(dataset: str, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    if dataset == "a9a":
        from bench.datasets import a9a

        d = a9a()
        perm = rng.permutation(len(d["y_train"]))
        n_val = len(perm) // 10                              # train split 90/10 into train/validation
        tr, va = perm[n_val:], perm[:n_val]
        X, y, g = cross_terms(d["X_train"], d["group_train"]), d["y_train"], d["group_train"]
        return {"train": (X[tr], y[tr], g[tr]), "validation": (X[va], y[va], g[va]),
                "test": (cross_terms(d["X_test"], d["group_test"]), d["y_test"], d["group_test"]),
                "group_names": d["group_names"]}
    if dataset == "bank":
        from bench.datasets import bank_additional
        from solvers import ProblemSpec, prepare

        table = bank_additional()
        spec = ProblemSpec(target="y", positive_label="yes", sensitive=["age"],
                           group_rules={"age": {"ranges": {"25-60": [25, 61]}, "other": "other ages"}},
                           split={"test": 0.2, "validation": 0.2, "seed": seed})
        p = prepare(table, spec)
        gamma = (np.asarray(p.group_names)[p.group] == "25-60").astype(np.int64)
        X = cross_terms(p.X.astype(np.float32), gamma)
        out = {name: (X[idx], p.y[idx], gamma[idx]) for name, idx in p.splits.items()}
        out["group_names"] = ["other ages", "25-60"]
        return out
    raise ValueError(dataset)


def evaluate(model, split, interval) -> dict:
    X, y, g = split
    with torch.no_grad():
        h = model(torch.as_tensor(X)).double().numpy()
    return {"accuracy": float(((h > 0) == (y == 1)).mean()),
            "psp_fairness": 1.0 - partial_sp(h, g, interval, 2)["value"],
            "pdp_fairness": 1.0 - partial_dp(h, g, interval, 0.0, 2)["value"],
            "ks_fairness": 1.0 - partial_sp(h, g, [0.0, 1.0], 2)["value"]}


def run_point(data, interval, kappa, K, T, eps, metric="partial_statistical_parity") -> tuple[dict, float]:
    X, y, g = data["train"]
    constraints = [] if kappa is None else [ConstraintSpec(type=metric, tolerance=kappa, interval=interval).build()]
    problem = Problem(X=X, y=y, group=g, group_names=data["group_names"], constraints=constraints, device="cpu")
    t0 = time.perf_counter()
    if kappa is None:
        result = solve(problem, {"name": "erm", "params": {"lr": 0.05}}, max_iterations=1000)
    else:
        result = solve(problem, {"name": "idca", "params": {"inner_iterations": T, "epsilon": eps}},
                       max_iterations=K)
    elapsed = time.perf_counter() - t0
    out = {s: evaluate(result.model, data[s], interval) for s in ("validation", "test")}
    return out, elapsed


def ci95(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return float(v.mean()), float("nan")
    return float(v.mean()), float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="a9a", choices=sorted(PAPER))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--kappas", type=float, nargs="*", default=None)
    ap.add_argument("--K", type=int, default=100)
    ap.add_argument("--T", type=int, default=200)
    ap.add_argument("--eps", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    paper = PAPER[args.dataset]
    interval = paper["interval"]
    kappas = args.kappas or sorted(paper["points"], reverse=True)
    rows: dict = {"unconstrained": []}
    times: dict = {}
    for seed in range(args.seeds):
        data = load(args.dataset, seed)
        res, _ = run_point(data, interval, None, 0, 0, 0)
        rows["unconstrained"].append(res["test"])
        for kappa in kappas:
            res, elapsed = run_point(data, interval, kappa, args.K, args.T, args.eps)
            rows.setdefault(kappa, []).append(res["test"])
            times.setdefault(kappa, []).append(elapsed)
            print(f"{args.dataset} seed {seed} κ={kappa}: {res['test']} ({elapsed:.1f}s)", flush=True)
    summary = []
    for key, vals in rows.items():
        acc = ci95([v["accuracy"] for v in vals])
        fair = ci95([v["psp_fairness"] for v in vals])
        ks = ci95([v["ks_fairness"] for v in vals])
        ref = paper["unconstrained"] if key == "unconstrained" else paper["points"].get(key)
        entry = {"kappa": key, "accuracy": acc, "psp_fairness": fair, "ks_fairness": ks, "seeds": len(vals),
                 "paper": None if ref is None else {"psp_fairness": ref[0], "accuracy": ref[1]},
                 "seconds_per_point": None if key == "unconstrained" else float(np.mean(times[key]))}
        if ref is not None:
            f = ks if key == "unconstrained" else fair  # the paper's unconstrained row is 1 − KS (see above)
            entry["within_0.01_at_equal_or_better_fairness"] = bool(acc[0] >= ref[1] - 0.01 and f[0] >= ref[0])
            entry["dominates"] = bool(acc[0] >= ref[1] and f[0] >= ref[0])
        summary.append(entry)
    RESULTS.mkdir(exist_ok=True)
    out = {"dataset": args.dataset, "interval": interval, "K": args.K, "T": args.T, "epsilon": args.eps,
           "threads": args.threads, "points": summary}
    path = RESULTS / f"idca_reproduction_{args.dataset}.json"
    path.write_text(json.dumps(out, indent=2, default=str))
    lines = [f"# IDCA pSP reproduction — {args.dataset}, I = {interval}, K = {args.K}, T = {args.T}, ε = {args.eps}",
             "", "| κ | seeds | test accuracy (ours) | 1 − pSP (ours) | 1 − KS (ours) | paper acc | paper 1 − pSP | s / point |",
             "|---|---|---|---|---|---|---|---|"]
    for e in summary:
        p = e["paper"] or {}
        lines.append(f"| {e['kappa']} | {e['seeds']} | {e['accuracy'][0]:.4f} ± {e['accuracy'][1]:.4f} | "
                     f"{e['psp_fairness'][0]:.4f} ± {e['psp_fairness'][1]:.4f} | {e['ks_fairness'][0]:.4f} | {p.get('accuracy', '')} | "
                     f"{p.get('psp_fairness', '')} | {e['seconds_per_point'] or ''} |")
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""Reproduction of Yao, Lin & Yang (AISTATS 2023) Figs. 1–4 (reduced) and the speed claims.

    python -m bench.auc_reproduction --datasets a9a --variants group inter --kappas 0.01 0.05 --seeds 0 1

Preprocessing (documented; the paper does not state it):
* a9a: the LIBSVM 123 binary features as given (γ = +1 Female, feature 72, kept as a feature); original
  train/test split; 10% of train as validation (seeded).
* bank: ``bank-additional-full.csv``; numeric columns standardised on train, categoricals one-hot,
  ``duration`` dropped (known only after the call); γ = +1 for age 25–60; 60/20/20 split (seeded).
* COMPAS: ProPublica-filtered rows (``bench.datasets.compas``), race (Caucasian = γ +1 vs other),
  the kept columns one-hot / standardised; 60/20/20 split.
Every method: linear model, batch 100, c₁ = 0.5, c₂ = 1, same iteration budget; output = the iterate
selected on validation (exact constraint feasible, best AUC) — the paper's rule. Results: test AUC and
test fairness (mean ± standard error over seeds) written to ``bench/results/auc_reproduction.{json,md,html}``.
Speed: one level_set run on a9a (wall time) and per-epoch cost at 10k and 40k rows for level_set
(O(n), one pass of single-sample steps in batches of 100) and the pairwise surrogate gradient over all
pairs (O(n₊n₋), what a full pass of a pairwise method costs).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from bench.datasets import a9a, bank, compas
from solvers import Problem, solve
from solvers.auc import AUCParity, auc, fairness_gap
from solvers.algorithms.proxy_lagrangian import pair_auc

RESULTS = Path(__file__).resolve().parent / "results"
METHODS = {  # method -> (solver name, params, variants it applies to (paper App. E.2))
    "level_set": ("level_set", {}, ("group", "inter", "intra")),
    "proxy_lagrangian": ("proxy_lagrangian", {}, ("group", "inter", "intra")),
    "correlation_penalty": ("correlation_penalty", {"lam": 1.0}, ("group",)),
    "auc_postprocess": ("auc_postprocess", {}, ("group", "inter")),
}


def _standardise(X, train):
    mu, sd = X[train].mean(0), X[train].std(0)
    return (X - mu) / np.where(sd > 0, sd, 1.0)


def load(name: str, seed: int):
    """(X, y, group, splits) with group 0 = γ = +1 (protected)."""
    rng = np.random.default_rng(seed)
    if name == "a9a":
        d = a9a()
        X = np.vstack([d["X_train"], d["X_test"]]).astype(np.float32)
        y = np.r_[d["y_train"], d["y_test"]].astype(np.int64)
        group = 1 - np.r_[d["group_train"], d["group_test"]].astype(np.int64)   # 0 = Female (γ = +1)
        n_tr = len(d["y_train"])
        perm = rng.permutation(n_tr)
        nv = n_tr // 10
        return X, y, group, {"train": perm[nv:], "validation": perm[:nv], "test": np.arange(n_tr, len(X))}
    import pandas as pd
    if name == "bank":
        t = bank().drop(columns=["duration"])
        y = (t.pop("y") == "yes").to_numpy(np.int64)
        group = np.where((t["age"] >= 25) & (t["age"] <= 60), 0, 1)
    elif name == "compas":
        t = compas()
        y = t.pop("two_year_recid").to_numpy(np.int64)
        group = np.where(t["race"] == "Caucasian", 0, 1)
    else:
        raise ValueError(name)
    X = pd.get_dummies(t, dtype=np.float32).to_numpy(np.float32)
    perm = rng.permutation(len(y))
    a, b = int(0.6 * len(y)), int(0.8 * len(y))
    splits = {"train": perm[:a], "validation": perm[a:b], "test": perm[b:]}
    X = _standardise(X, splits["train"]).astype(np.float32)
    return X, y, group, splits


def run_one(data, method, variant, kappa, seed, iterations):
    X, y, group, sp = data
    solver, params, _ = METHODS[method]
    fam = AUCParity(kappa, {"variant": variant, "n_boot": 0})
    tr, va, te = sp["train"], sp["validation"], sp["test"]
    prob = Problem(X=X[tr], y=y[tr], group=group[tr], group_names=["prot", "rest"], constraints=[fam], device="cpu")
    val = Problem(X=X[va], y=y[va], group=group[va], group_names=["prot", "rest"], device="cpu")
    t0 = time.perf_counter()
    res = solve(prob, {"name": solver, "params": params}, max_iterations=iterations, seed=seed, validation=val)
    wall = time.perf_counter() - t0
    with torch.no_grad():
        s = res.model(torch.as_tensor(X[te])).double().numpy()
    return {"auc": auc(y[te], s), "fairness": fairness_gap(y[te], s, group[te] == 0, variant), "time_s": wall,
            "iterations": res.iterations}


def timing(data, sizes=(10_000, 40_000)):
    X, y, group, sp = data
    rows = []
    for n in sizes:
        idx = sp["train"][:n] if len(sp["train"]) >= n else np.resize(sp["train"], n)
        fam = AUCParity(0.05, {"variant": "group", "n_boot": 0})
        prob = Problem(X=X[idx], y=y[idx], group=group[idx], group_names=["prot", "rest"], constraints=[fam],
                       device="cpu")
        steps = n // 100
        t0 = time.perf_counter()
        solve(prob, {"name": "level_set", "params": {"inner_iterations": 10 ** 6, "select_every": 10 ** 6}},
              max_iterations=steps, validation=None)
        ls = time.perf_counter() - t0
        model = prob.make_model()
        torch.nn.init.normal_(model.net.weight, std=0.1)
        t0 = time.perf_counter()
        h = model(prob.X)
        pos = prob.y > 0.5
        # one full pass of a pairwise method: the sigmoid pair surrogate's gradient over all n₊n₋ pairs, chunked
        total = h.new_zeros(())
        hp, hn = h[pos], h[~pos]
        for chunk in torch.split(torch.arange(hp.numel()), 512):
            total = total + torch.sigmoid(hp[chunk][:, None] - hn[None, :]).sum()
        total.backward()
        pw = time.perf_counter() - t0
        rows.append({"rows": n, "level_set_epoch_s": ls, "pairwise_epoch_s": pw, "pairs": int(pos.sum()) * int((~pos).sum())})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", nargs="+", default=["a9a", "bank", "compas"])
    ap.add_argument("--variants", nargs="+", default=["group", "inter", "intra"])
    ap.add_argument("--kappas", nargs="+", type=float, default=[0.005, 0.01, 0.02, 0.05, 0.1])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--iterations", type=int, default=3000)
    ap.add_argument("--no-timing", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = {"config": vars(args), "runs": [], "timing": None}
    for ds in args.datasets:
        cache = {s: load(ds, s) for s in args.seeds}
        if ds == "a9a" and not args.no_timing:
            out["timing"] = timing(cache[args.seeds[0]])
        for variant in args.variants:
            for method in args.methods:
                if variant not in METHODS[method][2]:
                    continue
                for kappa in args.kappas:
                    for seed in args.seeds:
                        r = run_one(cache[seed], method, variant, kappa, seed, args.iterations)
                        out["runs"].append({"dataset": ds, "variant": variant, "method": method, "kappa": kappa,
                                            "seed": seed, **r})
                        print(json.dumps(out["runs"][-1]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "auc_reproduction.json").write_text(json.dumps(out, indent=1))
    write_markdown(out)


def write_markdown(out):
    import pandas as pd
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    runs = pd.DataFrame(out["runs"])
    lines = ["# AUC fairness reproduction (Yao, Lin & Yang 2023) — measured", "",
             f"Config: `{json.dumps(out['config'])}`", ""]
    if len(runs):
        agg = runs.groupby(["dataset", "variant", "method", "kappa"]).agg(
            auc=("auc", "mean"), auc_se=("auc", lambda v: v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else np.nan),
            fair=("fairness", "mean"),
            fair_se=("fairness", lambda v: v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else np.nan),
            time_s=("time_s", "mean"), n=("seed", "count")).reset_index()
        lines += ["| dataset | variant | method | κ | test AUC | ±se | test fairness | ±se | time s | seeds |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in agg.itertuples():
            lines.append(f"| {r.dataset} | {r.variant} | {r.method} | {r.kappa} | {r.auc:.4f} | {r.auc_se:.4f} | "
                         f"{r.fair:.4f} | {r.fair_se:.4f} | {r.time_s:.1f} | {r.n} |")
        panels = sorted(set(zip(agg.dataset, agg.variant)))
        fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[f"{d} / {v}" for d, v in panels])
        for c, (d, v) in enumerate(panels, 1):
            for m, frame in agg[(agg.dataset == d) & (agg.variant == v)].groupby("method"):
                fig.add_trace(go.Scatter(x=frame.fair, y=frame.auc, mode="markers+lines", name=m, legendgroup=m,
                                         showlegend=c == 1, error_x={"array": frame.fair_se},
                                         error_y={"array": frame.auc_se}), row=1, col=c)
        fig.update_xaxes(title_text="test fairness gap")
        fig.update_yaxes(title_text="test AUC")
        fig.write_html(RESULTS / "auc_reproduction.html", include_plotlyjs="cdn")
    if out["timing"]:
        lines += ["", "## Cost per epoch (a9a features, CPU, 1 thread)", "",
                  "| rows | level_set epoch (s) | pairwise full pass (s) | pairs |", "|---|---|---|---|"]
        for t in out["timing"]:
            lines.append(f"| {t['rows']} | {t['level_set_epoch_s']:.3f} | {t['pairwise_epoch_s']:.3f} | {t['pairs']} |")
    (RESULTS / "auc_reproduction.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

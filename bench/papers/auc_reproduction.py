"""Reproduction of Yao, Lin & Yang (AISTATS 2023), Figs. 1–4, and of its speed claims.

    python -m bench.papers.auc_reproduction tune  --datasets a9a bank compas --part PART.jsonl
    python -m bench.papers.auc_reproduction grid  --datasets a9a --seeds 0 1 2 3 4 --part PART.jsonl
    python -m bench.papers.auc_reproduction timing --part PART.jsonl [--rerun]
    python -m bench.papers.auc_reproduction report PART.jsonl [PART.jsonl ...]

``tune``/``grid``/``timing`` append one JSON line per run to ``--part`` (a run already there is skipped,
so an interrupted grid resumes); ``report`` merges part files into
``bench/papers/results/auc_reproduction.{json,md,html}`` (tables, Pareto frontiers as a Plotly
HTML, the domination analysis). The committed ``auc_reproduction.json`` keeps every run's record with its key,
so it is itself a source: ``tune``/``grid``/``timing`` skip the runs it holds and take its tuning runs
(``--tuned-from``, default: that file), and ``report bench/papers/results/auc_reproduction.json PART.jsonl ...`` merges
it with new part files (for a key in several sources, the first source wins). The prose at the top of the
Markdown is ``bench/papers/results/auc_reproduction.commentary.md`` (``--commentary``, default: that file).

Data and preprocessing (the paper states only the splits; everything else is our choice):

* a9a (LIBSVM, Adult): the 123 binary features as given; γ = +1 for Female (feature 72, kept as a feature);
  the original train/test split, 10% of train (seeded) as validation ("%90" in the paper is a misprint).
* bank (``bank-additional-full.csv``, 41,188 rows): ``duration`` dropped (known only after the call);
  numeric columns (``age`` included) standardised with the training mean/std; categoricals one-hot (0/1);
  γ = +1 for 25 ≤ age ≤ 60, appended as a 0/1 feature; label ``y == "yes"``. Split 60/20/20 (seeded).
* COMPAS (``compas-scores-two-years.csv``): ProPublica's filter (``bench.common.datasets.compas``: |days between
  screening and arrest| ≤ 30, ``is_recid != -1``, ``c_charge_degree != "O"``, ``score_text != "N/A"``;
  6,172 of 7,214 rows); features sex, age, age_cat, race, juv_fel_count, juv_misd_count, juv_other_count,
  priors_count, c_charge_degree (numeric standardised on train, categoricals one-hot, 18 columns; race
  one-hot included); γ = +1 for Caucasian; label ``two_year_recid`` = 1. Split 60/20/20 (seeded).
  The paper's Table 2 lists 11,757 × 14 for COMPAS; it does not say which file or filter it used.

Models: ``linear`` h(ξ) = ξᵀw + b (zero start, the paper's x⁽⁰⁾ = 0) and ``mlp`` — one hidden layer of 10
sigmoid units (the paper's "two-layer network with 10 hidden neurons and sigmoid activations"), PyTorch's
seeded initialisation. level_set runs the linear model, iqrc the MLP; every baseline runs both.

Settings (paper App. E.3 where it says something): c₁ = 0.5, c₂ = 1 (c₁ from {0.5, 1}; 0.5 satisfies Lemma 2),
mini-batch 100 for every method, the same number of steps for every method (``--iterations``); step sizes
η_t = c/√(t+1) with c ∈ {0.01, 0.1, 1} chosen on validation AUC (``tune``: seed 0, variant ``group``, κ =
``--tune-kappa``; the paper tunes per κ — we tune once per dataset × model × method to fit the CPU budget);
τ_t = τ/√(t+1) of level_set/iqrc is not given in the paper: tuned from {1, 10, 100} the same way;
θ = 1.1 (the paper's θ = 1 is excluded by its own theory); ρ̂ = 1e-5 for iqrc. Output of every method:
the iterate feasible for the exact constraint on validation with the best validation AUC (App. E.3).
correlation_penalty: λ ∈ ``--lambdas``, one run per λ; for each κ the (λ, iterate) feasible on validation
with the best validation AUC. auc_postprocess: one unconstrained training per seed and model, then the
(ω₁, ω₂) grid of the paper per variant and κ on validation. Which method runs which variant follows
App. E.2 (correlation penalty: group only; post-processing: group and inter).
Each frontier point: mean ± standard error over seeds of test AUC and test fairness.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bench.common.datasets import bank_additional, compas
from solvers import Problem, solve
from solvers.algorithms.auc_postprocess import choose_shift, shift_table
from solvers.auc import AUCParity, auc, fairness_gap
from solvers.models import ScoreModel, linear

RESULTS = Path(__file__).resolve().parent / "results"
VARIANTS = ("group", "inter", "intra")
KAPPAS = (0.005, 0.01, 0.02, 0.05, 0.1)
LAMBDAS = (0.1, 0.3, 1.0, 3.0, 10.0)
STEP_GRID = (0.01, 0.1, 1.0)
TAU_GRID = (1.0, 10.0, 100.0)
#: (method, model) -> (solver, step-size parameter, variants (paper App. E.2))
METHODS = {   # in run order: the linear model first, the pairwise (slowest) method last
    ("level_set", "linear"): ("level_set", "eta", VARIANTS),
    ("correlation_penalty", "linear"): ("correlation_penalty", "lr", ("group",)),
    ("auc_postprocess", "linear"): ("auc_postprocess", "lr", ("group", "inter")),
    ("proxy_lagrangian", "linear"): ("proxy_lagrangian", "lr", VARIANTS),
    ("iqrc", "mlp"): ("iqrc", "eta", VARIANTS),
    ("correlation_penalty", "mlp"): ("correlation_penalty", "lr", ("group",)),
    ("auc_postprocess", "mlp"): ("auc_postprocess", "lr", ("group", "inter")),
    ("proxy_lagrangian", "mlp"): ("proxy_lagrangian", "lr", VARIANTS),
}
OURS = {"linear": "level_set", "mlp": "iqrc"}


def mlp10(n_features: int) -> nn.Module:
    """The paper's network: 10 sigmoid hidden units, one output."""
    return ScoreModel(nn.Sequential(nn.Linear(n_features, 10), nn.Sigmoid(), nn.Linear(10, 1))).float()


FACTORIES = {"linear": linear, "mlp": mlp10}


# ---------------------------------------------------------------------------------------------- data
def _standardise(X, train):
    mu, sd = X[train].mean(0), X[train].std(0)
    return (X - mu) / np.where(sd > 0, sd, 1.0)


def _tabular(t, numeric, gamma, y, seed):
    """One-hot categoricals (0/1), numeric columns standardised on the train split, γ appended as 0/1;
    60/20/20 split. Returns (X, y, group, splits), group 0 = γ = +1."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    a, b = int(0.6 * len(y)), int(0.8 * len(y))
    splits = {"train": perm[:a], "validation": perm[a:b], "test": perm[b:]}
    num = _standardise(t[numeric].to_numpy(np.float64), splits["train"])
    cat = pd.get_dummies(t.drop(columns=numeric), dtype=np.float64).to_numpy()
    X = np.column_stack([num, cat, gamma.astype(np.float64)]).astype(np.float32)
    return X, y, np.where(gamma, 0, 1), splits


def load(name: str, seed: int):
    """(X, y, group, splits) with group 0 = γ = +1 (protected); see the module docstring."""
    if name == "a9a":
        from bench.common.datasets import a9a

        d = a9a()
        X = np.vstack([d["X_train"], d["X_test"]]).astype(np.float32)
        y = np.r_[d["y_train"], d["y_test"]].astype(np.int64)
        group = 1 - np.r_[d["group_train"], d["group_test"]].astype(np.int64)   # 0 = Female (γ = +1)
        n_tr = len(d["y_train"])
        perm = np.random.default_rng(seed).permutation(n_tr)
        nv = n_tr // 10
        return X, y, group, {"train": perm[nv:], "validation": perm[:nv], "test": np.arange(n_tr, len(X))}
    if name == "bank":
        t = bank_additional().drop(columns=["duration"])
        y = (t.pop("y") == "yes").to_numpy(np.int64)
        numeric = [c for c in t.columns if t[c].dtype.kind in "if"]
        return _tabular(t, numeric, t["age"].between(25, 60).to_numpy(), y, seed)
    if name == "compas":
        t = compas()
        y = t.pop("two_year_recid").to_numpy(np.int64)
        numeric = ["age", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count"]
        return _tabular(t, numeric, (t["race"] == "Caucasian").to_numpy(), y, seed)
    raise ValueError(name)


# ---------------------------------------------------------------------------------------------- runs
def _problems(data, model, kappa, variant, split="train"):
    X, y, group, sp = data
    fam = AUCParity(kappa, {"variant": variant, "n_boot": 0})
    mk = dict(group_names=["prot", "rest"], model_factory=FACTORIES[model], model_type=model, device="cpu")
    tr, va = sp[split], sp["validation"]
    return (Problem(X=X[tr], y=y[tr], group=group[tr], constraints=[fam], **mk),
            Problem(X=X[va], y=y[va], group=group[va], **mk))


def _scores(model, X):
    with torch.no_grad():
        return model(torch.as_tensor(X)).double().numpy()


def _metrics(data, s_val, s_test, variant):
    X, y, group, sp = data
    va, te = sp["validation"], sp["test"]
    return {"val_auc": auc(y[va], s_val), "val_fairness": fairness_gap(y[va], s_val, group[va] == 0, variant),
            "auc": auc(y[te], s_test), "fairness": fairness_gap(y[te], s_test, group[te] == 0, variant)}


def run_constrained(data, method, model, variant, kappa, seed, iterations, params):
    """level_set / iqrc / proxy_lagrangian at one κ: one frontier point."""
    solver = METHODS[(method, model)][0]
    prob, val = _problems(data, model, kappa, variant)
    t0, c0 = time.perf_counter(), time.process_time()
    res = solve(prob, {"name": solver, "params": params}, max_iterations=iterations, seed=seed, validation=val)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    X, sp = data[0], data[3]
    out = _metrics(data, _scores(res.model, X[sp["validation"]]), _scores(res.model, X[sp["test"]]), variant)
    return [{**out, "kappa": kappa, "time_s": wall, "cpu_s": cpu, "iterations": res.iterations}]


def run_penalty(data, model, seed, iterations, params, kappas, lambdas):
    """correlation_penalty: one run per λ; per κ the (λ, iterate) feasible on validation with the best AUC."""
    X, sp = data[0], data[3]
    cands = {k: [] for k in kappas}
    total = cpu = 0.0
    for lam in lambdas:
        prob, val = _problems(data, model, kappas[0], "group")
        t0, c0 = time.perf_counter(), time.process_time()
        res = solve(prob, {"name": "correlation_penalty",
                           "params": {**params, "lam": lam, "select_tolerances": list(kappas)}},
                    max_iterations=iterations, seed=seed, validation=val)
        total += time.perf_counter() - t0
        cpu += time.process_time() - c0
        for k in kappas:
            sel = res.model.selected_by_tolerance[float(k)]
            res.model.load_state_dict(sel["state_dict"])
            key = (1, sel["selection_auc"]) if sel["feasible"] else (0, -sel["selection_gap"])
            cands[k].append((key, lam, _scores(res.model, X[sp["test"]]), _scores(res.model, X[sp["validation"]])))
    rows = []
    for k in kappas:
        _, lam, s_test, s_val = max(cands[k], key=lambda c: c[0])
        rows.append({**_metrics(data, s_val, s_test, "group"), "kappa": k, "lambda": lam,
                     "time_s": total, "cpu_s": cpu, "iterations": iterations * len(lambdas)})
    return rows


def run_postprocess(data, model, seed, iterations, params, variants, kappas):
    """auc_postprocess: one unconstrained training, then the (ω₁, ω₂) grid per variant and κ on validation."""
    X, y, group, sp = data
    prob, val = _problems(data, model, 1.0, "group")
    t0, c0 = time.perf_counter(), time.process_time()
    res = solve(prob, {"name": "auc_postprocess", "params": params}, max_iterations=iterations, seed=seed,
                validation=val)
    base = res.model.net.base                     # the trained network, before the shift
    h_val, h_test = (_scores(lambda x: base(x).squeeze(-1), X[sp[s]]) for s in ("validation", "test"))
    train_s, train_cpu = time.perf_counter() - t0, time.process_time() - c0
    rows = []
    pv, pt = group[sp["validation"]] == 0, group[sp["test"]] == 0
    for variant in variants:
        t1, c1 = time.perf_counter(), time.process_time()
        table = shift_table(y[sp["validation"]], h_val, pv, variant)
        grid_s, grid_cpu = time.perf_counter() - t1, time.process_time() - c1
        for k in kappas:
            w1, w2, _, _ = choose_shift(*table, k)
            rows.append({**_metrics(data, np.where(pv, w1 * h_val + w2, h_val), np.where(pt, w1 * h_test + w2, h_test),
                                    variant), "variant": variant, "kappa": k, "omega1": w1, "omega2": w2,
                         "time_s": train_s + grid_s, "cpu_s": train_cpu + grid_cpu, "iterations": res.iterations})
    return rows


def params_for(method, tuned, ds, model):
    step = METHODS[(method, model)][1]
    choice = tuned.get((ds, method, model), {})
    p = {step: choice.get("step", 0.1)}
    if method in OURS.values():
        p["tau"] = choice.get("tau", 10.0)
    return p


# ---------------------------------------------------------------------------------------------- driver
REPORT_JSON = RESULTS / "auc_reproduction.json"
COMMENTARY = RESULTS / "auc_reproduction.commentary.md"


def read_rows(path):
    """The run records of a source: a part file (JSON lines; a last line cut off by an interruption is
    ignored) or a report (``auc_reproduction.json``: its ``tuning_runs``, ``runs`` and ``timing`` records,
    each with its key)."""
    path = Path(path)
    if not path.exists():
        return []
    text = path.read_text()
    if path.suffix == ".json":
        d = json.loads(text)
        return [r for field in ("tuning_runs", "runs", "timing") for r in d.get(field, [])]
    return [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n") and line.strip()]


class Part:
    """Append-only JSON-lines file of runs; ``done`` keys (its own and those of ``others``: parallel part
    files or the committed report JSON) make a grid resumable."""

    def __init__(self, path, others=()):
        self.path = Path(path)
        if self.path.exists():   # drop a line cut off by an interruption, so the next append starts a line
            text = self.path.read_text()
            if text and not text.endswith("\n"):
                self.path.write_text(text[:text.rfind("\n") + 1])
        self.rows = read_rows(self.path)
        self.done = {r["key"] for r in self.rows if "key" in r}
        self.done |= {r["key"] for p in others for r in read_rows(p) if "key" in r}

    def add(self, key, rows):
        rows = [{"key": key, **r} for r in rows]
        with self.path.open("a") as fh:   # one write and an fsync per run: an interruption loses one run at most
            fh.write("".join(json.dumps(r) + "\n" for r in rows))
            fh.flush()
            os.fsync(fh.fileno())
        self.rows += rows
        self.done.add(key)
        print(key, json.dumps([{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()
                                if k in ("kappa", "auc", "fairness", "val_auc", "val_fairness", "time_s", "cpu_s")}
                               for r in rows]), flush=True)


def tuned_settings(rows):
    """(dataset, method, model) -> {"step", "tau"}: best validation AUC among feasible tuning runs, else
    the smallest validation gap."""
    best = {}
    for r in rows:
        if r.get("kind") != "tune":
            continue
        key = (r["dataset"], r["method"], r["model"])
        score = (1, r["val_auc"]) if r["val_fairness"] <= r["kappa"] else (0, -r["val_fairness"])
        if key not in best or score > best[key][0]:
            best[key] = (score, {"step": r["step"], "tau": r.get("tau")})
    return {k: v[1] for k, v in best.items()}


def tune(args, part):
    for ds in args.datasets:
        data = load(ds, 0)
        for (method, model), (_, step_name, _) in METHODS.items():
            if method not in args.methods:
                continue
            taus = TAU_GRID if method in OURS.values() else (None,)
            for step in STEP_GRID:
                for tau in taus:
                    key = f"tune|{ds}|{method}|{model}|{step}|{tau}"
                    if key in part.done:
                        continue
                    params = {step_name: step, **({"tau": tau} if tau else {})}
                    if method == "correlation_penalty":
                        rows = run_penalty(data, model, 0, args.iterations, params, [args.tune_kappa], [1.0])
                    elif method == "auc_postprocess":
                        rows = run_postprocess(data, model, 0, args.iterations, params, ["group"], [args.tune_kappa])
                    else:
                        rows = run_constrained(data, method, model, "group", args.tune_kappa, 0, args.iterations,
                                               params)
                    part.add(key, [{"kind": "tune", "dataset": ds, "method": method, "model": model, "step": step,
                                    "tau": tau, **{k: v for k, v in r.items() if k != "variant"}} for r in rows])


def grid(args, part, tuned):
    kappas = list(args.kappas)
    for seed in args.seeds:          # seeds outermost: an interrupted grid has whole seeds of every dataset
        for ds in args.datasets:
            data = load(ds, seed)
            for (method, model), (_, _, variants) in METHODS.items():
                if method not in args.methods or model not in args.models:
                    continue
                if method == "proxy_lagrangian" and seed not in (args.pairwise_seeds if model == "linear"
                                                                 else args.mlp_pairwise_seeds):
                    continue   # the slowest method (pairs in every batch): fewer seeds when CPU is short
                params = params_for(method, tuned, ds, model)
                common = {"kind": "grid", "dataset": ds, "method": method, "model": model, "seed": seed, **params}
                if method == "auc_postprocess":
                    key = f"grid|{ds}|{method}|{model}|{seed}"
                    if key not in part.done:
                        rows = run_postprocess(data, model, seed, args.iterations, params,
                                               [v for v in variants if v in args.variants], kappas)
                        part.add(key, [{**common, **r} for r in rows])
                    continue
                if method == "correlation_penalty":
                    key = f"grid|{ds}|{method}|{model}|{seed}"
                    if key not in part.done and "group" in args.variants:
                        rows = run_penalty(data, model, seed, args.iterations, params, kappas, args.lambdas)
                        part.add(key, [{**common, "variant": "group", **r} for r in rows])
                    continue
                for variant in variants:
                    if variant not in args.variants:
                        continue
                    for k in kappas:
                        key = f"grid|{ds}|{method}|{model}|{seed}|{variant}|{k}"
                        if key not in part.done:
                            rows = run_constrained(data, method, model, variant, k, seed, args.iterations, params)
                            part.add(key, [{**common, "variant": variant, **r} for r in rows])


# ---------------------------------------------------------------------------------------------- speed
class _Clock:
    """Writes ``{name}_s`` (wall) and ``{name}_cpu_s`` (this process's CPU time, insensitive to other
    processes sharing the cores) into ``row``."""

    def __init__(self, row, name):
        self.row, self.name = row, name

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def __exit__(self, *exc):
        self.row[f"{self.name}_s"] = time.perf_counter() - self.wall
        self.row[f"{self.name}_cpu_s"] = time.process_time() - self.cpu


def _median_clock(row, name, fn, repeats):
    """Runs ``fn`` ``repeats`` times; ``{name}_s`` / ``{name}_cpu_s`` are the medians (one run of a 10k-row
    epoch takes a tenth of a second: a single measurement is noise), ``{name}_cpu_all_s`` all CPU times."""
    runs = []
    for _ in range(repeats):
        r = {}
        with _Clock(r, name):
            fn()
        runs.append(r)
    row[f"{name}_s"] = float(np.median([r[f"{name}_s"] for r in runs]))
    row[f"{name}_cpu_s"] = float(np.median([r[f"{name}_cpu_s"] for r in runs]))
    row[f"{name}_cpu_all_s"] = [r[f"{name}_cpu_s"] for r in runs]


def timing(args, part, tuned, sizes=(10_000, 40_000), repeats=5):
    """Per-epoch cost at 10k and 40k rows of a9a (train then test rows, no repetition; median of ``repeats``
    measurements), 1 thread:
    level_set (one pass of mini-batches of 100, O(n)), proxy_lagrangian (one pass of mini-batches of 100,
    pairs inside each batch: O(n·B)), and one full pass of a pairwise method over all n₊n₋ pairs (the sigmoid
    pair surrogate's value and gradient, chunked: O(n²), what an offline pairwise epoch costs). Then one
    complete level_set run on a9a with the grid's settings (wall time)."""
    X, y, group, sp = load("a9a", 0)
    for n in sizes:
        key = f"timing|{n}"
        if key in part.done:
            continue
        fam = AUCParity(0.05, {"variant": "group", "n_boot": 0})
        prob = Problem(X=X[:n], y=y[:n], group=group[:n], group_names=["prot", "rest"], constraints=[fam],
                       device="cpu")
        steps = n // 100
        row = {"kind": "timing", "rows": n, "steps": steps, "repeats": repeats}
        for name, params in (("level_set", {"inner_iterations": 10 ** 6, "select_every": 10 ** 6}),
                             ("proxy_lagrangian", {"select_every": 10 ** 6})):
            _median_clock(row, f"{name}_epoch", lambda: solve(prob, {"name": name, "params": params},
                                                                max_iterations=steps, validation=None), repeats)
        model = prob.make_model()
        torch.nn.init.normal_(model.net.weight, std=0.1)
        pos = prob.y > 0.5

        def full_pass():
            model.zero_grad()
            hp, hn = model(prob.X[pos]), model(prob.X[~pos])
            total = hp.new_zeros(())
            for chunk in torch.split(torch.arange(hp.numel()), 512):
                total = total + torch.sigmoid(hp[chunk][:, None] - hn[None, :]).sum()
            total.backward()

        _median_clock(row, "pairwise_full_pass", full_pass, repeats)
        row["pairs"] = int(pos.sum()) * int((~pos).sum())
        part.add(key, [row])
    data = (X, y, group, sp)
    for variant in ("group", "inter", "intra"):
        key = f"timing|run|{variant}"
        if key not in part.done:
            params = params_for("level_set", tuned, "a9a", "linear")
            row = {}
            with _Clock(row, "run"):
                r = run_constrained(data, "level_set", "linear", variant, 0.02, 0, args.iterations, params)[0]
            part.add(key, [{"kind": "run_time", "variant": variant, **params, **r, "cpu_s": row["run_cpu_s"]}])


# ---------------------------------------------------------------------------------------------- report
def _se(v):
    v = np.asarray(v, dtype=float)
    return float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan")


def aggregate(rows):
    """Mean ± se over seeds per (dataset, variant, method, model, κ)."""
    import pandas as pd

    g = pd.DataFrame([r for r in rows if r.get("kind") == "grid"])
    if g.empty:
        return g
    # a seed interrupted half-way would enter the means of some κ only: keep complete seeds
    size = g.groupby(["dataset", "method", "model", "kappa", "seed"]).variant.transform("size")
    g = g[size == size.groupby([g.dataset, g.method, g.model, g.kappa]).transform("max")]
    return g.groupby(["dataset", "model", "variant", "method", "kappa"]).agg(
        auc=("auc", "mean"), auc_se=("auc", _se), fair=("fairness", "mean"), fair_se=("fairness", _se),
        val_auc=("val_auc", "mean"), val_fair=("val_fairness", "mean"), time_s=("time_s", "mean"),
        seeds=("seed", "nunique")).reset_index()


def dominance(agg):
    """Per panel (dataset, model, variant) and baseline: how many of the baseline's frontier points are
    dominated by one of ours (test AUC ≥ and test fairness ≤, one strictly), how many of ours are dominated
    by one of the baseline's, and the best AUC of each within fairness ≤ f for f in the κ grid."""
    out = []
    for (ds, model, variant), panel in agg.groupby(["dataset", "model", "variant"]):
        ours = panel[panel.method == OURS[model]]
        for method, base in panel[panel.method != OURS[model]].groupby("method"):
            def dom(a, b):   # points of b dominated by some point of a
                return sum(any((p.auc >= q.auc and p.fair <= q.fair and (p.auc > q.auc or p.fair < q.fair))
                               for p in a.itertuples()) for q in b.itertuples())
            levels = {}
            for f in sorted(panel.kappa.unique()):
                best = [float(x[x.fair <= f].auc.max()) if (x.fair <= f).any() else None for x in (ours, base)]
                levels[str(f)] = best
            out.append({"dataset": ds, "model": model, "variant": variant, "baseline": method,
                        "baseline_points_dominated_by_ours": dom(ours, base), "baseline_points": len(base),
                        "our_points_dominated_by_baseline": dom(base, ours), "our_points": len(ours),
                        "best_auc_at_fairness_level": levels})
    return out


def report(parts, commentary=None):
    rows, keys = [], set()
    for p in parts:   # a key run in several parts counts once (the first part that has it)
        new = [r for r in read_rows(p) if r.get("key") not in keys]
        keys |= {r.get("key") for r in new}
        rows += new
    tuned = tuned_settings(rows)
    agg = aggregate(rows)
    dom = dominance(agg) if len(agg) else []
    timing_rows = [r for r in rows if r.get("kind") in ("timing", "run_time")]
    grid_rows = [r for r in rows if r.get("kind") == "grid"]
    out = {"kappas": sorted({r["kappa"] for r in grid_rows}), "tuned": [{"dataset": k[0], "method": k[1],
                                                                          "model": k[2], **v} for k, v in tuned.items()],
           "frontier": agg.to_dict("records") if len(agg) else [], "dominance": dom, "timing": timing_rows,
           "runs": grid_rows, "tuning_runs": [r for r in rows if r.get("kind") == "tune"]}
    RESULTS.mkdir(exist_ok=True)
    REPORT_JSON.write_text(json.dumps(out, indent=1))
    write_html(agg)
    write_markdown(out, agg, commentary)


def write_html(agg):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if not len(agg):
        return
    panels = [(d, v) for d in ("a9a", "bank", "compas") for v in VARIANTS
              if ((agg.dataset == d) & (agg.variant == v)).any()]
    models = [m for m in ("linear", "mlp") if (agg.model == m).any()]
    fig = make_subplots(rows=len(models), cols=len(panels), horizontal_spacing=0.03, vertical_spacing=0.12,
                        subplot_titles=[f"{d} / {v} / {m}" for m in models for d, v in panels])
    colors = {"level_set": "#d62728", "iqrc": "#d62728", "proxy_lagrangian": "#1f77b4",
              "correlation_penalty": "#2ca02c", "auc_postprocess": "#9467bd"}
    shown = set()
    for r, m in enumerate(models, 1):
        for c, (d, v) in enumerate(panels, 1):
            sel = agg[(agg.dataset == d) & (agg.variant == v) & (agg.model == m)]
            for method, f in sel.groupby("method"):
                f = f.sort_values("fair")
                name = f"{method} ({m})"
                fig.add_trace(go.Scatter(
                    x=f.fair, y=f.auc, mode="markers+lines", name=name, legendgroup=name,
                    showlegend=name not in shown, marker={"color": colors[method]},
                    line={"dash": "solid" if method in OURS.values() else "dot"},
                    error_x={"array": f.fair_se}, error_y={"array": f.auc_se},
                    text=[f"κ={k}" for k in f.kappa], hovertemplate="%{text}<br>fair %{x:.4f}<br>AUC %{y:.4f}"),
                    row=r, col=c)
                shown.add(name)
    fig.update_xaxes(title_text="test fairness gap")
    fig.update_yaxes(title_text="test AUC", col=1)
    fig.update_layout(height=420 * len(models), width=330 * len(panels),
                      title="AUC vs AUC-fairness Pareto frontiers (mean ± s.e. over seeds) — Yao, Lin & Yang 2023, "
                            "Figs. 1–4 reproduced")
    fig.write_html(RESULTS / "auc_reproduction.html", include_plotlyjs="cdn", full_html=True)  # as plada_figures: no 4.6 MB plotly.js copy


def write_markdown(out, agg, commentary):
    lines = ["# AUC fairness reproduction (Yao, Lin & Yang, AISTATS 2023) — measured", "",
             "Generated by `python -m bench.papers.auc_reproduction report` (see the module docstring for the data "
             "preprocessing, models and settings). Figure: `auc_reproduction.html` (Plotly; plotly.js from its CDN).", ""]
    if commentary:
        lines += [Path(commentary).read_text().rstrip(), ""]
    doc = __doc__[__doc__.index("Data and preprocessing"):].strip()
    lines += ["## Setup (from the module docstring)", "", doc, ""]
    if out["runs"]:
        import pandas as pd

        runs = pd.DataFrame(out["runs"])
        lines += ["## What was run", "", f"κ grid: {', '.join(str(k) for k in out['kappas'])}. "
                  "Seeds (with the number of frontier points each produced) and steps per method (steps = mini-batches of 100 "
                  "per run; correlation_penalty: per λ run, "
                  "λ ∈ " + ", ".join(str(v) for v in LAMBDAS) + ", the λ chosen per κ and seed is in the JSON):", "",
                  "| method | model | dataset | seeds (runs; a seed with fewer runs than the others was interrupted and is left out of the means) | κ values | steps per run |", "|---|---|---|---|---|---|"]
        for (m, mo, ds), f in runs.groupby(["method", "model", "dataset"]):
            steps = int(f.iterations.max() / (len(LAMBDAS) if m == "correlation_penalty" else 1))
            seeds = ", ".join(f"{x} ({int((f.seed == x).sum())})" for x in sorted(f.seed.unique()))
            lines.append(f"| {m} | {mo} | {ds} | {seeds} | {', '.join(str(k) for k in sorted(f.kappa.unique()))} | "
                         f"{steps} |")
        lines.append("")
    if out["tuned"]:
        lines += ["## Step sizes chosen on validation (seed 0, variant group)", "",
                  "| dataset | method | model | step c | τ |", "|---|---|---|---|---|"]
        for t in sorted(out["tuned"], key=lambda t: (t["dataset"], t["model"], t["method"])):
            lines.append(f"| {t['dataset']} | {t['method']} | {t['model']} | {t['step']} | {t['tau'] or '—'} |")
        lines += ["", f"The η × τ tuning runs of level_set / iqrc (seed 0, variant group, validation; κ = "
                  f"{out['tuning_runs'][0]['kappa']}; a run is feasible when val gap ≤ κ):", "",
                  "| dataset | method | c (η) | τ=1: val AUC / gap | τ=10: val AUC / gap | τ=100: val AUC / gap |",
                  "|---|---|---|---|---|---|"]
        cells = {(r["dataset"], r["method"], r["step"], r["tau"]): r for r in out["tuning_runs"]
                 if r["method"] in OURS.values()}
        for ds, m, c in sorted({k[:3] for k in cells}):
            row = [cells.get((ds, m, c, tau)) for tau in TAU_GRID]
            lines.append(f"| {ds} | {m} | {c} | " + " | ".join(
                "—" if r is None else f"{r['val_auc']:.4f} / {r['val_fairness']:.4f}" for r in row) + " |")
        lines.append("")
    if len(agg):
        lines += ["## Pareto frontiers (test; mean ± s.e. over seeds)", "",
                  "| dataset | model | variant | method | κ | test AUC | ±se | test fairness | ±se | val AUC | "
                  "val fairness | wall s | seeds |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in agg.itertuples():
            lines.append(f"| {r.dataset} | {r.model} | {r.variant} | {r.method} | {r.kappa} | {r.auc:.4f} | "
                         f"{r.auc_se:.4f} | {r.fair:.4f} | {r.fair_se:.4f} | {r.val_auc:.4f} | {r.val_fair:.4f} | "
                         f"{r.time_s:.1f} | {r.seeds} |")
        lines += ["", "## Domination (computed from the table above)", "",
                  "A point dominates another when its test AUC is ≥ and its test fairness gap ≤ (one strictly). "
                  "`best AUC at fairness ≤ f`: ours / baseline, the best mean test AUC among frontier points whose "
                  "mean test gap is ≤ f (— none).", "",
                  "| dataset | model | variant | baseline | baseline pts dominated by ours | ours dominated by "
                  "baseline | best AUC at fairness ≤ f (ours / baseline) |", "|---|---|---|---|---|---|---|"]
        for d in out["dominance"]:
            lv = "; ".join(f"≤{f}: {_fmt(a)} / {_fmt(b)}" for f, (a, b) in d["best_auc_at_fairness_level"].items())
            lines.append(f"| {d['dataset']} | {d['model']} | {d['variant']} | {d['baseline']} | "
                         f"{d['baseline_points_dominated_by_ours']}/{d['baseline_points']} | "
                         f"{d['our_points_dominated_by_baseline']}/{d['our_points']} | {lv} |")
    tim = [t for t in out["timing"] if t["kind"] == "timing"]
    if tim:
        reps = tim[0].get("repeats", 1)
        lines += ["", "## Cost per epoch (a9a rows, CPU, 1 thread)", "",
                  "CPU s = this process's CPU time (what the method costs); wall s = elapsed time, inflated by "
                  "the other jobs sharing the machine's two cores while it ran" +
                  (f"; each figure is the median of {reps} measurements." if reps > 1 else "."), "",
                  "| rows | level_set epoch CPU s (wall s) | proxy_lagrangian epoch, batch 100, CPU s (wall s) | "
                  "pairwise full pass over all pairs CPU s (wall s) | pairs |", "|---|---|---|---|---|"]
        names = ("level_set_epoch", "proxy_lagrangian_epoch", "pairwise_full_pass")
        for t in sorted(tim, key=lambda t: t["rows"]):
            lines.append(f"| {t['rows']} | " + " | ".join(f"{t[n + '_cpu_s']:.3f} ({t[n + '_s']:.3f})" for n in names)
                         + f" | {t['pairs']} |")
        if len(tim) == 2:
            a, b = sorted(tim, key=lambda t: t["rows"])
            lines += ["", "CPU-time ratios 40k / 10k rows (4× the rows, 16× the pairs): " + ", ".join(
                f"{n} ×{b[n + '_cpu_s'] / a[n + '_cpu_s']:.1f}" for n in names) + "."]
    runs = [t for t in out["timing"] if t["kind"] == "run_time"]
    if runs:
        lines += ["", "One complete level_set run on a9a (linear, the grid's settings, κ = 0.02, "
                  "29,305 training rows, validation selection included):", ""]
        lines += [f"* {t['variant']}: {t['cpu_s']:.1f} s CPU ({t['time_s']:.1f} s wall) for {t['iterations']} steps "
                  f"(test AUC {t['auc']:.4f}, "
                  f"test gap {t['fairness']:.4f})" for t in runs]
    (RESULTS / "auc_reproduction.md").write_text("\n".join(lines) + "\n")


def _fmt(x):
    return "—" if x is None or x != x else f"{x:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["tune", "grid", "timing", "report"])
    ap.add_argument("parts", nargs="*", help="report: the part files to merge")
    ap.add_argument("--part", help="JSON-lines file the runs are appended to")
    ap.add_argument("--datasets", nargs="+", default=["a9a", "bank", "compas"])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    ap.add_argument("--models", nargs="+", default=["linear", "mlp"])
    ap.add_argument("--methods", nargs="+", default=sorted({m for m, _ in METHODS}))
    ap.add_argument("--kappas", nargs="+", type=float, default=list(KAPPAS))
    ap.add_argument("--lambdas", nargs="+", type=float, default=list(LAMBDAS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--iterations", type=int, default=1500)
    ap.add_argument("--pairwise-seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4],
                    help="seeds of proxy_lagrangian with the linear model (a subset of --seeds; the slowest method, "
                         "to cut when CPU is short; the committed results have all five)")
    ap.add_argument("--mlp-pairwise-seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4],
                    help="seeds of proxy_lagrangian with the MLP (as --pairwise-seeds)")
    ap.add_argument("--tune-kappa", type=float, default=0.02)
    ap.add_argument("--tuned-from", nargs="*", default=[str(REPORT_JSON)] if REPORT_JSON.exists() else [],
                    help="other part files or the committed report JSON (the default): their tuning runs are used, "
                         "their runs are not repeated; give the flag with no file to start from nothing")
    ap.add_argument("--rerun", action="store_true",
                    help="run again what the --tuned-from sources already hold (only --part's own runs are skipped); "
                         "list the new part first in report so that its runs win")
    ap.add_argument("--commentary", default=str(COMMENTARY) if COMMENTARY.exists() else None,
                    help="markdown file inserted at the top of the report (default: auc_reproduction.commentary.md)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.command == "report":
        report(args.parts, args.commentary)
        return
    part = Part(args.part, () if args.rerun else args.tuned_from)
    tuned = tuned_settings([r for p in args.tuned_from for r in read_rows(p)] + part.rows)
    {"tune": lambda: tune(args, part), "grid": lambda: grid(args, part, tuned),
     "timing": lambda: timing(args, part, tuned)}[args.command]()


if __name__ == "__main__":
    main()

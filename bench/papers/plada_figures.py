r"""PLADA paper, Figures 1 and 2: loss, constraint violation and near-stationarity against CPU time
for ``plada``, ``ssg`` and ``ipc`` on Adult, Bank and COMPAS (linear model, logistic loss), with
demographic parity (Figure 1) and equalized odds (Figure 2).

Output: ``bench/papers/results/plada_figure1_dp.html`` and ``plada_figure2_eo.html`` (Plotly, 3×3 grids as
in the paper: rows loss / violation / near-stationarity, columns Adult / Bank / COMPAS), plus
``plada_figures.json`` (downsampled trajectories and final metrics) and ``plada_figures.md``.
Run: ``python -m bench.papers.plada_figures --budget-s 30``.

Problems (the paper states none of the preprocessing, tolerance or split; our choices):

* Adult: ``bench.common.datasets.adult()`` (UCI train file, 32,561 rows), label income ``>50K``,
  sensitive ``sex`` (Male / Female); every column is an input (as LIBSVM a9a, whose 123 one-hot
  features include sex).
* Bank: ``bench.common.datasets.bank()`` (``bank-additional-full.csv``, 41,188 rows), label ``y`` = ``yes``,
  sensitive ``age`` binarised by ``group_rules`` ranges into ``25-60`` = [25, 61) vs ``other``; every
  column except ``duration`` (known only after the call) is an input, age included.
* COMPAS: ``bench.common.datasets.compas()`` (ProPublica's filter, 6,172 rows; columns kept: sex, age,
  age_cat, race, juv_fel_count, juv_misd_count, juv_other_count, priors_count, c_charge_degree),
  label ``two_year_recid`` = 1, sensitive ``race`` Caucasian vs ``non-Caucasian``; all kept columns
  are inputs.
* Encoding by the library (one-hot + standardisation fitted on train), split 80/20 stratified by
  group × label (split seed 0), linear model on R^d, logistic loss, constraint
  ``demographic_parity`` ≤ 0.02 (sigmoid surrogate, max − min over groups: one row) or
  ``equalized_odds`` ≤ 0.02 with ``aggregate="separate"`` (TPR-gap row and FPR-gap row).
  ε = 0.02 is ours (the paper never states it).
* Solvers with their registered paper defaults (full batch, PLADA Table 2 linear row; SSG with
  η^f = 0.5 and Polyak constraint steps; IPC with ρ̂ = 10^-2.5, ε̂ = 1e-2, K = 10^4 inner steps), each
  for ``--budget-s`` seconds of solver time (the spec's ``time_limit_s``; ``max_iterations`` is
  effectively infinite, so SSG's / IPC's random-iterate output rules see an unreached horizon and
  the trajectories are those of the iterates the methods actually compute). One torch thread, so
  wall time ≈ CPU time of the process; the x-axis is the driver's ``elapsed_s`` minus the time the
  benchmark's own observer spends copying θ (below).

Rows of the figures (all on the TRAINING set, full batch):

* loss: F(θ_k), the logistic loss the solver logs (full batch, so exact);
* violation: max(0, max_j G_j(θ_k)) with G = surrogate gap − ε, as the solver logs it;
* near-stationarity (the paper does not define it; notes: [MISSING]). We use the approximate-KKT
  residual with the best non-negative multipliers,

      S(θ) = min_{λ ≥ 0}  ( ‖∇F(θ) + ∇G(θ)ᵀλ‖² + Σ_j (λ_j G_j(θ))² )^{1/2},

  i.e. the Lagrangian-gradient norm plus complementarity, minimised over λ by non-negative least
  squares (``scipy.optimize.nnls`` on the stacked system [∇Gᵀ; diag(G)] λ ≈ [−∇F; 0]). Together with
  the violation row it is a KKT residual (S = 0 and violation = 0 ⇔ θ is a KKT point). It needs no
  multiplier from the algorithm (SSG and IPC have none), so the three methods are measured alike.
  ∇G of the max − min DP surrogate is the autograd subgradient (the active pair). It is computed
  AFTER the run from parameter snapshots taken by the observer at iterations 1..20 and then on a
  geometric grid (ratio 1.05), not in the solver's loop. For PLADA we also report ‖∇F + ∇Gᵀλ_k‖ at
  the λ_k it logs (JSON ``stationarity_at_logged_lambda``).
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from scipy.optimize import nnls

from bench.common.datasets import adult, bank, compas

RESULTS = Path(__file__).resolve().parent / "results"
TOL = 0.02
DATASETS = {
    "Adult": {"load": adult, "spec": {"target": "income", "positive_label": ">50K", "sensitive": ["sex"]}},
    "Bank": {"load": bank, "spec": {
        "target": "y", "positive_label": "yes", "sensitive": ["age"],
        "features": ["age", "job", "marital", "education", "default", "housing", "loan", "contact", "month",
                     "day_of_week", "campaign", "pdays", "previous", "poutcome", "emp.var.rate",
                     "cons.price.idx", "cons.conf.idx", "euribor3m", "nr.employed"],
        "group_rules": {"age": {"ranges": {"25-60": [25, 61]}, "other": "other"}}}},
    "COMPAS": {"load": compas, "spec": {
        "target": "two_year_recid", "positive_label": 1, "sensitive": ["race"],
        "group_rules": {"race": {"values": {"Caucasian": ["Caucasian"]}, "other": "non-Caucasian"}}}},
}
CONSTRAINTS = {
    "dp": {"type": "demographic_parity", "tolerance": TOL},
    "eo": {"type": "equalized_odds", "tolerance": TOL, "aggregate": "separate"},
}
FIGURE = {"dp": ("plada_figure1_dp", "Figure 1: demographic parity"),
          "eo": ("plada_figure2_eo", "Figure 2: equalized odds")}
SOLVERS = ("plada", "ssg", "ipc")
COLORS = {"plada": "#d62728", "ssg": "#1f77b4", "ipc": "#2ca02c"}


def snapshot_schedule(ratio: float = 1.05, first: int = 20, last: int = 10**9) -> set[int]:
    """Iterations 1..first, then a geometric grid."""
    keep, k = set(range(1, first + 1)), float(first)
    while k < last:
        k *= ratio
        keep.add(int(k))
    return keep


@dataclass
class SnapshotObserver:
    """Keeps every record (times corrected for its own copying) and θ at the scheduled iterations."""

    params: list[torch.Tensor]
    schedule: set[int]
    records: list = field(default_factory=list)
    times: list = field(default_factory=list)
    snapshots: list = field(default_factory=list)   # (iteration, time, [tensors], duals)
    overhead: float = 0.0

    def on_start(self, info: dict) -> None:
        self.info = info

    def on_iteration(self, record) -> None:
        self.records.append(record)
        self.times.append(record.elapsed_s - self.overhead)
        if record.iteration in self.schedule:
            t = time.perf_counter()
            self.snapshots.append((record.iteration, self.times[-1], [p.detach().clone() for p in self.params],
                                   record.duals))
            self.overhead += time.perf_counter() - t

    def should_stop(self):
        return None


def build(dataset: str, constraint: str, solver: str, budget_s: float):
    from solvers import ProblemSpec, prepare
    from solvers.models import ball_domain, model_factory
    from solvers.problem import Problem

    entry = DATASETS[dataset]
    spec = ProblemSpec.model_validate({
        **entry["spec"], "model": {"type": "linear"}, "objective": "logistic",
        "constraints": [CONSTRAINTS[constraint]], "solver": {"name": solver, "params": {}},
        "split": {"test": 0.2, "validation": 0.0, "seed": 0}, "seed": 0, "max_iterations": 10**9,
        "time_limit_s": budget_s, "device": "cpu"})
    table = entry["load"]()
    data = prepare(table, spec)
    train = data.splits["train"]
    problem = Problem(X=data.X[train], y=data.y[train], group=data.group[train], group_names=data.group_names,
                      model_factory=model_factory(spec.model), model_type="linear", objective="logistic",
                      constraints=[c.build() for c in spec.constraints], device="cpu", domain=ball_domain(spec.model))
    return spec, data, problem


def kkt_residual(problem, model, params_values, logged_lambda=None) -> tuple[float, float | None]:
    """S(θ) (module docstring) and, when given, ‖∇F + ∇Gᵀλ‖ at the algorithm's λ."""
    params = list(model.parameters())
    with torch.no_grad():
        for p, v in zip(params, params_values):
            p.copy_(v)
    ev = problem.evaluate(model)
    flat = lambda grads: torch.cat([g.reshape(-1) for g in grads]).double().numpy()  # noqa: E731
    g0 = flat(torch.autograd.grad(ev.objective, params, retain_graph=True))
    G = ev.constraints.detach().double().numpy()
    rows = [flat(torch.autograd.grad(ev.constraints[j], params, retain_graph=j + 1 < G.size, allow_unused=False))
            for j in range(G.size)]
    J = np.stack(rows) if rows else np.zeros((0, g0.size))
    A = np.vstack([J.T, np.diag(G)])
    b = np.concatenate([-g0, np.zeros(G.size)])
    lam, res = nnls(A, b)
    at_logged = None
    if logged_lambda is not None and len(logged_lambda) == G.size:
        at_logged = float(np.linalg.norm(g0 + J.T @ np.asarray(logged_lambda)))
    return float(res), at_logged


def run_one(dataset: str, constraint: str, solver: str, budget_s: float) -> dict:
    from solvers import solve
    from solvers.api import predict_scores
    from solvers.metrics import group_fairness

    spec, data, problem = build(dataset, constraint, solver, budget_s)
    with torch.random.fork_rng(devices=[]):   # the same θ_0 as solvers.run (driver: manual_seed(seed))
        torch.manual_seed(spec.seed)
        model = problem.make_model()
    observer = SnapshotObserver([p for p in model.parameters() if p.requires_grad], snapshot_schedule())
    res = solve(problem, spec.solver, observer, max_iterations=spec.max_iterations, time_limit_s=spec.time_limit_s,
                seed=spec.seed, model=model)
    final_state = [p.detach().clone() for p in model.parameters()]
    # final metrics of the returned model (exact, indicator-based)
    logits = predict_scores(res.model, data.X, problem.device)
    final = {}
    for split, idx in data.splits.items():
        y, pred = data.y[idx], (logits[idx] > 0).astype(int)
        fair = group_fairness(y, pred, data.group[idx], data.group_names)
        final[split] = {"accuracy": float(np.mean(pred == y)), "demographic_parity": fair["demographic_parity"],
                        "equalized_odds": fair["equalized_odds"]}
    # near-stationarity from the snapshots (after the run)
    t0 = time.perf_counter()
    probe = problem.make_model()
    stat = []
    for it, t, values, duals in observer.snapshots:
        lam = (duals or {}).get("lambda") if solver == "plada" else None
        s, s_logged = kkt_residual(problem, probe, values, lam)
        stat.append({"iteration": it, "time_s": t, "stationarity": s, "stationarity_at_logged_lambda": s_logged})
    stat_seconds = time.perf_counter() - t0
    recs, times = observer.records, observer.times
    keep = sorted({0, len(recs) - 1} | {it - 1 for it, *_ in observer.snapshots if it - 1 < len(recs)})
    trajectory = [{"iteration": recs[i].iteration, "time_s": times[i], "loss": recs[i].objective,
                   "violation": recs[i].max_violation} for i in keep]
    last = recs[-1] if recs else None
    del final_state
    return {"dataset": dataset, "constraint": constraint, "solver": solver, "iterations": res.iterations,
            "solver_time_s": res.solver_time_s, "observer_overhead_s": observer.overhead,
            "stationarity_eval_s": stat_seconds, "stop_reason": res.stop_reason,
            "n_train": problem.n_samples, "n_features": problem.n_features, "groups": list(data.group_names),
            "constraint_names": problem.constraint_names,
            "last": {"loss": last.objective, "violation": last.max_violation, "constraints": last.constraints}
            if last else None,
            "final_model": final, "trajectory": trajectory, "stationarity": stat}


def at_time(points: list[dict], key: str, t: float) -> float | None:
    """Value of ``key`` at the last point with time ≤ t."""
    best = None
    for p in points:
        if p["time_s"] <= t:
            best = p[key]
    return best


def figure(constraint: str, runs: list[dict], path: Path) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    names = list(DATASETS)
    fig = make_subplots(rows=3, cols=3, column_titles=names, row_titles=["loss", "violation", "near-stationarity"],
                        shared_xaxes=False, horizontal_spacing=0.06, vertical_spacing=0.07)
    for r in runs:
        if r["constraint"] != constraint:
            continue
        col = names.index(r["dataset"]) + 1
        show = col == 1
        tr = r["trajectory"]
        x = [p["time_s"] for p in tr]
        common = dict(mode="lines", line=dict(color=COLORS[r["solver"]]), legendgroup=r["solver"], name=r["solver"])
        fig.add_trace(go.Scatter(x=x, y=[p["loss"] for p in tr], showlegend=show, **common), row=1, col=col)
        fig.add_trace(go.Scatter(x=x, y=[p["violation"] for p in tr], showlegend=False, **common), row=2, col=col)
        st = r["stationarity"]
        fig.add_trace(go.Scatter(x=[p["time_s"] for p in st], y=[max(p["stationarity"], 1e-12) for p in st],
                                 showlegend=False, **common), row=3, col=col)
    for col in range(1, 4):
        for row in range(1, 4):
            fig.update_xaxes(type="log", row=row, col=col, title_text="CPU time (s)" if row == 3 else None)
        fig.update_yaxes(type="log", row=3, col=col)
    fig.update_layout(title=f"PLADA {FIGURE[constraint][1]} ≤ {TOL} (linear, logistic; train set)",
                      height=900, width=1300, template="plotly_white")
    fig.write_html(path, include_plotlyjs="cdn", full_html=True)


def markdown(result: dict) -> str:
    budget = result["args"]["budget_s"]
    md = [f"# PLADA Figures 1–2: plada vs ssg vs ipc, {budget} s each (linear, logistic, ε = {TOL})", "",
          "Training-set values read off the trajectories at fractions of the budget. violation = "
          "max(0, max_j G_j) of the surrogate; S = approximate-KKT residual min_λ≥0 (‖∇F+∇Gᵀλ‖² + "
          "Σ(λ_j G_j)²)^½ (see `bench/papers/plada_figures.py`). Final = the returned model's exact metrics.", ""]
    checkpoints = [budget / 10, budget / 2, budget]
    for constraint in CONSTRAINTS:
        md += [f"## {FIGURE[constraint][1]}", "",
               "| dataset | solver | iterations | " + " | ".join(
                   f"loss / viol. / S @ {t:g}s" for t in checkpoints) + " | train acc | train gap | test acc | test gap |",
               "|---|---|---|" + "---|" * len(checkpoints) + "---|---|---|---|"]
        gap_key = "demographic_parity" if constraint == "dp" else "equalized_odds"
        for r in result["runs"]:
            if r["constraint"] != constraint:
                continue
            cells = []
            for t in checkpoints:
                loss, viol = at_time(r["trajectory"], "loss", t), at_time(r["trajectory"], "violation", t)
                s = at_time(r["stationarity"], "stationarity", t)
                cells.append("–" if loss is None else f"{loss:.4f} / {viol:.4f} / {s:.1e}" if s is not None
                             else f"{loss:.4f} / {viol:.4f} / –")
            f = r["final_model"]
            md.append(f"| {r['dataset']} | {r['solver']} | {r['iterations']} | " + " | ".join(cells)
                      + f" | {f['train']['accuracy']:.4f} | {f['train'][gap_key]:.4f} | {f['test']['accuracy']:.4f} | "
                      f"{f['test'][gap_key]:.4f} |")
        md.append("")
    md += ["## Does PLADA's advantage show?", "", result["verdict"], ""]
    return "\n".join(md)


def verdict(runs: list[dict], budget: float) -> str:
    """Per (dataset, constraint): does plada have the lowest loss among methods whose violation at the
    end is ≤ 1e-3, and the lowest stationarity? A plain reading of the numbers, no tuning."""
    lines, wins, total = [], 0, 0
    for constraint in CONSTRAINTS:
        for dataset in DATASETS:
            rs = {r["solver"]: r for r in runs if r["constraint"] == constraint and r["dataset"] == dataset}
            if len(rs) < 2 or "plada" not in rs:
                continue
            total += 1
            end = {s: (at_time(r["trajectory"], "loss", budget), at_time(r["trajectory"], "violation", budget),
                       at_time(r["stationarity"], "stationarity", budget)) for s, r in rs.items()}
            feasible = {s: v for s, v in end.items() if v[1] is not None and v[1] <= 1e-3}
            best_loss = min(feasible, key=lambda s: feasible[s][0]) if feasible else None
            best_stat = min(end, key=lambda s: end[s][2] if end[s][2] is not None else math.inf)
            win = best_loss == "plada" and best_stat == "plada"
            wins += win
            desc = ", ".join(f"{s}: loss {v[0]:.4f}, viol {v[1]:.1e}, S {v[2]:.1e}" for s, v in end.items()
                             if v[0] is not None and v[2] is not None)
            lines.append(f"* {dataset} / {constraint.upper()}: lowest feasible loss = {best_loss}, lowest S = "
                         f"{best_stat} ({desc}).")
    head = (f"PLADA is best on both counts (lowest loss among the feasible-at-the-end methods and lowest "
            f"near-stationarity at {budget:g} s) in {wins} of {total} panels.")
    return "\n".join([head, ""] + lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-s", type=float, default=30.0, help="solver time per (dataset, constraint, solver)")
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--constraints", nargs="*", default=list(CONSTRAINTS), choices=list(CONSTRAINTS))
    parser.add_argument("--solvers", nargs="*", default=list(SOLVERS), choices=list(SOLVERS))
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    runs = []
    for constraint in args.constraints:
        for dataset in args.datasets:
            for solver in args.solvers:
                r = run_one(dataset, constraint, solver, args.budget_s)
                runs.append(r)
                st = r["stationarity"][-1]["stationarity"] if r["stationarity"] else float("nan")
                print(f"{constraint} {dataset:7s} {solver:6s}: {r['iterations']} it, loss {r['last']['loss']:.4f}, "
                      f"viol {r['last']['violation']:.2e}, S(last snapshot) {st:.2e}, test acc "
                      f"{r['final_model']['test']['accuracy']:.4f}", flush=True)
    result = {"args": vars(args), "tolerance": TOL,
              "machine": {"python": platform.python_version(), "torch": torch.__version__},
              "runs": runs, "verdict": verdict(runs, args.budget_s)}
    RESULTS.mkdir(exist_ok=True)
    for constraint in args.constraints:
        figure(constraint, runs, RESULTS / f"{FIGURE[constraint][0]}.html")
    (RESULTS / "plada_figures.json").write_text(json.dumps(result, indent=1))
    md = markdown(result)
    (RESULTS / "plada_figures.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()

r"""How far the partial-fairness paper's Table 3/4 points (He, Huang, Yao & Lin; pSP, linear model with
cross terms) can be reached at all on our test splits, whatever the solver: upper estimates of the test
accuracy at a given test fairness 1 − max pSP^I, and the fairness that sampling noise leaves to a perfectly
fair model. Two groups (the paper's datasets); the splits, the model and the metric estimator are those of
:mod:`bench.papers.idca_reproduction` and :mod:`solvers.partial.metrics`.

**pDP relaxation.** For any scores, pSP^I ≥ pDP^I at θ̂ = 0: pDP^I is the difference of the kept CCDFs at
the one threshold θ̂, pSP^I its maximum over all thresholds (Defs 4.2, 4.3; the same for the App. A estimator,
whose KS statistic is a maximum over θ that includes θ̂). pDP^I depends on a model only through r_k, the
number of positive predictions in group k: with the kept positions a_k = ⌈α n_k⌉ < pos ≤ b_k = ⌈β n_k⌉, the
kept share above θ̂ is s_k(r_k) = (min{r_k, b_k} − min{r_k, a_k}) / (b_k − a_k). Hence

    max { accuracy : 1 − pSP^I ≥ f }  ≤  max_{r_0, r_1 : |s_0(r_0) − s_1(r_1)| ≤ 1 − f}  (C_0(r_0) + C_1(r_1)) / n,

where C_k(r) is the largest number of correct predictions in group k with r positives that the model class
reaches. The cross-term model h = ⟨w, (1, ξ, γ, γξ)⟩ is one free linear model per group, so the groups
decouple. C_k is estimated, from above in two ways:

* ``erm_oracle_thresholds``: the unconstrained model of the seed (trained on the training split), each
  group's positives its r highest scores, r chosen on the TEST split (an oracle per-group threshold);
* ``test_fitted``: per group, logistic regressions fitted on that group's TEST samples themselves
  (in-sample; class weights w₊ ∈ ``CLASS_WEIGHTS``, the best of them at each r), thresholds on the test split.
  On a9a its unconstrained accuracy is 0.006 above the trained model's, the optimism of fitting the test set.

Ties are split freely in C_k, which can only raise the estimate.

**Oracle affine recalibration** (``oracle_affine``, on pSP itself): scores (h_0, a·h_1 + δ) of the
unconstrained model (inside the model class), the best common threshold, a and δ on a grid, all chosen on
the TEST split.

**Noise ceiling** (``noise_ceiling``): 1 − pSP^I on the test split's groups of scores drawn i.i.d. from one
continuous distribution (identical score distributions in every group: a perfectly fair model), over
``NOISE_DRAWS`` draws. A band with few samples (bank: 99 'other ages' samples in [0, 25%]) caps the
fairness that any model with untied scores shows on average.

Run: ``python -m bench.papers.idca_attainability [--seeds 5]`` → ``bench/papers/results/idca_attainability.{json,md}``.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from bench.papers.idca_reproduction import PAPER, RESULTS, load, solver_call, build_problem
from solvers import solve
from solvers.partial import partial_sp
from solvers.partial.intervals import Intervals

CLASS_WEIGHTS = (0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0)
NOISE_DRAWS = 200
AFFINE_SCALES = np.exp(np.linspace(np.log(0.25), np.log(4.0), 17))
AFFINE_SHIFTS = np.linspace(-4.0, 6.0, 81)


def correct_by_count(scores: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C(r), r = 0..n: correct predictions when the r highest scores are predicted positive."""
    ys = y[np.argsort(-scores, kind="stable")].astype(np.int64)
    tp = np.concatenate([[0], np.cumsum(ys)])
    r = np.arange(len(ys) + 1)
    return tp + (len(ys) - ys.sum()) - (r - tp)


def band_share(r: np.ndarray, n: int, interval) -> np.ndarray:
    """s(r): the share of a group's kept samples (the metrics' App. A positions, :meth:`Intervals.keep`) among
    its r highest."""
    positions = np.arange(1, n + 1)
    kept = Intervals.build(interval, ["group"]).keep(positions, np.full(n, float(n)), np.zeros(n, np.int64))
    counts = np.concatenate([[0], np.cumsum(kept)])
    return counts[r] / max(counts[-1], 1)


def pdp_relaxation(C0: np.ndarray, C1: np.ndarray, interval, targets) -> list[float]:
    """max (C0(r0) + C1(r1))/n over |s0(r0) − s1(r1)| ≤ 1 − f, for each fairness f in ``targets``.
    s1 is non-decreasing in r1, so the feasible r1 of each r0 form one range (``searchsorted``)."""
    n0, n1 = len(C0) - 1, len(C1) - 1
    s0, s1 = band_share(np.arange(n0 + 1), n0, interval), band_share(np.arange(n1 + 1), n1, interval)
    out = []
    for f in targets:
        tol = 1.0 - f + 1e-12
        lo, hi = np.searchsorted(s1, s0 - tol, "left"), np.searchsorted(s1, s0 + tol, "right")
        best = max((C0[i] + C1[lo[i]:hi[i]].max() for i in range(n0 + 1) if hi[i] > lo[i]), default=0)
        out.append(float(best / (n0 + n1)))
    return out


def test_fitted_counts(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C(r) of one group from logistic regressions fitted on these samples (in-sample), best over class weights."""
    from sklearn.linear_model import LogisticRegression

    best = np.zeros(len(y) + 1, dtype=np.int64)
    for w in CLASS_WEIGHTS:
        clf = LogisticRegression(C=100.0, max_iter=5000, class_weight={0: 1.0, 1: w}).fit(X, y)
        best = np.maximum(best, correct_by_count(clf.decision_function(X), y))
    return best


def oracle_affine(h: np.ndarray, y: np.ndarray, g: np.ndarray, interval, targets) -> list[dict]:
    """Best test accuracy at 1 − pSP^I ≥ f over scores (h_0, a h_1 + δ) and one threshold, all on the test set."""
    points = []
    for a in AFFINE_SCALES:
        for delta in AFFINE_SHIFTS:
            s = np.where(g == 1, a * h + delta, h)
            points.append((1.0 - partial_sp(s, g, interval, 2)["value"], correct_by_count(s, y).max() / len(y),
                           float(a), float(delta)))
    out = []
    for f in targets:
        ok = [p for p in points if p[0] >= f]
        best = max(ok, key=lambda p: p[1], default=None)
        out.append(None if best is None else {"accuracy": best[1], "fairness": best[0], "a": best[2],
                                              "delta": best[3]})
    return out


def noise_ceiling(g: np.ndarray, interval, rng) -> dict:
    """1 − pSP^I of i.i.d. N(0, 1) scores on the groups ``g``: mean, 95th percentile and maximum of the draws."""
    draws = np.array([1.0 - partial_sp(rng.standard_normal(len(g)), g, interval, 2)["value"]
                      for _ in range(NOISE_DRAWS)])
    return {"mean": float(draws.mean()), "p95": float(np.percentile(draws, 95)), "max": float(draws.max())}


def unconstrained_scores(data, interval) -> np.ndarray:
    """Test scores of the seed's unconstrained model (the reproduction's 'unconstrained' run)."""
    import torch

    _, solver, iterations = solver_call("unconstrained", "-", None, None)
    result = solve(build_problem(data, interval, []), solver, max_iterations=iterations)
    with torch.no_grad():
        return result.model(torch.as_tensor(data["test"][0])).double().numpy()


def analyse(dataset: str, seeds: int) -> dict:
    paper = PAPER[dataset]
    interval, targets = paper["interval"], [f for f, _ in paper["points"].values()]
    per_seed, fitted_cache = [], {}
    for seed in range(seeds):
        t0 = time.process_time()
        data = load(dataset, seed)
        X, y, g = data["test"]
        y = (y == 1).astype(np.int64)
        h = unconstrained_scores(data, interval)
        d = (X.shape[1] - 1) // 2                              # the base features ξ of (ξ, γ, γξ)
        key = (y.tobytes(), g.tobytes())                       # a9a: one test split for every seed
        if key not in fitted_cache:
            fitted_cache[key] = pdp_relaxation(*(test_fitted_counts(X[g == k][:, :d], y[g == k]) for k in (0, 1)),
                                               interval, targets)
        per_seed.append({
            "seed": seed,
            "unconstrained": {"accuracy": float(((h > 0) == (y == 1)).mean()),
                              "psp_fairness": 1.0 - partial_sp(h, g, interval, 2)["value"]},
            "erm_oracle_thresholds": pdp_relaxation(*(correct_by_count(h[g == k], y[g == k]) for k in (0, 1)),
                                                    interval, targets),
            "test_fitted": fitted_cache[key],
            "oracle_affine": oracle_affine(h, y, g, interval, targets),
            "noise_ceiling": noise_ceiling(g, interval, np.random.default_rng(seed)),
            "group_sizes": np.bincount(g, minlength=2).tolist(),
            "cpu_seconds": time.process_time() - t0})
        print(dataset, seed, f"{per_seed[-1]['cpu_seconds']:.0f} s CPU", flush=True)
    return {"interval": interval, "seeds": seeds, "per_seed": per_seed, "points": summarise(dataset, per_seed)}


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def summarise(dataset: str, per_seed: list[dict]) -> list[dict]:
    """Per paper point: what the 0.01 criterion needs, our best IDCA point (from the reproduction's report)
    and the seed means of the estimates."""
    ours = []
    report = RESULTS / f"idca_reproduction_{dataset}.json"
    if report.exists():
        ours = [(e["fairness"][0], e["accuracy"][0]) for e in
                json.loads(report.read_text())["fronts"]["psp"].get("idca", [])]
    rows = []
    for i, (kappa, (fair, acc)) in enumerate(PAPER[dataset]["points"].items()):
        affine = [s["oracle_affine"][i] for s in per_seed]
        rows.append({
            "kappa": kappa, "paper_fairness": fair, "paper_accuracy": acc, "needed_accuracy": round(acc - 0.01, 4),
            "best_ours": max((a for f, a in ours if f >= fair), default=None),
            "erm_oracle_thresholds": _mean(s["erm_oracle_thresholds"][i] for s in per_seed),
            "test_fitted": _mean(s["test_fitted"][i] for s in per_seed),
            "oracle_affine": _mean(None if a is None else a["accuracy"] for a in affine),
            "oracle_affine_seeds": sum(a is not None for a in affine),
            "noise_ceiling_mean": _mean(s["noise_ceiling"]["mean"] for s in per_seed)})
    return rows


def _cell(v) -> str:
    return "—" if v is None else f"{v:.4f}"


def write(results: dict) -> None:
    (RESULTS / "idca_attainability.json").write_text(json.dumps(results, indent=2))
    lines = ["# Partial fairness: how far the paper's points can be reached", "",
             "Upper estimates of the test accuracy at the paper's test fairness (1 − max pSP^I), and the fairness a "
             "perfectly fair model shows on the test split; `python -m bench.papers.idca_attainability`, method in its "
             "module doc. Means over seeds (a9a: one test split; its seeds change the unconstrained model only).", ""]
    for dataset, res in results.items():
        noise = [s["noise_ceiling"] for s in res["per_seed"]]
        unc = [s["unconstrained"] for s in res["per_seed"]]
        lines += [f"## {dataset}, I = {res['interval']}, {res['seeds']} seeds", "",
                  f"Test group sizes {res['per_seed'][0]['group_sizes']}. Unconstrained model: accuracy "
                  f"{_mean(u['accuracy'] for u in unc):.4f}, 1 − pSP^I {_mean(u['psp_fairness'] for u in unc):.4f}. "
                  f"Noise ceiling (identical score distributions, {NOISE_DRAWS} draws a seed): mean "
                  f"{_mean(n['mean'] for n in noise):.4f}, 95th percentile {_mean(n['p95'] for n in noise):.4f}, "
                  f"largest draw {max(n['max'] for n in noise):.4f}.", "",
                  "| κ | paper fairness | paper accuracy | needed (paper − 0.01) | best ours at ≥ paper fairness | "
                  "unconstrained model, oracle group thresholds (pDP relaxation) | per-group models fitted on the "
                  "test set (pDP relaxation) | oracle affine recalibration (pSP) | noise ceiling (mean) |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in res["points"]:
            lines.append(f"| {r['kappa']} | {r['paper_fairness']:.4f} | {r['paper_accuracy']:.4f} | "
                         f"{r['needed_accuracy']:.4f} | {_cell(r['best_ours'])} | {_cell(r['erm_oracle_thresholds'])} | "
                         f"{_cell(r['test_fitted'])} | {_cell(r['oracle_affine'])} "
                         f"({r['oracle_affine_seeds']}/{res['seeds']} seeds) | {r['noise_ceiling_mean']:.4f} |")
        lines.append("")
    (RESULTS / "idca_attainability.md").write_text("\n".join(lines))
    print("\n".join(lines))


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--dataset", choices=list(PAPER), nargs="*", default=list(PAPER))
    args = parser.parse_args()
    torch.set_num_threads(1)
    write({ds: analyse(ds, args.seeds) for ds in args.dataset})


if __name__ == "__main__":
    main()

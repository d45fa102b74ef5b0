"""Issue 3, "Tests", third bullet: every constrained solver ends feasible (train violation ≤ tolerance + 0.005)
on generated data with a planted disparity — the cells the per-solver files do not cover.

Already covered elsewhere (not repeated here):
* test_ipc_solvers.py: ssg, ipc, ynw, lagrangian × {demographic_parity, equalized_odds} × {linear, mlp};
* test_stochastic_solvers.py: alm, ssl_alm, ghost, ssw × {demographic_parity, equalized_odds} × linear;
* test_algorithms.py: plada and penalty × demographic_parity × linear (plada MLP only "reduces disparity").

Here:
* loss_gap (two_sided, BCE per-sample loss and BCE objective, as the stochastic benchmark) × every constrained
  solver × {linear, mlp};
* demographic_parity / equalized_odds × mlp for plada, penalty, alm, ssl_alm, ghost, ssw; equalized_odds × linear
  for plada and penalty; ipc_stochastic × {demographic_parity, equalized_odds} × {linear, mlp}.

What is asserted, on the TRAINING data with the exact metrics of :mod:`solvers.metrics`:
* loss_gap: the exact two-sided gap max_{a,b} |L_a − L_b| (from ``loss_gap``'s per-group L_g − L) ≤ δ + 0.005.
  There is no indicator in this metric, so the bound applies to linear models and networks alike.
* demographic_parity / equalized_odds, linear: the exact (indicator) gap ≤ ε + 0.005.
* demographic_parity / equalized_odds, mlp: the sigmoid surrogate's violation ≤ 0.005 AND the exact gap ≤ 0.1.
  For a network the sigmoid surrogate is a looser stand-in for the indicator (a network can keep σ(f) balanced
  while the thresholded predictions are not; test_algorithms.py measured exact gaps of 0.06-0.08 at surrogate
  feasibility), so ε + 0.005 on the exact gap is not what these methods promise there.
* accuracy > the majority-class rate + 0.1, so "feasible by predicting one class" cannot pass.

Budget: everything is full batch (the deterministic version of each method; the stochastic versions are only
feasible in expectation and need far more iterations than a unit run allows) on n = 1500 samples, hidden [16].
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from solvers import CONSTRAINTS, ModelSpec, Problem, group_fairness, solve
from solvers.metrics import loss_gap
from solvers.models import model_factory
from tests.support.problems import planted_problem_data

N = 1500
GROUPS = ["a", "b"]
TOL = {"loss_gap": 0.02, "demographic_parity": 0.05, "equalized_odds": 0.05}
SLACK = 0.005          # the "tolerance + 0.005"
MLP_EXACT = 0.1        # exact DP/EO bound for networks (see the module docstring)
LABEL_NOISE = 0.1      # extra label flips in group a for the loss-gap data

# ---------------------------------------------------------------- per-solver settings
# name -> (params, iterations). Departures from the papers' defaults are made so that a few hundred
# FULL-BATCH iterations suffice for the unit budget; the papers' defaults are exercised on the Simple Example,
# the SLSQP reference and the benchmarks. One setting per solver for every cell (linear and MLP, all families).
SETTINGS = {
    # Table 2 gives η = 0.001 (linear) / 0.1 (NN), which needs ~10⁴ steps here (test_algorithms.py measured
    # this); η = 0.5 reaches the KKT point in a few hundred. τ, α, β, γ_0: Table 2 (per model type).
    "plada": ({"eta": 0.5}, 400),
    # Baseline without a paper default; penalty weight 5 > the multipliers this data needs (exact penalty).
    # lr, optimizer: the class defaults (Adam, 0.05).
    "penalty": ({"penalty": 5.0}, 300),
    # Baseline without a paper default. lr_primal 0.5, lr_dual 0.1 (the linear loss-gap cell is xfail, see XFAIL;
    # lr_dual 1.0, used for DP/EO in test_ipc_solvers.py, diverges on the loss gap).
    "lagrangian": ({"lr_primal": 0.5, "lr_dual": 0.1}, 600),
    # Paper defaults (stochastic benchmark §4: η^f = 0.5, Polyak constraint steps, ε_k = 1e-4, random output
    # over the second half of the run).
    "ssg": ({}, 400),
    # ρ̂ = 0.3, K = 200 instead of §5's ρ̂ = 10^-2.5, K = 10⁴ (those were for SUM-normalised constraints in an
    # ℓ1 ball of radius 20; on mean-normalised F, G the steps 4/(ρ̂(k+2)) would be huge). x_T ("last_outer")
    # instead of the uniform x_R, which is x_0 with probability 1/(T+1) (Theorem 1 holds in expectation).
    "ipc": ({"rho_hat": 0.3, "inner_iterations": 200, "output": "last_outer"}, 400),
    # As ipc, full batch (Algorithm 3's V = √K, α = K are fixed by the paper). Every cell xfail, see XFAIL.
    "ipc_stochastic": ({"rho_hat": 0.3, "inner_iterations": 200, "output": "last_outer", "batch_size": None}, 400),
    # The IPC paper tuned V, α for this baseline and reports none: V = α = 10 (primal step 0.5, multiplier step
    # 0.1) as in test_ipc_solvers.py; last iterate (the average θ̄_K includes the infeasible early iterates and
    # converges at O(1/√K): measured gap 0.032 after 1000 iterations on the linear loss-gap cell).
    "ynw": ({"V": 10.0, "alpha": 10.0, "output": "last"}, 400),
    # Sec. 4 defaults μ = 2, β = 0.5, M_y = 10 kept; τ 0.01 → 0.1, η 0.05 → 0.5, ρ 1 → 5 (a stiffer augmented
    # term and a faster dual; with τ = 0.5 or ρ = 1 the last iterate oscillated ±0.015-0.04 around the bound).
    "ssl_alm": ({"tau": 0.1, "eta": 0.5, "rho": 5.0}, 600),
    "alm": ({"tau": 0.1, "eta": 0.5, "rho": 5.0}, 600),   # μ = 0 by definition; otherwise as ssl_alm
    # Sec. 4 defaults except α0 = 0.05 → 0.5 (as in test_stochastic_solvers.py): 150 full-batch QP steps.
    "ghost": ({"alpha0": 0.5}, 150),
    # η^f = η^c = 0.05 instead of Sec. 4's 0.5 / 0.05: the last iterate of a constant-step switching method ends in
    # a band of width O(η) above the bound (measured on the linear loss-gap cell: 0.5/0.05 → 0.015 over the bound,
    # 0.5/0.5 → violations up to 0.031 over the last quarter, 0.1/0.1 → up to 0.007, 0.05/0.05 → up to 0.004;
    # MLP DP with 0.1/0.1 ended at 0.008). ε_0 = 1e-4 (Sec. 4); full batch, so ε_k is constant.
    "ssw": ({"eta_f": 0.05, "eta_c": 0.05}, 600),
}

# Cells a solver genuinely does not meet within the unit budget: xfail(strict=True) with measured numbers
# (n = 1500, full batch, the settings above unless stated).
_IPC_STOCHASTIC = (
    "Algorithm 3 resets the queues Q to 0 at every subproblem and fixes V = sqrt(K), alpha = K, so the "
    "multiplier Q/V reaches only ~K*G/V = sqrt(K)*G per subproblem on violations G ~ 0.05-0.3: too weak "
    "to restore feasibility within a unit budget. Measured: {}")
XFAIL = {
    ("lagrangian", "loss_gap", "linear"): (
        "GDA oscillates / diverges on the two-sided loss gap: the multiplier settles near the weight of group b "
        "(lambda ~ 0.5), where F + lambda*(L_a - L_b) stops penalising L_b and the linear model's L_b is unbounded. "
        "Measured exact gap 0.220 after 600 iterations (lr 0.5/0.1); lr_dual 1.0 or 0.3 diverge (gap 9e11 / 57); "
        "lr 0.2/0.02-0.05 ends at 0.016-0.055 after 1500 iterations with the violation still swinging up to "
        "+0.035-0.08 over the last quarter (the pass would be the phase of the oscillation, not convergence)."),
    ("ipc_stochastic", "loss_gap", "linear"): _IPC_STOCHASTIC.format(
        "exact gap 0.083 after 400 iterations (K = 200); 0.054 after 3200 (K = 400); K = 10-50 stay at 0.16-0.22."),
    ("ipc_stochastic", "loss_gap", "mlp"): _IPC_STOCHASTIC.format(
        "after 400 iterations accuracy 0.675 (majority rate 0.587: not above it by 0.1)."),
    ("ipc_stochastic", "demographic_parity", "linear"): _IPC_STOCHASTIC.format(
        "exact DP gap 0.178 after 400 iterations; 0.098 after 3200 (K = 400), 0.198 after 3000 (K = 50)."),
    ("ipc_stochastic", "demographic_parity", "mlp"): _IPC_STOCHASTIC.format(
        "surrogate feasible but exact DP gap 0.259 after 400 iterations (0.213 after 800 with K = 400)."),
    ("ipc_stochastic", "equalized_odds", "linear"): _IPC_STOCHASTIC.format(
        "exact EO gap 0.067 after 400 iterations."),
    ("ipc_stochastic", "equalized_odds", "mlp"): _IPC_STOCHASTIC.format(
        "surrogate feasible but exact EO gap 0.315 after 400 iterations (0.204 after 800 with K = 400)."),
}

CELLS = (
    [(name, "loss_gap", model) for name in SETTINGS for model in ("linear", "mlp")]
    + [(name, constraint, "mlp") for name in ("plada", "penalty", "alm", "ssl_alm", "ghost", "ssw")
       for constraint in ("demographic_parity", "equalized_odds")]
    + [(name, "equalized_odds", "linear") for name in ("plada", "penalty")]
    + [("ipc_stochastic", constraint, model) for constraint in ("demographic_parity", "equalized_odds")
       for model in ("linear", "mlp")]
)


def _param(cell):
    reason = XFAIL.get(cell)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason is not None else []
    return pytest.param(*cell, id="-".join(cell), marks=marks)


# ---------------------------------------------------------------- data
def _with_label_noise(X, y, s, fraction, seed=100):
    """Flip ``fraction`` of group a's labels: its irreducible BCE loss rises, planting a loss gap
    (measured ERM two-sided gap on n = 1500: 0.28 linear, 0.25 MLP, against δ = 0.02)."""
    rng = np.random.default_rng(seed)
    flip = (s == 0) & (rng.random(y.size) < fraction)
    return X, np.where(flip, 1 - y, y), s


@pytest.fixture(scope="module")
def datasets():
    base = planted_problem_data(n=N)                  # DP gap ≈ 0.33 under ERM (conftest)
    return {"fairness": base, "loss_gap": _with_label_noise(*base, LABEL_NOISE)}


def _problem(data, model, constraint):
    X, y, s = data
    if constraint == "loss_gap":
        family = CONSTRAINTS.get("loss_gap")(TOL[constraint], {"mode": "two_sided", "loss": "bce"})
        objective = "bce"
    else:
        family = CONSTRAINTS.get(constraint)(TOL[constraint])
        objective = "logistic"
    return Problem(X, y, s, GROUPS, model_factory=model_factory(ModelSpec(type=model, hidden=[16])),
                   model_type=model, objective=objective, constraints=[family], device="cpu")


def _exact(model, data, constraint):
    """(exact train gap, accuracy) of the returned model."""
    X, y, s = data
    with torch.no_grad():
        f = model(torch.as_tensor(X)).double().numpy()
    pred = (f > 0).astype(int)
    if constraint == "loss_gap":
        by_group = loss_gap(y, f, s, GROUPS, "bce")["loss_gap_by_group"]   # L_g − L
        gap = max(by_group.values()) - min(by_group.values())              # = max_{a,b} |L_a − L_b|
    else:
        gap = group_fairness(y, pred, s, GROUPS)[constraint]
    return gap, float((pred == y).mean())


@pytest.mark.parametrize("name,constraint,model", [_param(c) for c in CELLS])
def test_ends_feasible_on_planted_disparity(name, constraint, model, datasets):
    data = datasets["loss_gap" if constraint == "loss_gap" else "fairness"]
    params, iterations = SETTINGS[name]
    res = solve(_problem(data, model, constraint), {"name": name, "params": params},
                max_iterations=iterations, seed=1)
    gap, acc = _exact(res.model, data, constraint)
    y = data[1]
    assert acc > max(y.mean(), 1 - y.mean()) + 0.1, f"trivial model: accuracy {acc:.3f}"
    if constraint == "loss_gap" or model == "linear":
        assert gap <= TOL[constraint] + SLACK, f"exact {constraint} gap {gap:.4f}"
    else:
        assert res.last.max_violation <= SLACK, f"surrogate violation {res.last.max_violation:.4f}"
        assert gap <= MLP_EXACT, f"exact {constraint} gap {gap:.4f}"

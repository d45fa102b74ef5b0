"""Level-set (SFLS + SMD) and IQRC: Lemma 3 vs a numerical argmin, U(r) → 0 as r ↓ f*, streaming
order-independence, model selection on validation, end-to-end runs and the baselines."""
import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.optimize import minimize

from solvers import Problem, ProblemSpec, run, solve
from solvers.algorithms.level_set import LevelSet, lemma3, lemma4
from solvers.auc import AUCParity, auc, fairness_gap
from solvers.auc.surrogate import level_values, term_sets


# ------------------------------------------------------------------ Lemma 3 / Lemma 4
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lemma3_closed_form_matches_numerical_argmin(seed):
    rng = np.random.default_rng(seed)
    c1, I, tau = 0.5, 2.0, float(rng.uniform(0.3, 5.0))
    C = 2 * (1 + math.sqrt(2) * I) ** 2
    u, v = rng.normal(size=3) * 3, rng.normal(size=5) * 2
    y_prev = rng.dirichlet(np.ones(3))
    a_prev = rng.uniform(-I, I, 5)
    g = np.array([0, 1, 1, 2, 2])

    def objective(z):  # −uᵀỹ − vᵀα̃ + V_y(y, y')/τ + d_y(y), in (ỹ = softmax(z[:3]), α = z[3:])
        yt = np.exp(z[:3] - z[:3].max()); yt /= yt.sum()
        a = z[3:]
        at = yt[g] * a
        V = C * np.sum(yt * np.log(yt / y_prev)) + np.sum(yt[g] * (a - a_prev) ** 2)
        return -u @ yt - v @ at + V / tau + c1 * np.sum(yt[g] * a ** 2)

    best = None
    for start in range(4):
        z0 = np.concatenate([rng.normal(size=3), rng.uniform(-I, I, 5)])
        res = minimize(objective, z0, method="L-BFGS-B", bounds=[(None, None)] * 3 + [(-I, I)] * 5,
                       options={"ftol": 1e-14, "gtol": 1e-10, "maxiter": 5000})
        best = res if best is None or res.fun < best.fun else best
    y_cf, a_cf = lemma3(torch.tensor(y_prev), torch.tensor(a_prev), torch.tensor(u), torch.tensor(v), tau, c1, I)
    z_cf = np.concatenate([np.log(y_cf.numpy()), a_cf.numpy()])
    assert objective(z_cf) <= best.fun + 1e-8
    yb = np.exp(best.x[:3] - best.x[:3].max()); yb /= yb.sum()
    np.testing.assert_allclose(y_cf.numpy(), yb, atol=1e-4)
    np.testing.assert_allclose(a_cf.numpy(), best.x[3:], atol=1e-4)
    assert np.all(np.abs(a_cf.numpy()) <= I) and abs(float(y_cf.sum()) - 1) < 1e-12


def test_lemma4_is_the_max_over_y():
    rng = np.random.default_rng(5)
    u, v, c1, I = rng.normal(size=3), rng.normal(size=5), 0.5, 2.0
    a = np.linspace(-I, I, 4001)
    mu = (a[None, :] * v[:, None] - c1 * a[None, :] ** 2).max(1)
    brute = max(u[0] + mu[0], u[1] + mu[1] + mu[2], u[2] + mu[3] + mu[4])
    assert lemma4(torch.tensor(u), torch.tensor(v), c1, I) == pytest.approx(brute, abs=1e-6)


# ------------------------------------------------------------------ small problem with a reference f*
def planted(n=400, seed=0):
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3))
    X[:, 0] += 0.8 * group
    y = (X[:, 0] + 0.3 * X[:, 1] + 0.5 * rng.normal(size=n) > 0.5).astype(np.int64)
    return X.astype(np.float32), y, group


def closed_forms(X, y, group, variant, c1, c2):
    yt, prot = torch.tensor(y, dtype=torch.float64), torch.tensor(group == 0)
    in_p, in_q = term_sets(yt, prot, variant)
    Xt = torch.tensor(X, dtype=torch.float64)
    return lambda w: level_values(Xt @ torch.tensor(w, dtype=torch.float64), in_p, in_q, c1, c2).numpy()


def reference_H(f, r, kappa, d):
    """H(r) = min_w max{f₀ − r, f₁ − 1 − κ, f₂ − 1 − κ} by SLSQP on the epigraph."""
    cons = [{"type": "ineq", "fun": lambda z, j=j: z[-1] - (f(z[:-1])[j] - (r if j == 0 else 1 + kappa))}
            for j in range(3)]
    res = minimize(lambda z: z[-1], np.zeros(d + 1), constraints=cons, method="SLSQP", options={"ftol": 1e-12,
                                                                                               "maxiter": 500})
    return float(res.fun)


def oracle_U(problem, r, T, **params):
    """One oracle call A(r) (Algorithm 2) from w = 0; returns U(r) of Lemma 4."""
    cfg = LevelSet.Config(r0=r, inner_iterations=T, batch_size=None, select_every=10 ** 9, **params)
    algo = LevelSet(problem, cfg, problem.make_model(), seed=0)
    algo.start(None)
    for k in range(T):
        algo.step(k, None)
    return algo.history[0]["U"]


def test_U_increases_to_zero_as_r_decreases_to_f_star():
    X, y, group = planted()
    kappa, c1, c2 = 0.3, 0.5, 1.0   # κ large enough that H(r) is not floored at −κ (w = 0 gives f₁ − 1 − κ = −κ)
    f = closed_forms(X, y, group, "group", c1, c2)
    cons = [{"type": "ineq", "fun": lambda w, j=j: 1 + kappa - f(w)[j]} for j in (1, 2)]
    ref = minimize(lambda w: f(w)[0], np.zeros(3), constraints=cons, method="SLSQP", options={"ftol": 1e-12})
    f_star = float(ref.fun)
    fam = AUCParity(kappa, {"variant": "group", "c1": c1, "c2": c2})
    problem = Problem(X=X, y=y, group=group, group_names=["a", "b"], constraints=[fam], device="cpu")
    Us, Hs = [], []
    for delta in (0.2, 0.08, 0.02):
        Us.append(oracle_U(problem, f_star + delta, T=1000, eta=0.2, tau=10.0))
        Hs.append(reference_H(f, f_star + delta, kappa, 3))
    assert Hs[0] < Hs[1] < Hs[2] < 0
    assert Us[0] < Us[1] < 0                        # r well above f*: U(r) < 0
    assert Us[0] < Us[1] < Us[2]                    # U(r) ↑ 0 as r ↓ f*
    assert abs(Us[2]) < 0.1 * abs(Us[0])
    for u, h in zip(Us, Hs):                        # U(r) estimates H(r)
        assert u == pytest.approx(h, abs=0.02)


# ------------------------------------------------------------------ streaming order independence
def test_streaming_result_does_not_depend_on_pairing():
    """Single-sample SMD steps: all positives first, then all negatives (no positive–negative pair
    ever shares a step) reaches the same solution as a shuffled stream."""
    X, y, group = planted(300, 1)
    fam = AUCParity(0.05, {"variant": "inter"})
    problem = Problem(X=X, y=y, group=group, group_names=["a", "b"], constraints=[fam], device="cpu")
    orders = {"sorted": np.argsort(-y, kind="stable"), "shuffled": np.random.default_rng(0).permutation(len(y))}
    results = {}
    for name, order in orders.items():
        cfg = LevelSet.Config(batch_size=1, inner_iterations=len(y) * 8, eta=0.02, tau=1.0, select_every=10 ** 9)
        algo = LevelSet(problem, cfg, problem.make_model(), seed=0)
        stream = iter(np.tile(order, 8))
        algo.batch = lambda: torch.tensor([next(stream)])
        algo.start(None)
        for k in range(len(y) * 8):
            algo.step(k, None)
        with torch.no_grad():
            s = algo.model(problem.X).numpy()  # x̄ of the oracle call
        results[name] = (auc(y, s), fairness_gap(y, s, group == 0, "inter"), algo.history[0]["U"])
    (a1, g1, u1), (a2, g2, u2) = results["sorted"], results["shuffled"]
    assert a1 > 0.8 and a2 > 0.8
    assert a1 == pytest.approx(a2, abs=0.005) and g1 == pytest.approx(g2, abs=0.01) and u1 == pytest.approx(u2, abs=0.01)


# ------------------------------------------------------------------ end to end
def table(n=1500, seed=0):
    X, y, group = planted(n, seed)
    return pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1], "x2": X[:, 2], "s": np.where(group == 0, "a", "b"),
                         "label": y})


@pytest.mark.parametrize("solver,model", [("level_set", "linear"), ("iqrc", "mlp")])
def test_run_with_model_selection_meets_the_exact_constraint(solver, model):
    kappa = 0.03
    spec = ProblemSpec(target="label", positive_label=1, sensitive=["s"], objective="auc_square",
                       model={"type": model, "hidden": [10], "activation": "tanh"},
                       constraints=[{"type": "auc_parity", "tolerance": kappa, "variant": "group", "n_boot": 20}],
                       solver={"name": solver, "params": {"inner_iterations": 200}}, max_iterations=800, device="cpu")
    out = run(table(), spec)
    loose = spec.model_dump()
    loose["constraints"] = [{"type": "auc_parity", "tolerance": 1.0, "variant": "group", "n_boot": 0}]
    free = run(table(), ProblemSpec(**loose))
    val, test = out.metrics["validation"], out.metrics["test"]
    assert val["auc_parity"] <= kappa                        # selected iterate: feasible on validation
    assert free.metrics["validation"]["auc_parity"] > 0.1    # the unconstrained model is unfair
    assert test["auc_parity"] < 0.5 * free.metrics["test"]["auc_parity"]
    assert test["auc_parity_detail"]["auc"] > 0.6
    assert len(test["auc_parity_detail"]["value_ci"]) == 2


@pytest.mark.parametrize("solver,variant,params", [("proxy_lagrangian", "inter", {}),
                                                   ("correlation_penalty", "group", {"lam": 10.0}),
                                                   ("auc_postprocess", "group", {})])
def test_baselines_run_and_select(solver, variant, params):
    X, y, group = planted(1200, 2)
    Xg = np.column_stack([X, (group == 0).astype(np.float32)])   # the group indicator as a feature
    fam = AUCParity(0.05, {"variant": variant, "n_boot": 0})
    tr, va = slice(0, 900), slice(900, None)
    problem = Problem(X=Xg[tr], y=y[tr], group=group[tr], group_names=["a", "b"], constraints=[fam], device="cpu")
    val = Problem(X=Xg[va], y=y[va], group=group[va], group_names=["a", "b"], device="cpu")
    res = solve(problem, {"name": solver, "params": params}, max_iterations=300, validation=val)
    with torch.no_grad():
        s = res.model(val.X).numpy()
    assert auc(y[va], s) > 0.7
    assert fairness_gap(y[va], s, group[va] == 0, variant) <= 0.05 + 1e-9


def test_a_post_processed_model_warm_starts_a_run():
    """``run(initial_state=...)`` takes a post-processed (score-shifted) state through the same loading path
    as the saved model (``restore_model``): a warm-started sweep job does not fail to load it."""
    frame = table(900)
    frame["is_a"] = (frame["s"] == "a").astype(float)   # the protected-group indicator the shift acts on
    spec = ProblemSpec(target="label", positive_label=1, sensitive=["s"], objective="auc_square",
                       constraints=[{"type": "auc_parity", "tolerance": 0.05, "variant": "group", "n_boot": 0}],
                       solver={"name": "auc_postprocess"}, max_iterations=100, device="cpu")
    first = run(frame, spec)
    assert any(k.endswith("omega") for k in first.state_dict)  # the saved state carries the shift
    again = run(frame, spec, initial_state=first.state_dict)
    assert again.iterations == 100 and again.metrics["test"]["roc_auc"] > 0.6

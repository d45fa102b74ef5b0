"""SSL-ALM / ALM, Stochastic Ghost, SSw and SGD-Fairret (stochastic benchmark paper) on known answers."""
import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from solvers import CONSTRAINTS, ModelSpec, Problem, group_fairness, solve
from solvers.algorithms import ALGORITHMS, run_algorithm
from solvers.algorithms.ghost import kappa, solve_direction_qp, solve_kappa_lp
from solvers.models import model_factory
from tests.support.reference import convex_problem, simple_example

TOL = 0.05


def _run(problem, name, iterations, seed=0, **params):
    cls = ALGORITHMS.get(name)
    return run_algorithm(cls, problem, cls.Config(**params), max_iterations=iterations, seed=seed)


# ---------------------------------------------------------------- Simple Example (IPC paper, f* = -0.5)
# τ = 0.1 instead of the paper's 0.01: with s_0 = 0 the AL term first pulls x towards the saddle x = 0
# and τ = 0.01 needs ~5k iterations to leave it (measured); τ = 0.1 reaches x* = (0, ±1) in < 1000.
@pytest.mark.parametrize("name", ["alm", "ssl_alm"])
def test_alm_simple_example(name):
    res = _run(simple_example(), name, 1000, tau=0.1)
    assert res.last.max_violation == 0.0
    assert abs(res.last.objective - (-0.5)) < 0.05
    assert res.last.duals["slack"][0] == pytest.approx(12.5, abs=1e-3)  # s = −G(x*) (inactive constraint)


# Ghost: batch_size=1 runs the whole multilevel machinery (four QPs, LPs, geometric N) on the one
# "sample" of the duck-typed problem; all levels coincide, so (9) reduces to the deterministic d.
@pytest.mark.parametrize("batch_size", [None, 1])
def test_ghost_simple_example(batch_size):
    res = _run(simple_example(), "ghost", 40, batch_size=batch_size)
    assert res.last.max_violation == 0.0
    assert abs(res.last.objective + 0.5) < 0.05


def test_ssw_simple_example():
    res = _run(simple_example(), "ssw", 100)  # full batch: ε_k = 1e-4, the deterministic switching method
    assert res.last.max_violation == 0.0
    assert abs(res.last.objective + 0.5) < 0.05


# ---------------------------------------------------------------- convex reference (SLSQP)
@pytest.fixture(scope="module")
def ref():
    return convex_problem()


@pytest.mark.parametrize("name", ["alm", "ssl_alm"])
def test_alm_convex_reference(ref, name):
    res = _run(ref.problem, name, 1500, tau=0.1)  # full batch; paper τ = 0.01 also converges in ~3000
    assert abs(res.last.objective - ref.objective) < 1e-3
    assert res.last.constraints[0] <= 1e-3
    assert abs(res.last.constraints[0] - ref.constraint) < 1e-3
    assert res.last.duals["y"][0] > 0  # the constraint is active at the optimum


def test_ghost_convex_reference_full_batch(ref):
    res = _run(ref.problem, "ghost", 150, alpha0=0.5)
    assert abs(res.last.objective - ref.objective) < 1e-3
    assert abs(res.last.constraints[0] - ref.constraint) < 1e-3
    assert res.last.duals["qp_lambda"][0] > 0


def test_ghost_convex_reference_stochastic(ref):
    # Stochastic Ghost with batch 32 (+32 per group) and α_k ≈ 20/k: the iterate fluctuates by
    # O(α_k · std(d)) ≈ 1e-2 around the optimum after 150 steps, hence the looser 1e-2 bound.
    res = solve(ref.problem, {"name": "ghost", "params": {"batch_size": 32, "alpha0": 0.5}}, max_iterations=150)
    with torch.no_grad():
        full = ref.problem.evaluate(res.model)
    assert abs(float(full.objective) - ref.objective) < 1e-2
    assert float(full.constraints[0]) < 1e-2


def test_ssw_convex_reference(ref):
    # Full-batch switching subgradient with constant steps ends in a band around the optimum whose width
    # is O(η): with η^f = η^c = 0.05 we bound the objective by 1e-2 and the violation by 5e-3.
    res = _run(ref.problem, "ssw", 1500, eta_f=0.05, eta_c=0.05)
    assert abs(res.last.objective - ref.objective) < 1e-2
    assert res.last.constraints[0] < 5e-3


# ---------------------------------------------------------------- planted disparity (exact gaps)
def _problem(planted, model, constraint):
    X, y, s = planted
    return Problem(X, y, s, ["a", "b"], model_factory=model_factory(ModelSpec(type=model, hidden=[16])),
                   model_type=model, constraints=[CONSTRAINTS.get(constraint)(TOL)], device="cpu")


def _exact(res, planted, constraint):
    X, y, s = planted
    with torch.no_grad():
        pred = (res.model(torch.as_tensor(X)).numpy() > 0).astype(int)
    return group_fairness(y, pred, s, ["a", "b"])[constraint]


PLANTED = [
    ("alm", {"tau": 0.5}, 600),
    ("ssl_alm", {"tau": 0.5}, 600),
    ("ghost", {"alpha0": 0.5}, 150),
    ("ssw", {"eta_f": 0.2, "eta_c": 0.2}, 800),
]


@pytest.mark.parametrize("constraint", ["demographic_parity", "equalized_odds"])
@pytest.mark.parametrize("name,params,iterations", PLANTED, ids=[p[0] for p in PLANTED])
def test_planted_linear_feasible(planted, name, params, iterations, constraint):
    # Full batch (the deterministic version of each method): the stochastic versions only guarantee
    # feasibility in expectation, and the unit budget does not allow the iterations small batches need.
    res = solve(_problem(planted, "linear", constraint), {"name": name, "params": params}, max_iterations=iterations)
    assert _exact(res, planted, constraint) <= TOL + 0.005


@pytest.mark.parametrize("constraint,statistic", [("demographic_parity", "positive_rate"),
                                                  ("equalized_odds", "tpr_fpr")])
def test_fairret_planted_linear(planted, constraint, statistic):
    params = {"statistic": statistic, "penalty": 5.0, "optimizer": "adam"}
    res = solve(_problem(planted, "linear", constraint), {"name": "fairret_penalty", "params": params},
                max_iterations=300)
    assert _exact(res, planted, constraint) <= TOL + 0.005
    assert res.last.duals == {"penalty": [5.0]}


# (ALM on the MLP: measured 16 s for 150 batched steps on 2 cores, over the unit budget; not run here.)
@pytest.mark.parametrize("name,params,iterations", [("ghost", {"alpha0": 0.5, "batch_size": 256}, 25)])
def test_planted_mlp_stochastic_reduces_disparity(planted, name, params, iterations):
    # MLP, mini-batches. For networks the sigmoid surrogate is a loose stand-in for the exact gap
    # (see test_algorithms.py: 0.06-0.08 at surrogate feasibility) and these methods are feasible only
    # in expectation, so: large batches, and a large reduction from ERM's ≈ 0.33 rather than ε + 0.005.
    res = solve(_problem(planted, "mlp", "demographic_parity"), {"name": name, "params": params},
                max_iterations=iterations, seed=1)
    assert _exact(res, planted, "demographic_parity") < 0.12
    assert res.samples_seen > iterations * params["batch_size"]


# ---------------------------------------------------------------- Ghost subproblems
def test_ghost_qp_matches_slsqp_and_kkt():
    rng = np.random.default_rng(3)
    n, m, tau, beta = 8, 3, 1.0, 0.7
    g, A, c = rng.normal(size=n) * 3, rng.normal(size=(m, n)), rng.normal(size=m) + 0.5
    k = kappa(c, A, 0.5, 0.5)
    t_star = solve_kappa_lp(c, A, 0.5)
    assert 0.0 <= t_star <= max(0.0, c.max()) and k >= t_star - 1e-9
    d, lam = solve_direction_qp(g, c, A, k, tau, beta)
    ref = minimize(lambda x: g @ x + 0.5 * tau * x @ x, np.zeros(n), jac=lambda x: g + tau * x, method="SLSQP",
                   bounds=[(-beta, beta)] * n, tol=1e-10,
                   constraints=[{"type": "ineq", "fun": lambda x: k - c - A @ x, "jac": lambda x: -A}])
    assert ref.success
    np.testing.assert_allclose(d, ref.x, atol=1e-6)
    # KKT: primal feasibility, dual feasibility, complementarity, stationarity on the box
    r = c + A @ d - k
    assert r.max() <= 1e-8 and np.abs(d).max() <= beta + 1e-12 and (lam >= 0).all()
    assert np.abs(lam * r).max() < 1e-7
    assert lam.max() > 0  # the instance has an active linear row
    np.testing.assert_allclose(d, np.clip(-(g + A.T @ lam) / tau, -beta, beta), atol=1e-12)
    # the LP's minimiser makes (8) feasible: t* is attained by some ‖d‖_∞ ≤ ρ
    assert solve_kappa_lp(np.array([-1.0, -2.0]), A[:2], 0.5) == 0.0


# ---------------------------------------------------------------- determinism
@pytest.mark.parametrize("name,params", [("ssl_alm", {"batch_size": 64}), ("ghost", {"batch_size": 32}),
                                         ("ssw", {"batch_size": 64}), ("fairret_penalty", {"batch_size": 64})])
def test_seeded_trajectories(planted, name, params):
    def run(seed):
        rec = []
        from solvers.observer import Observer

        class Keep(Observer):
            def on_iteration(self, record):
                rec.append((record.objective, tuple(record.constraints)))
        solve(_problem(planted, "linear", "demographic_parity"), {"name": name, "params": params},
              Keep(), max_iterations=8, seed=seed)
        return rec
    a, b, c = run(0), run(0), run(1)
    assert a == b
    assert a != c

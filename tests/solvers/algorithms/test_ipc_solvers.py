"""SSG, IPC (Algorithms 1+2 and 1+3), YNW and Lagrangian GDA on problems with known answers.

Known answers: the IPC paper's Simple Example (f* = −0.5 at (0, ±1)), the convex logistic
problem solved by SLSQP (tests/support/reference.py) and the planted-disparity data (conftest).
"""
import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from solvers import CONSTRAINTS, ModelSpec, Problem, group_fairness, solve
from solvers.models import model_factory
from solvers.observer import Observer
from solvers.problem import Evaluation
from tests.support.problems import planted_problem_data
from tests.support.reference import convex_problem, simple_example

# ---------------------------------------------------------------- Simple Example (IPC §5)
# Paper settings where the paper gives them: x_0 = (0, 0.5), ε̂ = 1e-2, ρ̂ = 2ρ = 10 (ρ = 5).
# K = 200 inner steps instead of 1/ε̂² = 10⁴: the 2-D subproblem is solved long before that.
# Outputs: Algorithm 1's x_R (R uniform on {0..T}) is x_0 with probability 1/(T+1) — Theorem 1
# bounds it only in expectation — so the accuracy checks use x_T ("last_outer"); YNW's average
# includes θ_0, so its last iterate is checked. SSG keeps its paper output (second half of I).
SIMPLE = {
    "ssg": ({}, 300),
    "ipc": ({"rho_hat": 10.0, "inner_iterations": 200, "output": "last_outer"}, 2000),
    "ipc_stochastic": ({"rho_hat": 10.0, "inner_iterations": 200, "output": "last_outer"}, 2000),
    "ynw": ({"V": 10.0, "alpha": 10.0, "output": "last"}, 1000),
    "lagrangian": ({}, 300),
}


@pytest.mark.parametrize("name", list(SIMPLE))
def test_simple_example(name):
    params, iterations = SIMPLE[name]
    problem = simple_example()
    res = solve(problem, {"name": name, "params": params}, max_iterations=iterations)
    x = res.model.x.detach()
    assert x.dtype == torch.float64
    assert x.abs().sum() <= 1.0 + 1e-9                          # in X (ℓ1 ball)
    assert res.last.constraints[0] <= 1e-6 + 1e-4                # g(x) ≤ 0
    assert abs(res.last.objective - problem.f_star) <= 0.05
    with torch.no_grad():                                        # the record describes the returned model
        assert res.last.objective == pytest.approx(float(problem.evaluate(res.model).objective), abs=1e-12)


# ---------------------------------------------------------------- convex reference (SLSQP)
# Update rules as in the papers; parameters chosen for a fast run (the papers tuned these):
# * ssg: paper defaults (η^f = 0.5, Polyak constraint steps, ε_k = 1e-4, random output over the
#   second half): on a linear constraint an objective step followed by Polyak's step is a
#   projected gradient step onto the constraint, so SSG converges to the KKT point itself.
# * ynw: the paper tuned V and α; V = α = 10 makes the primal step V/(2α) = 0.5 and the
#   implied multiplier step 1/V = 0.1. Last iterate (the averaged output converges at O(1/√K)).
# * lagrangian: lr_primal 0.5, lr_dual 0.1.
# * ipc: ρ = 0 is the truth for a convex problem (ρ = 1e-9 here), ρ̂ = 1, K = 1000: the oracle's
#   error is O(M²/((ρ̂−ρ)K)) (Theorem 2) and the outer loop is a proximal point method, so IPC
#   (an O(1/ε⁴) method) needs ~10⁴ more steps for 1e-3; measured after 6000 steps: |F − F*| ≈ 1.4e-3,
#   so it gets a 2e-3 band (see IPC_BAND) to keep the unit run short. last_outer = x_T.
CONVEX = {
    "ssg": ({}, 600),
    "ynw": ({"V": 10.0, "alpha": 10.0, "output": "last"}, 600),
    "lagrangian": ({"lr_primal": 0.5, "lr_dual": 0.1}, 600),
    "ipc": ({"rho_hat": 1.0, "rho": 1e-9, "inner_iterations": 1000, "output": "last_outer"}, 6000),
}
IPC_BAND = 2e-3


@pytest.fixture(scope="module")
def convex():
    return convex_problem()


@pytest.mark.parametrize("name", list(CONVEX))
def test_convex_reference(name, convex):
    params, iterations = CONVEX[name]
    res = solve(convex.problem, {"name": name, "params": params}, max_iterations=iterations)
    F, G = res.last.objective, res.last.constraints[0]
    band = IPC_BAND if name == "ipc" else 1e-3
    assert abs(F - convex.objective) <= band
    assert G <= 1e-3
    assert abs(G - convex.constraint) <= band


# ---------------------------------------------------------------- planted disparity
TOL = 0.05
PLANTED = {
    "ssg": ({"eta_f": 0.5}, 600),
    "ipc": ({"rho_hat": 0.3, "inner_iterations": 200, "output": "last_outer"}, 800),
    "ynw": ({"V": 10.0, "alpha": 10.0, "output": "last"}, 600),
    "lagrangian": ({"lr_primal": 0.5, "lr_dual": 1.0}, 600),
}


def _planted_problem(planted, model, constraint):
    X, y, s = planted
    spec = ModelSpec(type=model, hidden=[16])
    return Problem(X, y, s, ["a", "b"], model_factory=model_factory(spec), model_type=model,
                   constraints=[CONSTRAINTS.get(constraint)(TOL)], device="cpu")


@pytest.fixture(scope="module")
def planted_small():
    # the MLP runs use 1500 samples of the same generator to keep the unit run short
    return planted_problem_data(n=1500)


@pytest.mark.parametrize("model", ["linear", "mlp"])
@pytest.mark.parametrize("constraint", ["demographic_parity", "equalized_odds"])
@pytest.mark.parametrize("name", list(PLANTED))
def test_planted_ends_feasible(name, constraint, model, planted, planted_small):
    data = planted if model == "linear" else planted_small
    X, y, s = data
    params, iterations = PLANTED[name]
    res = solve(_planted_problem(data, model, constraint), {"name": name, "params": params},
                max_iterations=iterations if model == "linear" else iterations // 2, seed=1)
    with torch.no_grad():
        pred = (res.model(torch.as_tensor(X)).numpy() > 0).astype(int)
    gap = group_fairness(y, pred, s, ["a", "b"])[constraint]
    acc = (pred == y).mean()
    assert res.last.max_violation <= 2e-3                  # the surrogate constraint holds
    assert acc > max(y.mean(), 1 - y.mean()) + 0.1         # and the model is not trivial
    # The exact (indicator) gap tracks the sigmoid surrogate for a linear model on this
    # strongly planted signal; for the MLP the surrogate is a looser stand-in (test_algorithms
    # measured exact gaps 0.06-0.08 at surrogate feasibility), hence the looser bound.
    assert gap <= (TOL + 0.005 if model == "linear" else 0.1)


# ---------------------------------------------------------------- Theorem 2 (oracle guarantee)
def test_switching_oracle_is_eps_hat_optimal_and_feasible():
    """Theorem 2: Algorithm 2's output x_{t+1} satisfies F(x_{t+1}) − F(x̂_t) ≤ ε̂² and
    G(x_{t+1}) ≤ ε̂² for subproblem (9), here at t = 0 (x_0 = θ_0) of a small convex quadratic
    problem whose constraint is active, with x̂_0 from SLSQP."""
    A = torch.tensor([[3.0, 0.5], [0.5, 1.0]], dtype=torch.float64)
    b = torch.tensor([-2.0, -3.0], dtype=torch.float64)
    problem = simple_example()
    problem.radius = 10.0

    def evaluate(model, idx=None):
        x = model.x
        f = 0.5 * x @ A @ x + b @ x
        g = x @ x - 1.0                     # ‖x‖² ≤ 1, active at the minimiser
        return Evaluation(x, f, g.reshape(1))

    problem.evaluate = evaluate
    rho_hat, eps_hat = 2.0, 0.05
    res = solve(problem, {"name": "ipc", "params": {"rho_hat": rho_hat, "rho": 1e-9, "eps_hat": eps_hat,
                                                     "inner_iterations": 2000, "output": "last_outer"}},
                max_iterations=2000)  # exactly one subproblem
    x1 = res.model.x.detach().numpy()
    x0 = np.array([0.0, 0.5])
    An, bn = A.numpy(), b.numpy()

    def F(y):
        return 0.5 * y @ An @ y + bn @ y + rho_hat / 2 * np.sum((y - x0) ** 2)

    def G(y):
        return y @ y - 1.0 + rho_hat / 2 * np.sum((y - x0) ** 2)

    ref = minimize(F, x0, method="SLSQP", tol=1e-12, constraints=[{"type": "ineq", "fun": lambda y: -G(y)}])
    assert ref.success and abs(G(ref.x)) < 1e-8          # the constraint of (9) is active
    assert F(x1) - ref.fun <= eps_hat ** 2
    assert G(x1) <= eps_hat ** 2
    assert F(x1) - ref.fun >= -eps_hat ** 2              # (not trivially below: it is feasible up to ε̂²)


# ---------------------------------------------------------------- mechanics
class _Records(Observer):
    def __init__(self):
        self.records = []

    def on_iteration(self, record):
        self.records.append(record)


def test_ipc_inner_step_granularity_and_outer_index(convex):
    obs = _Records()
    params = {"rho_hat": 1.0, "inner_iterations": 7, "output": "last"}
    res = solve(convex.problem, {"name": "ipc", "params": params}, obs, max_iterations=30)
    assert res.iterations == 30 and len(obs.records) == 30
    outer = [r.duals["outer_iteration"][0] for r in obs.records]
    assert outer[:7] == [0.0] * 6 + [1.0] and outer[-1] == 4.0   # t advances every K = 7 inner steps
    assert {r.duals["objective_step"][0] for r in obs.records} <= {0.0, 1.0}


def test_random_output_rules_are_seeded_and_reported(convex):
    for name, params in [("ssg", {}), ("ipc", {"rho_hat": 1.0, "inner_iterations": 10, "output": "random"})]:
        a = solve(convex.problem, {"name": name, "params": params}, max_iterations=25, seed=4)
        b = solve(convex.problem, {"name": name, "params": params}, max_iterations=25, seed=4)
        last = solve(convex.problem, {"name": name, "params": {**params, "output": "last"}}, max_iterations=25, seed=4)
        for pa, pb in zip(a.model.parameters(), b.model.parameters()):
            assert torch.equal(pa, pb)
        assert a.last.objective == b.last.objective
        with torch.no_grad():
            ev = convex.problem.evaluate(a.model)
        assert a.last.objective == pytest.approx(float(ev.objective), rel=1e-6)
        assert a.last.objective != last.last.objective       # the output rule changes the reported point


def test_mini_batch_runs_are_deterministic(planted):
    problem = _planted_problem(planted, "linear", "demographic_parity")
    for name in ["ssg", "ipc_stochastic", "ynw", "lagrangian"]:
        spec = {"name": name, "params": {"batch_size": 256}}
        a = solve(problem, spec, max_iterations=20, seed=2)
        b = solve(problem, spec, max_iterations=20, seed=2)
        assert a.samples_seen == 20 * 256
        assert a.last.objective == b.last.objective and a.last.duals == b.last.duals


def test_registered_with_schemas():
    from solvers.catalog import ALGORITHMS, describe_solver

    for name in ["ssg", "ipc", "ipp_ssg", "ipc_stochastic", "ynw", "lagrangian"]:
        entry = describe_solver(ALGORITHMS.entry(name))
        assert entry["paper"] and entry["config_schema"]["properties"]
    assert ALGORITHMS.get("ipp_ssg").name == "ipc"
    defaults = ALGORITHMS.get("ipc").Config()
    assert defaults.eps_hat == 1e-2 and defaults.resolved_inner() == 10_000
    assert defaults.rho_hat == pytest.approx(10 ** -2.5) and defaults.resolved_rho() == pytest.approx(10 ** -2.5 / 2)


def test_ipc_default_output_is_not_the_start_when_no_subproblem_completes(convex):
    # §5's K = 1/ε̂² = 10⁴ inner steps: a 50-iteration run completes no subproblem, so the paper's
    # x_R would be x_0 = θ_0 = 0; the default output reports the last iterate instead.
    res = solve(convex.problem, {"name": "ipc", "params": {"rho_hat": 1.0}}, max_iterations=50)
    assert res.last.duals["outer_iteration"][0] == 0.0
    assert any(p.abs().sum() > 0 for p in res.model.parameters())
    paper = solve(convex.problem, {"name": "ipc", "params": {"rho_hat": 1.0, "output": "random"}}, max_iterations=50)
    assert all(p.abs().sum() == 0 for p in paper.model.parameters())

"""The pairwise baselines of the partial-fairness paper (App. G.3): group AUC (102), inter-group (105) and
intra-group (107) constraints with σ(x) = ½(1 + x)², by projected gradient with an SLSQP projection."""
import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from solvers import ALGORITHMS, ConstraintSpec, Problem, solve
from solvers.catalog import describe_solver
from solvers.algorithms.pairwise_auc_pg import (PairwiseAUCPG, pairwise_rows, project, quadratic_rows, row_values,
                                                term_masks)
from solvers.auc.metrics import fairness_gap

VARIANTS = ("group", "inter", "intra")



def _data(n, d, G, seed):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, G, n)
    X = rng.normal(size=(n, d))
    X[:, 0] += 0.8 * g
    y = (rng.random(n) < 1 / (1 + np.exp(-(X[:, 0] + X[:, 1])))).astype(np.float64)
    return torch.tensor(X), torch.tensor(y), torch.tensor(g)


def _brute_rows(h, y, g, G, variant):
    """The rows of (102)/(105)/(107), κ-free, as explicit double sums over pairs (ordered pairs k ≠ k')."""
    sig = lambda x: 0.5 * (1.0 + x) ** 2

    def S(a, b):  # mean over (i ∈ a, j ∈ b) of σ(h_i − h_j)
        return sig(h[a][:, None] - h[b][None, :]).mean()

    pos, out = y > 0.5, []
    for k in range(G):
        for kp in range(G):
            if k == kp:
                continue
            if variant == "group":
                out.append(S(g == k, g == kp) - 0.5)
            elif variant == "inter":
                out.append(S((g == k) & pos, (g == kp) & ~pos) + S((g == k) & ~pos, (g == kp) & pos) - 1.0)
            else:
                out.append(S((g == k) & pos, (g == k) & ~pos) + S((g == kp) & ~pos, (g == kp) & pos) - 1.0)
    return np.array(out)


@pytest.mark.parametrize("variant", VARIANTS)
def test_closed_form_surrogate_equals_pairwise_sum(variant):
    """Score space (means/variances, O(n)) and weight space (½wᵀHw + gᵀw + c) both equal the brute-force sums."""
    X, y, g = _data(90, 4, 3, seed=1)
    rows = pairwise_rows(variant, ["a", "b", "c"])
    assert len(rows.names) == 6                                   # G(G − 1) ordered pairs
    in_a, in_b = term_masks(rows, y, g)
    kappa = 0.3
    quad = quadratic_rows(rows, X, y, g, kappa)
    rng = np.random.default_rng(2)
    for _ in range(3):
        w = rng.normal(size=4)
        h = (X @ torch.tensor(w)).numpy() + rng.normal()              # the bias cancels in every pair
        brute = _brute_rows(h, y.numpy(), g.numpy(), 3, variant)
        fast = row_values(torch.tensor(h), rows, in_a, in_b).numpy()
        np.testing.assert_allclose(fast, brute, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(quad.values(w), brute - kappa, rtol=1e-10, atol=1e-10)
    for r in range(len(rows.names)):                             # convex: every Hessian is PSD
        assert np.linalg.eigvalsh(quad.H[r]).min() > -1e-10


@pytest.mark.parametrize("variant", VARIANTS)
def test_projection_is_feasible_and_matches_an_independent_slsqp(variant):
    X, y, g = _data(80, 4, 2, seed=3)
    kappa = 0.05
    quad = quadratic_rows(pairwise_rows(variant, ["a", "b"]), X, y, g, kappa)
    Xn, yn, gn = X.numpy(), y.numpy(), g.numpy()
    brute = lambda w: _brute_rows(Xn @ w, yn, gn, 2, variant) - kappa
    v = np.array([2.0, -1.5, 1.0, 0.5])
    assert brute(v).max() > 0.1                                   # v is well outside the set
    got = project(v, quad, anchor=np.zeros(4))
    assert brute(got.w).max() <= 1e-9                             # feasible (exactly, up to rounding)
    ref = minimize(lambda w: 0.5 * np.sum((w - v) ** 2), np.zeros(4), method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda w: -brute(w)}],
                   options={"maxiter": 500, "ftol": 1e-12})
    assert ref.success
    assert np.linalg.norm(got.w - ref.x) <= 1e-3 * max(1.0, np.linalg.norm(ref.x))
    assert np.linalg.norm(got.w - v) <= np.linalg.norm(ref.x - v) + 1e-6
    assert (got.multipliers >= 0).all() and got.multipliers.max() > 0
    inside = 0.1 * got.w                                          # a feasible v is its own projection
    assert quad.values(inside).max() <= 0
    assert np.array_equal(project(inside, quad, anchor=np.zeros(4)).w, inside)


def _planted(n=2000, seed=0):
    """Group b's x0 is shifted (group-AUC and inter-group gaps); x1 drives the label in group a only
    (intra-group gap). The problem carries a pSP family, only reported by the method."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    x0, x1, x2 = rng.normal(size=n) + s, rng.normal(size=n), rng.normal(size=n)
    logit = 1.5 * x0 + 2.0 * x1 * (s == 0) + 0.5 * x2 - 0.5
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    X = np.column_stack([x0, x1, x2, s]).astype(np.float32)
    psp = ConstraintSpec(type="partial_statistical_parity", tolerance=0.1, interval=[0.0, 0.3]).build()
    return Problem(X=X, y=y, group=s, group_names=["a", "b"], constraints=[psp], device="cpu")


@pytest.fixture(scope="module")
def planted():
    problem = _planted()
    erm = solve(problem, {"name": "erm", "params": {"lr": 0.5}}, max_iterations=300)
    return problem, erm.model


def _gap(problem, model, variant):
    with torch.no_grad():
        h = model(problem.X).double().numpy()
    return fairness_gap(problem.y.numpy(), h, problem.group.numpy() == 0, variant)


@pytest.mark.parametrize("variant", VARIANTS)
def test_method_reduces_the_targeted_exact_auc_gap(variant, planted):
    problem, erm = planted
    before = _gap(problem, erm, variant)
    r = solve(problem, {"name": "pairwise_auc_pg", "params": {"variant": variant, "kappa": 0.1}},
              max_iterations=150)
    after = _gap(problem, r.model, variant)
    assert before > 0.05                                          # the planted unfairness is there under ERM
    assert after < 0.3 * before
    assert len(r.last.duals["lambda"]) == 2 and max(r.last.duals["lambda"]) > 0   # the constraints bind


def test_iterates_stay_feasible_and_loss_does_not_increase(planted):
    """w(0) = 0 is feasible, each projection keeps feasibility, and with η = 1/L projected gradient on the
    convex logistic loss over a convex set is monotone."""
    problem, _ = planted
    config = PairwiseAUCPG.resolve_config(PairwiseAUCPG.Config(variant="inter", kappa=0.05), problem)
    algo = PairwiseAUCPG(problem, config, problem.make_model())
    algo.start(algo.evaluate())
    assert algo.pairwise_values().max() <= 0
    previous = float("inf")
    for k in range(40):
        ev, _ = algo.step(k, None)
        assert algo.pairwise_values().max() <= 0
        assert float(ev.objective) <= previous + 1e-6
        previous = float(ev.objective)
    assert algo.projections > 0                                   # the constraint set was active


def test_registered_and_rejects_nonlinear_models(planted):
    problem, _ = planted
    cls = ALGORITHMS.get("pairwise_auc_pg")
    assert cls is PairwiseAUCPG
    schema = describe_solver(cls.entry)["config_schema"]["properties"]
    assert {"variant", "kappa", "lr", "projection_max_iter", "projection_tol"} <= set(schema)
    assert PairwiseAUCPG.resolve_config(PairwiseAUCPG.Config(variant="intra"), problem).kappa == 5.0
    mlp = Problem(X=problem.X, y=problem.y, group=problem.group, group_names=problem.group_names,
                  model_factory=lambda d: __import__("solvers.models", fromlist=["mlp"]).mlp(d, [4]),
                  model_type="mlp", device="cpu")
    with pytest.raises(ValueError, match="linear"):
        solve(mlp, "pairwise_auc_pg", max_iterations=1)

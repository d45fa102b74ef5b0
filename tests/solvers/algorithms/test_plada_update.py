"""One PLADA iteration recomputed by hand (numpy, closed-form gradients) on a tiny problem."""
import numpy as np
import pytest
import torch

from solvers import CONSTRAINTS, Problem, SolverSpec, solve
from solvers.models import linear


def _sig(t):
    return 1.0 / (1.0 + np.exp(-t))


def test_one_iteration_matches_algorithm_1():
    rng = np.random.default_rng(0)
    n, d, k = 12, 3, 3
    X = rng.normal(size=(n, d))
    y = rng.integers(0, 2, n).astype(float)
    group = np.arange(n) % k
    w0, b0 = np.array([0.8, -0.5, 0.3]), 0.2
    tols = np.array([0.01, 0.9])  # first constraint violated (λ_0 > 0), second slack (λ_0 < 0 → u grows)
    eta, tau, alpha, beta, gamma0, kappa = 0.3, 0.2, 10.0, 0.1, 0.1, 2.0

    # ---- by hand ----
    def forward(w, b):
        f = X @ w + b
        s = _sig(f)
        rates = np.array([s[group == g].mean() for g in range(k)])
        return f, s, rates

    f, s, rates = forward(w0, b0)
    yt = 2 * y - 1
    dF_df = -yt * _sig(-yt * f) / n                      # ∂F/∂f_i for F = mean softplus(−ỹ f)
    hi, lo = rates.argmax(), rates.argmin()
    dgap_df = s * (1 - s) * ((group == hi) / (group == hi).sum() - (group == lo) / (group == lo).sum())
    G0 = rates.max() - rates.min() - tols
    rho = alpha / (1 + alpha * beta)
    lam0, mu0, u0 = rho * G0, np.zeros(2), np.zeros(2)
    df = dF_df + lam0.sum() * dgap_df                      # both constraints share the same gap
    w1, b1 = w0 - eta * (X.T @ df), b0 - eta * df.sum()
    u1 = np.clip(u0 - tau * lam0, 0.0, 1.0 + tols)
    gamma = min(gamma0, rho * kappa / 1.0 / (np.sum((lam0 - mu0) ** 2) + 1))
    mu1 = mu0 + gamma / rho * (lam0 - mu0)
    _, _, rates1 = forward(w1, b1)
    lam1 = mu1 + rho * (rates1.max() - rates1.min() - tols + u1)

    # ---- implementation ----
    dp = CONSTRAINTS.get("demographic_parity")
    problem = Problem(X, y, group, ["a", "b", "c"], constraints=[dp(tols[0]), dp(tols[1])], device="cpu")
    model = linear(d)
    with torch.no_grad():
        model.net.weight.copy_(torch.tensor(w0).view(1, d))
        model.net.bias.fill_(b0)
    params = dict(eta=eta, tau=tau, alpha=alpha, beta=beta, gamma0=gamma0, kappa=kappa)
    res = solve(problem, SolverSpec(name="plada", params=params), max_iterations=1, model=model)

    np.testing.assert_allclose(res.model.net.weight.detach().numpy().ravel(), w1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res.model.net.bias.item(), b1, rtol=1e-5, atol=1e-6)
    duals = res.last.duals
    assert u1[1] > 0 and u1[0] == 0 and lam0[0] > 0 > lam0[1]
    np.testing.assert_allclose(duals["u"], u1, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(duals["mu"], mu1, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(duals["lambda"], lam1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(duals["z"], (lam1 - mu1) / alpha, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(res.last.constraints, rates1.max() - rates1.min() - tols, rtol=1e-5, atol=1e-6)
    assert problem.constraint_names == ["demographic_parity", "demographic_parity#2"]


def test_paper_defaults_depend_on_model_type():
    from solvers.algorithms.plada import PLADA, PLADAConfig

    lin = Problem(np.zeros((2, 1)), [0, 1], [0, 1], ["a", "b"], device="cpu")
    nn = Problem(np.zeros((2, 1)), [0, 1], [0, 1], ["a", "b"], model_type="mlp", device="cpu")
    assert PLADA.resolve_config(PLADAConfig(), lin).model_dump(include={"eta", "tau", "beta"}) == \
        {"eta": 0.001, "tau": 0.1, "beta": 0.1}
    assert PLADA.resolve_config(PLADAConfig(), nn).model_dump(include={"eta", "tau", "beta"}) == \
        {"eta": 0.1, "tau": 0.01, "beta": 0.5}
    assert PLADA.resolve_config(PLADAConfig(eta=0.5), nn).eta == 0.5


def _many_group_problem(families):
    """40 samples in 8 groups that overlap (a random sparse membership), 3 features."""
    from solvers.membership import Membership

    rng = np.random.default_rng(3)
    n, k = 40, 8
    dense = rng.random((n, k)) < 0.5
    dense[:, 0] = True
    rows, groups = np.nonzero(dense)
    membership = Membership(rows.astype(np.int64), groups.astype(np.int64), n, [f"g{j}" for j in range(k)])
    X, y = rng.normal(size=(n, 3)), (rng.random(n) < 0.4).astype(float)
    return Problem(X, y, None, membership.names, objective="hinge", constraints=families, device="cpu",
                   membership=membership)


def _one_step(problem, row_weights, eta=0.2, tau=0.05):
    model = linear(3)
    with torch.no_grad():
        model.net.weight.copy_(torch.tensor([[0.8, -0.5, 0.3]]))
        model.net.bias.fill_(0.2)
    params = dict(eta=eta, tau=tau, row_weights=row_weights)
    res = solve(problem, SolverSpec(name="plada", params=params), max_iterations=1, model=model)
    return torch.cat([res.model.net.weight.detach().ravel(), res.model.net.bias.detach()]), res.last.duals


def test_step_9_weighs_an_expectation_familys_rows_one_over_m_and_leaves_the_duals_per_constraint():
    """θ_1 = θ_0 − η(∇F + ∂Gᵀ(w ⊙ λ_0)) with w = 1/m on the intersectional rows (eq. 18's E_G) and 1 on the DP row
    under 'auto'; w = 1 everywhere under 'sum'; the dual steps (10)–(12) are the unweighted ones in both."""
    inter = CONSTRAINTS.get("intersectional")(0.0, {"min_group_fraction": 0.0})
    dp = CONSTRAINTS.get("demographic_parity")(0.01)
    problem = _many_group_problem([inter, dp])
    m = len(inter.names)
    assert m == 8 and len(problem.constraint_names) == 9

    theta0 = torch.tensor([0.8, -0.5, 0.3, 0.2], dtype=torch.float32, requires_grad=True)
    X = problem.X

    def at(theta):
        scores = X @ theta[:3] + theta[3]
        return problem.objective(scores, problem.y), problem.constraint_values(scores)

    F0, G0 = at(theta0)
    rho = 10.0 / (1.0 + 10.0 * 0.1)  # α = 10, β = 0.1: Table 2's linear row
    lam0 = rho * G0.detach()
    expected = {}
    for rule, w in (("auto", torch.tensor([1.0 / m] * m + [1.0])), ("sum", torch.ones(m + 1)),
                    ("mean", torch.tensor([1.0 / m] * m + [1.0]))):
        (grad,) = torch.autograd.grad(F0 + (w * lam0 * G0).sum(), theta0, retain_graph=True)
        expected[rule] = (theta0 - 0.2 * grad).detach()
    u1 = (-0.05 * lam0).clamp_min(0.0)
    for rule in ("auto", "sum", "mean"):
        theta1, duals = _one_step(problem, rule)
        torch.testing.assert_close(theta1, expected[rule], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(duals["u"], np.minimum(u1.numpy(), 1.0 + np.array(problem.tolerances)),
                                   rtol=1e-5, atol=1e-7)
        _, G1 = at(expected[rule])
        gamma = min(0.1, rho * 10.0 / (float((lam0 ** 2).sum()) + 1.0))
        mu1 = gamma / rho * lam0
        np.testing.assert_allclose(duals["lambda"], (mu1 + rho * (G1 + u1)).numpy(), rtol=1e-4, atol=1e-6)
    assert not torch.allclose(expected["auto"], expected["sum"])  # the weighting moved θ differently


def test_row_weights_follow_the_familys_expectation_flag():
    from solvers.algorithms.plada import row_weights

    inter = CONSTRAINTS.get("intersectional")(0.0, {"min_group_fraction": 0.0})
    gap = CONSTRAINTS.get("loss_gap")(0.0, {"min_group_fraction": 0.0})
    dp = CONSTRAINTS.get("demographic_parity")(0.01)
    problem = _many_group_problem([inter, gap, dp])
    like = torch.zeros(1)
    assert inter.expectation_over_rows and not gap.expectation_over_rows and not dp.expectation_over_rows
    assert row_weights(problem.constraints, "auto", like).tolist() == pytest.approx([1 / 8] * 8 + [1.0] * 8 + [1.0])
    assert row_weights(problem.constraints, "mean", like).tolist() == pytest.approx([1 / 8] * 16 + [1.0])
    assert row_weights(problem.constraints, "sum", like).tolist() == [1.0] * 17
    assert row_weights([], "auto", like).numel() == 0

"""One PLADA iteration recomputed by hand (numpy, closed-form gradients) on a tiny problem."""
import numpy as np
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

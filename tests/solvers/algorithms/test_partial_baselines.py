"""The partial-fairness regularisation baseline (App. G.4) and the fast linear path shared by IDCA and it."""
import numpy as np
import pytest
import torch

from solvers import ConstraintSpec, Problem, solve
from solvers.algorithms.linear_scores import LinearScores
from solvers.algorithms.partial_regularized import penalty, penalty_twins
from solvers.partial import partial_dp, partial_sp



def _problem(constraint, n=6000, seed=0, sparse=False):
    """n ≥ 4096 so the cached cell layouts (slice sums / matrix) are exercised, not index_add."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 4))
    X[:, 0] += 1.2 * s
    if sparse:
        X = X * (rng.random(X.shape) < 0.2)
    y = (rng.random(n) < 1 / (1 + np.exp(-(2 * X[:, 0] + X[:, 1])))).astype(np.int64)
    X = np.column_stack([X, s]).astype(np.float32)
    return Problem(X=X, y=y, group=s, group_names=["a", "b"], constraints=[ConstraintSpec(**constraint).build()])


PSP = {"type": "partial_statistical_parity", "tolerance": 0.1, "interval": [0.0, 0.3]}
PDP = {"type": "partial_demographic_parity", "tolerance": 0.05, "interval": [0.3, 0.8]}


def test_psp_penalty_is_max_deviation_from_the_grid():
    """(114): penalty/λ = 2/(β−α) max_{p∈Î,k} |S_{p,k} − p| with Î = α + j(β−α)/|Î| (brute force)."""
    problem = _problem(PSP, n=500)
    (twin,) = penalty_twins(problem)
    twin.init_parameters(problem.device)
    with torch.no_grad():
        twin.theta.copy_(torch.linspace(-1.0, 1.0, twin.theta.numel()))
    h = torch.randn(problem.n_samples)
    got = float(penalty([twin], h, problem.data).detach())
    sig = lambda x: np.clip(x + 0.5, 0.0, 1.0)
    hn, g, th = h.numpy(), problem.group.numpy(), twin.theta.detach().numpy()
    p = 0.0 + np.arange(10) * 0.3 / 10
    dev = max(abs(sig(hn[g == k] - th[j]).mean() - p[j]) for j in range(10) for k in (0, 1))
    assert got == pytest.approx(2.0 / 0.3 * dev, rel=1e-5)


@pytest.mark.parametrize("constraint,metric", [(PSP, "psp"), (PDP, "pdp")])
def test_regularization_trades_accuracy_for_partial_fairness(constraint, metric):
    problem = _problem(constraint)
    iv = constraint["interval"]

    def fairness(lam):
        r = solve(problem, {"name": "partial_regularized", "params": {"lam": lam, "lr": 0.05}}, max_iterations=300)
        with torch.no_grad():
            h = r.model(problem.X).numpy()
        g = problem.group.numpy()
        return partial_sp(h, g, iv, 2)["value"] if metric == "psp" else partial_dp(h, g, iv, 0.0, 2)["value"]

    plain, penalised = fairness(0.0), fairness(2.0)
    assert plain > 0.2                    # the planted unfairness is there without the penalty
    assert penalised < 0.6 * plain        # and the penalty removes most of it


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("constraint", [PSP, PDP])
def test_fast_linear_path_matches_autograd(constraint, sparse):
    """IDCA's score-space path (CSR X, group-sorted samples, slice-sum cell means) gives the iterates
    of the plain nn.Linear autograd path."""
    problem = _problem(constraint, sparse=sparse)
    fast = LinearScores(problem.make_model(), problem)
    assert fast.sparse == sparse
    ws = []
    for flag in (True, False):
        r = solve(problem, {"name": "idca", "params": {"inner_iterations": 4, "fast_linear": flag}}, max_iterations=2)
        ws.append(torch.cat([p.detach().reshape(-1) for p in r.model.parameters()]))
    assert ws[0].norm() > 1e-3
    # float32 sums in another order can flip a switching decision within a few steps (measured on the dense
    # pSP problem: 4 inner steps agree to 3e-6 of the scale, 8 part by 1-3 %), so 4 steps, agreeing to 1e-4
    # of the scale (a wrong permutation, cell mean or pull-back is off by O(1) of it)
    assert float((ws[0] - ws[1]).abs().max()) <= 1e-4 * float(ws[1].abs().max())


@pytest.mark.parametrize("surrogate", ["clipped_linear", "sigmoid"])
@pytest.mark.parametrize("n", [500, 6000])
@pytest.mark.parametrize("constraint", [PSP, PDP])
def test_closed_form_oracles_match_autograd(constraint, surrogate, n):
    """IDCA's fast path: dc_minus_jacobian (∂f⁻/∂h, ∂f⁻/∂θ in closed form), dc_plus_row_grad (one row of f⁺,
    the row a tensor) and dc_plus (values only) equal autograd on dc_parts; the values-only dc_parts equals
    the graph one."""
    problem = _problem({**constraint, "surrogate": surrogate}, n=n)
    fam = problem.constraints[0]
    fast = LinearScores(problem.make_model(), problem)
    aux = fam.parameters() if hasattr(fam, "theta") else []
    if aux:
        with torch.no_grad():
            fam.theta.copy_(torch.linspace(-0.8, 0.8, fam.theta.numel()))
    h = (0.7 * torch.randn(n)).requires_grad_(True)
    plus, minus = fam.dc_parts(h, fast.data)
    m = minus.numel()

    def autograd_rows(out):
        rows = [torch.autograd.grad(out[i], [h] + aux, retain_graph=True, allow_unused=True) for i in range(m)]
        return [torch.stack([torch.zeros_like(x) if r[c] is None else r[c] for r in rows])
                for c, x in enumerate([h] + aux)]

    Jh, Jaux = fam.dc_minus_jacobian(h, fast.data)
    want = autograd_rows(minus)
    assert torch.allclose(Jh, want[0], atol=1e-7)
    for got, w in zip(Jaux, want[1:]):
        assert torch.allclose(got, w, atol=1e-6)
    with torch.no_grad():  # values-only path: mean max{h, t} − t, float32 rounding of O(1) terms
        p0, m0 = fam.dc_parts(h, fast.data)
        assert torch.allclose(fam.dc_plus(h, fast.data), plus, atol=1e-5)
    assert torch.allclose(p0, plus, atol=1e-5) and torch.allclose(m0, minus, atol=1e-5)
    want = autograd_rows(plus)
    for r in range(m):
        gh, gaux = fam.dc_plus_row_grad(h, fast.data, torch.tensor(r))
        assert torch.allclose(gh, want[0][r], atol=1e-7)
        for got, w in zip(gaux, want[1:]):
            assert torch.allclose(got, w[r], atol=1e-6)


@pytest.mark.parametrize("objective", ["logistic", "bce", "hinge"])
def test_objective_closed_form_score_gradient(objective):
    """IDCA's fast path: f0 and ∂f0/∂h in closed form (logistic, bce) or by autograd (others)."""
    from solvers.algorithms.idca import objective_value_and_score_grad
    from solvers.objectives import get_objective

    f = get_objective(objective)
    h = (3 * torch.randn(2000)).requires_grad_(True)
    y = (torch.rand(2000) < 0.3).float()
    want = f(h, y)
    (gw,) = torch.autograd.grad(want, h)
    value, u = objective_value_and_score_grad(f, h.detach(), y)
    assert float(value) == pytest.approx(float(want.detach()), rel=1e-5)
    assert torch.allclose(u, gw, atol=1e-9)

"""End-to-end behaviour of the solvers on the planted-disparity problem (conftest.planted)."""
import torch

from solvers import CONSTRAINTS, ModelSpec, Problem, group_fairness, solve
from solvers.models import model_factory

TOL = 0.05


def _problem(planted, model="linear"):
    X, y, s = planted
    spec = ModelSpec(type=model, hidden=[16])
    return Problem(X, y, s, ["a", "b"], model_factory=model_factory(spec), model_type=model,
                   constraints=[CONSTRAINTS.get("demographic_parity")(TOL)], device="cpu")


def _exact(result, planted):
    X, y, s = planted
    with torch.no_grad():
        pred = (result.model(torch.as_tensor(X)).numpy() > 0).astype(int)
    return group_fairness(y, pred, s, ["a", "b"])["demographic_parity"], (pred == y).mean()


def _trivial(planted):
    y = planted[1]
    return max(y.mean(), 1 - y.mean())


def test_erm_leaves_planted_disparity(planted):
    res = solve(_problem(planted), "erm", max_iterations=300)
    gap, acc = _exact(res, planted)
    assert gap > 0.15
    assert acc > _trivial(planted) + 0.2
    assert res.last.duals is None and res.last.constraints[0] > 0.1


# Paper default η = 0.001 (Table 2, linear) needs ~20-40k full-batch steps on this problem
# (measured: exact gap 0.151 after 2k, 0.055 after 20k, 0.049 after 40k iterations), too slow for
# the unit budget; η = 0.5 reaches the KKT point in a few hundred steps. Other params: Table 2.
# The constraint is on the sigmoid surrogate (eq. 15); the exact gap tracks it here because the
# planted signal is strong (scores well separated). With a weaker signal we measured exact gaps of
# 0.059-0.069 at a surrogate-feasible point: the ε + 0.005 bound is a property of the data too.
def test_plada_ends_feasible(planted):
    res = solve(_problem(planted), {"name": "plada", "params": {"eta": 0.5}}, max_iterations=600)
    gap, acc = _exact(res, planted)
    assert gap <= TOL + 0.005
    assert acc > _trivial(planted) + 0.15
    assert res.last.max_violation < 1e-3
    assert res.last.duals["abs_lambda_minus_mu"][0] < 1e-2  # Theorem 2: |λ − μ| → 0
    assert res.last.duals["lambda"][0] > 0  # the constraint is active


def test_plada_mlp_reduces_disparity(planted):
    # NN row of Table 2 (η=0.1, τ=0.01, β=0.5). For a network the sigmoid surrogate is a looser
    # stand-in for the exact indicator gap (measured exact gap 0.06-0.08 at surrogate feasibility),
    # so this asserts a large reduction from ERM's ≈ 0.33 rather than ε + 0.005.
    res = solve(_problem(planted, "mlp"), "plada", max_iterations=400, seed=1)
    gap, acc = _exact(res, planted)
    assert gap < 0.1
    assert res.last.constraints[0] < 0.02
    assert acc > _trivial(planted) + 0.15


def test_penalty_ends_feasible(planted):
    res = solve(_problem(planted), {"name": "penalty", "params": {"penalty": 2.0}}, max_iterations=600)
    gap, acc = _exact(res, planted)
    assert gap <= TOL + 0.005
    assert acc > _trivial(planted) + 0.15
    assert res.last.duals == {"lambda": [2.0]}


def test_deterministic_under_seed(planted):
    a = solve(_problem(planted, "mlp"), "plada", max_iterations=20, seed=3)
    b = solve(_problem(planted, "mlp"), "plada", max_iterations=20, seed=3)
    for (ka, va), (kb, vb) in zip(a.model.state_dict().items(), b.model.state_dict().items()):
        assert torch.equal(va, vb)
    assert a.last.duals == b.last.duals

"""Objectives' registry / spec literal, ℓ1/ℓ2 ball projections and ball models."""
import numpy as np
import pytest
import torch
from pydantic import ValidationError
from scipy.optimize import minimize

from solvers import ModelSpec, ProblemSpec
from solvers.models import ScoreModel, ball_domain, model_factory, project_, project_l1_ball, project_l2_ball
from solvers.objectives import OBJECTIVES, get_objective


def _slsqp(v, r, p):
    if p == 1:  # split w = a − b, a, b ≥ 0: smooth problem
        d = v.size
        fun = lambda z: 0.5 * np.sum((z[:d] - z[d:] - v) ** 2)
        jac = lambda z: np.concatenate([z[:d] - z[d:] - v, -(z[:d] - z[d:] - v)])
        cons = {"type": "ineq", "fun": lambda z: r - z.sum(), "jac": lambda z: -np.ones(2 * d)}
        z0 = np.concatenate([np.maximum(v, 0), np.maximum(-v, 0)]) * min(1.0, r / np.abs(v).sum())
        res = minimize(fun, z0, jac=jac, constraints=[cons], bounds=[(0, None)] * (2 * d), method="SLSQP",
                       options={"ftol": 1e-14, "maxiter": 500})
        return res.x[:d] - res.x[d:]
    cons = {"type": "ineq", "fun": lambda w: r ** 2 - w @ w, "jac": lambda w: -2 * w}
    res = minimize(lambda w: 0.5 * np.sum((w - v) ** 2), np.zeros_like(v), jac=lambda w: w - v, constraints=[cons],
                   method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    return res.x


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("seed", range(4))
def test_projection_matches_slsqp_in_ball_idempotent(p, seed):
    rng = np.random.default_rng(seed)
    d = [3, 8, 20, 50][seed]
    v = rng.normal(scale=2.0, size=d)
    norm = np.abs(v).sum() if p == 1 else np.linalg.norm(v)
    project = project_l1_ball if p == 1 else project_l2_ball
    for r in (0.3 * norm, 0.9 * norm, 1.5 * norm):  # outside, barely outside, inside
        w = project(torch.tensor(v), r).numpy()
        w_norm = np.abs(w).sum() if p == 1 else np.linalg.norm(w)
        assert w_norm <= r * (1 + 1e-12)
        np.testing.assert_allclose(project(torch.tensor(w), r).numpy(), w, atol=1e-12)
        np.testing.assert_allclose(w, _slsqp(v, r, p), atol=1e-5)
        if r > norm:
            np.testing.assert_array_equal(w, v)


def test_projections_are_batched_over_rows():
    rng = np.random.default_rng(9)
    V = torch.tensor(rng.normal(size=(5, 7)))
    for project in (project_l1_ball, project_l2_ball):
        batched = project(V, 1.5)
        rows = torch.stack([project(v, 1.5) for v in V])
        torch.testing.assert_close(batched, rows)
    assert torch.equal(project_l1_ball(torch.zeros(4), 1.0), torch.zeros(4))
    w = project_l1_ball(torch.tensor([3.0, -1.0, 0.2]), 1.0)  # θ = 2: only the largest survives
    torch.testing.assert_close(w, torch.tensor([1.0, 0.0, 0.0]))


@pytest.mark.parametrize("ball", ["l1", "l2"])
def test_ball_model_and_project_helper(ball):
    spec = ModelSpec(type="linear", ball=ball, radius=0.5)
    model = model_factory(spec)(6)
    assert isinstance(model, ScoreModel) and model.ball == ball and model.radius == 0.5
    with torch.no_grad():
        model.net.weight.copy_(torch.arange(1.0, 7.0).reshape(1, 6))
        model.net.bias.fill_(3.0)
    project_(model)
    norm = model.net.weight.abs().sum() if ball == "l1" else model.net.weight.norm()
    assert norm.item() == pytest.approx(0.5, rel=1e-6) and model.net.bias.item() == 3.0  # bias stays free
    plain = model_factory(ModelSpec())(6)
    with torch.no_grad():
        plain.net.weight.fill_(10.0)
    project_(plain)
    assert plain.net.weight.sum().item() == 60.0  # no ball: unchanged
    project_(plain, spec)  # the spec's ball applied to any linear model
    assert plain.net.weight.abs().sum().item() == pytest.approx(0.5 if ball == "l1" else 0.5 * 6 ** 0.5, rel=1e-6)


def test_model_spec_validation():
    with pytest.raises(ValidationError):
        ModelSpec(ball="l1")
    with pytest.raises(ValidationError):
        ModelSpec(radius=2.0)
    with pytest.raises(ValidationError):
        ModelSpec(type="mlp", ball="l2", radius=1.0)
    with pytest.raises(ValidationError):
        ModelSpec(ball="l3", radius=1.0)
    with pytest.raises(ValidationError):
        ModelSpec(ball="l2", radius=0.0)


def test_objective_registry_and_spec_literal():
    assert set(OBJECTIVES) == {"logistic", "hinge", "bce", "truncated_logistic", "auc_square"}
    spec = ProblemSpec(target="y", positive_label=1, sensitive=["s"], objective="truncated_logistic")
    assert get_objective(spec.objective) is OBJECTIVES["truncated_logistic"]
    custom = lambda s, y: s.sum()
    assert get_objective(custom) is custom
    with pytest.raises(ValueError, match="unknown objective"):
        get_objective("nope")
    t = torch.tensor([1e4, -1e4, 0.0], dtype=torch.float64)
    y = torch.tensor([0.0, 1.0, 1.0], dtype=torch.float64)
    vals = OBJECTIVES["truncated_logistic"].per_sample(t, y)
    assert torch.isfinite(vals).all() and vals[0].item() == pytest.approx(2 * np.log1p(1e4 / 2), rel=1e-9)


def test_ball_domain_for_problem():
    assert ball_domain(ModelSpec()) is None
    model = model_factory(ModelSpec())(4)
    with torch.no_grad():
        model.net.weight.fill_(2.0)
        model.net.bias.fill_(5.0)
    ball_domain(ModelSpec(ball="l2", radius=1.0))(list(model.parameters()))
    assert model.net.weight.norm().item() == pytest.approx(1.0, rel=1e-6) and model.net.bias.item() == 5.0

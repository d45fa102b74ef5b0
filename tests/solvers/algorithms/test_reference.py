"""The reference problems themselves are right (so solver tests against them mean something)."""
from __future__ import annotations

import torch

from solvers import solve
from tests.support.reference import convex_problem, simple_example


def test_convex_reference_has_an_active_constraint_and_beats_erm_on_it():
    ref = convex_problem()
    assert abs(ref.constraint) < 1e-8  # active: the constraint binds at the optimum
    erm = solve(ref.problem, {"name": "erm", "params": {"lr": 0.1}}, max_iterations=1500)
    out = ref.problem.evaluate(erm.model)
    assert out.constraints.item() > 0.05  # the unconstrained optimum violates it
    assert out.objective.item() < ref.objective


def test_simple_example_start_is_feasible_and_optimum_is_known():
    ex = simple_example()
    model = ex.make_model()
    start = ex.evaluate(model)
    assert start.constraints.item() < 0 and start.objective.item() == -0.125
    with torch.no_grad():
        model.x.copy_(torch.tensor([0.0, 1.0], dtype=torch.float64))
    assert ex.evaluate(model).objective.item() == ex.f_star

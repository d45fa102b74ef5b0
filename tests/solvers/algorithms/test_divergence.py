"""Divergence: the run stops at the first non-finite objective, constraint, multiplier or parameter; the
observer never sees a non-finite iterate; the message names the step size to lower."""
import math

import numpy as np
import pytest
import torch

from solvers import CONSTRAINTS, Problem, RecordingObserver, ProblemSpec
from solvers.algorithms.driver import run_algorithm
from solvers.algorithms.erm import ERM
from solvers.algorithms.divergence import non_finite_part, step_size_fields
from solvers.catalog.plada import PrimalConfig


def _problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    return Problem(X, (X[:, 0] > 0).astype(int), rng.integers(0, 2, 200), ["a", "b"],
                   constraints=[CONSTRAINTS.get("dp")(0.05)], device="cpu")


class Exploding(ERM):
    """Gradient steps whose fourth one overflows the parameters to ±∞ (the objective is then NaN)."""

    def step(self, k, current):
        out = super().step(k, current)
        if k == 3:
            with torch.no_grad():
                for p in self.params:
                    p.mul_(torch.finfo(p.dtype).max).mul_(1e3)
            out = self.evaluate(), None
        return out


class BadAuxiliary(ERM):
    """A parameter that the objective does not read becomes NaN at iteration 5 (the objective stays finite)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.extra = torch.zeros(2, requires_grad=True)
        self.params = [*self.params, self.extra]

    def step(self, k, current):
        out = super().step(k, current)
        if k == 4:
            with torch.no_grad():
                self.extra[1] = float("nan")
        return out


class LateAuxiliary(BadAuxiliary):
    """The same parameter, added by ``start`` (as ``partial_regularized`` adds its twins' variables)."""

    def __init__(self, *args, **kwargs):
        ERM.__init__(self, *args, **kwargs)

    def start(self, current):
        super().start(current)
        self.extra = torch.zeros(2, requires_grad=True)
        self.params = [*self.params, self.extra]


@pytest.mark.parametrize("cls, last_finite", [(Exploding, 3), (BadAuxiliary, 4), (LateAuxiliary, 4)])
def test_stops_at_first_non_finite_iterate(cls, last_finite):
    obs = RecordingObserver()
    res = run_algorithm(cls, _problem(), PrimalConfig(lr=0.05), obs, max_iterations=50)
    assert res.status == "diverged" and res.stop_reason == "diverged"
    assert [r.iteration for r in obs.records] == list(range(1, last_finite + 1))
    assert res.iterations == last_finite and res.last.iteration == last_finite
    for r in obs.records:  # nothing non-finite is stored, nothing reads as feasible by accident
        assert all(map(math.isfinite, [r.objective, r.max_violation, *r.constraints]))
    assert f"diverged at iteration {last_finite + 1}" in res.message
    assert "lower its step size (params.lr = 0.05)" in res.message
    if cls in (BadAuxiliary, LateAuxiliary):
        assert "parameters are non-finite" in res.message and "objective" not in res.message


def test_non_finite_part_names_the_entry():
    names, duals = ["dp_a", "dp_b"], ["lambda", "lambda"]
    assert non_finite_part([1.0, 0.1, 0.2, 0.0, 0.0, 3.0], names, duals) is None
    assert non_finite_part([math.nan, 0.1, 0.2, 0.0, 0.0, 3.0], names, duals) == "the objective is nan"
    assert non_finite_part([1.0, 0.1, math.inf, 0.0, 0.0, 3.0], names, duals) == "constraint 'dp_b' is inf"
    assert non_finite_part([1.0, 0.1, 0.2, 0.0, -math.inf, 3.0], names, duals) == "multiplier 'lambda' is -inf"
    assert non_finite_part([1.0, 0.1, 0.2, 0.0, 0.0, math.nan], names, duals) == "the model parameters are non-finite"


def test_step_size_fields_come_from_the_config_descriptions():
    from solvers.catalog.plada import ALGORITHMS
    lagrangian = ALGORITHMS.get("lagrangian").Config()
    assert step_size_fields(lagrangian) == {"lr_primal": 0.1, "lr_dual": 0.1}
    assert step_size_fields(PrimalConfig(lr=0.3)) == {"lr": 0.3}


def test_run_raises_with_the_message():
    from solvers import SolverDiverged, run
    from bench.common.datagen import planted_table
    spec = ProblemSpec.model_validate({"target": "income", "positive_label": ">50K", "sensitive": ["sex"],
                                       "solver": {"name": "erm", "params": {"optimizer": "gd", "lr": 1e38}},
                                       "max_iterations": 20, "device": "cpu"})
    with pytest.raises(SolverDiverged, match=r"diverged at iteration 1: .*params\.lr = 1e\+38"):
        run(planted_table(200), spec)

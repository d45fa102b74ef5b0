"""The exact-metric trace: which iterations carry it, and that it is the exact value of the iterate."""
import numpy as np
import torch

from solvers import CONSTRAINTS, Problem, RecordingObserver, solve
from solvers.exact_trace import ExactTracer
from solvers.fairness.exact import exact_gaps
from tests.support.problems import planted_problem_data


def _problems():
    X, y, s = planted_problem_data(1200, seed=3)
    families = [CONSTRAINTS.get("demographic_parity")(0.02), CONSTRAINTS.get("equalized_odds")(0.05)]
    train = Problem(X[:800], y[:800], s[:800], ["a", "b"], constraints=families, device="cpu")
    validation = Problem(X[800:], y[800:], s[800:], ["a", "b"], device="cpu")
    return train, validation


def test_traced_iterations_carry_the_exact_gaps_of_the_iterate():
    train, validation = _problems()
    obs = RecordingObserver(exact_every=10)
    result = solve(train, "erm", obs, max_iterations=35, validation=validation)
    traced = [r for r in obs.records if r.exact is not None]
    its = [r.iteration for r in traced]
    assert its[0] == 1 and its[-1] == 35 and all(i in (1, 35) or i % 10 == 0 for i in its)
    last = traced[-1].exact
    assert set(last) == {"train", "validation"} and len(last["train"]) == 2
    with torch.no_grad():
        for X, y, g, name in ((train.X, train.y, train.group, "train"),
                              (validation.X, validation.y, validation.group, "validation")):
            expected = exact_gaps(train.constraints, y.numpy(), result.model(X).double().numpy(), g.numpy(), ["a", "b"])
            np.testing.assert_allclose(last[name], expected, atol=1e-12)
    first = traced[0].exact["train"][0]
    assert first != last["train"][0]  # the trace follows the iterates (ERM moves the DP gap away from 0)


def test_no_trace_unless_asked_or_without_constraints():
    train, validation = _problems()
    obs = RecordingObserver()
    solve(train, "erm", obs, max_iterations=5, validation=validation)
    assert all(r.exact is None for r in obs.records)
    assert ExactTracer.for_problem(Problem(train.X, train.y, train.group, ["a", "b"], device="cpu"),
                                   None, 10, 100) is None


def test_intermediate_traces_stop_once_they_take_too_much_of_the_time():
    train, _ = _problems()
    tracer = ExactTracer.for_problem(train, None, every=5, max_iterations=100)
    assert tracer.due(5, elapsed_s=1.0) and not tracer.due(6, elapsed_s=1.0)
    tracer.spent_s = 0.5  # half of the first second went to tracing
    assert not tracer.due(10, elapsed_s=1.0) and tracer.due(10, elapsed_s=10.0)
    assert tracer.due(1, elapsed_s=1.0) and tracer.due(100, elapsed_s=1.0)  # first and last always

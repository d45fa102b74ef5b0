"""SSL-ALM / ALM hot path: the shared ℓ' score gradient and the per-sample losses shared by F and the loss gap give
the iterates of the autograd path (the reference: F and G with a graph, ∇ by autograd) to 1e-5."""
import pytest
import torch

from solvers import CONSTRAINTS
from solvers.algorithms import ALGORITHMS
from solvers.algorithms.score_space import ScoreSpace
from solvers.models.factory import mlp
from solvers.problem import Problem


def _problem(n=203, k=3, seed=0, mode="two_sided", objective="bce", loss="bce"):
    g = torch.Generator().manual_seed(seed)
    group = torch.randint(0, k, (n,), generator=g)
    y = torch.randint(0, 2, (n,), generator=g).float()
    X = torch.randn(n, 5, generator=g)
    X[:, 0] += 1.5 * (group == 0)
    return Problem(X=X, y=y, group=group, group_names=[f"g{i}" for i in range(k)], model_type="mlp",
                   model_factory=lambda d: mlp(d, [6, 4], "relu"), objective=objective,
                   constraints=[CONSTRAINTS.get("loss_gap")(0.005, {"mode": mode, "loss": loss})], device="cpu")


def _run(problem, solver, use_space, iterations=60):
    cls = ALGORITHMS.get(solver)
    torch.manual_seed(0)
    model = problem.make_model()
    alg = cls(problem, cls.Config(batch_size=16, tau=0.2, eta=0.5), model, seed=0)
    alg.horizon = iterations
    if not use_space:
        alg.net, alg.needs_autograd = None, True
    trace = []
    with torch.set_grad_enabled(alg.needs_autograd):
        current = alg.evaluate()
        alg.start(current)
        for k in range(iterations):
            current, duals = alg.step(k, current)
            trace.append((current.objective.item(), current.constraints.tolist(), duals["y"].tolist(),
                          duals["slack"].tolist()))
    return alg, trace, [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("objective,loss", [("bce", "bce"), ("logistic", "bce")], ids=["shared", "other-loss"])
@pytest.mark.parametrize("mode", ["one_sided", "two_sided"])
@pytest.mark.parametrize("solver", ["ssl_alm", "alm"])
def test_alm_iterates_equal_the_autograd_path(solver, mode, objective, loss):
    problem = _problem(mode=mode, objective=objective, loss=loss)
    alg, fast, params = _run(problem, solver, True)
    assert alg.net is not None
    _, ref, ref_params = _run(problem, solver, False)
    assert any(abs(v) > 0 for t in ref for v in t[2]), "the duals must move for the test to mean something"
    for a, b in zip(fast, ref):
        assert a[0] == pytest.approx(b[0], abs=1e-5)
        for x, z in zip(a[1:], b[1:]):
            assert x == pytest.approx(z, abs=1e-5)
    for p, q in zip(params, ref_params):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-5)


def test_shared_derivative_equals_the_general_score_gradient():
    """u from one ℓ' over every row times the weight vector = the per-part derivative + VJP + zero blocks."""
    problem = _problem()
    alg = ALGORITHMS.get("ssl_alm")(problem, ALGORITHMS.get("ssl_alm").Config(batch_size=16), problem.make_model())
    with torch.no_grad():
        ev = alg.space_evaluate(alg.batch(), *alg.balanced_batches(2))
    space = ev.space
    assert space.labels is not None
    general = ScoreSpace(space.problem, space.net, space.tape, space.scores, space.b, space.y, space.start, space.data)
    for alpha, w in ((1.0, torch.tensor([0.3, -0.7, 0.2, 0.5, -0.1, 0.9])), (1.0, None), (0.0, torch.ones(6))):
        fast = space.score_gradient(alpha, w)
        torch.testing.assert_close(fast, general.score_gradient(alpha, w), rtol=1e-6, atol=1e-7)
        assert fast[space.start + space.data.y.numel():].abs().sum() == 0  # ζ2's rows carry no gradient

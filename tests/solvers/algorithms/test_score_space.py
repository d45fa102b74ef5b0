"""Score-space gradients (solvers.score_net, solvers.algorithms.score_space) against autograd."""
import pytest
import torch

from solvers import CONSTRAINTS
from solvers.algorithms import ALGORITHMS
from solvers.algorithms.score_space import ScoreSpace, score_evaluation, score_space_net
from solvers.constraints import FairnessData
from solvers.score_net import ScoreNet
from solvers.models import linear, mlp
from solvers.objectives import OBJECTIVES
from solvers.problem import Problem


def _randomised(model):
    with torch.no_grad():
        for p in model.parameters():
            p.normal_()
    return model


@pytest.mark.parametrize("model", [mlp(6, [5, 4], "relu"), mlp(6, [7], "tanh"), linear(6)],
                         ids=["mlp-relu", "mlp-tanh", "linear"])
def test_score_net_matches_autograd(model):
    model = _randomised(model)
    net = ScoreNet.of(model)
    x, v = torch.randn(11, 6), torch.randn(11)
    with torch.no_grad():
        scores, tape = net.forward(x)
        grads = net.pullback(tape, v)
    assert torch.allclose(scores, model(x), atol=1e-6)
    expected = torch.autograd.grad((model(x) * v).sum(), list(model.parameters()))
    for g, e in zip(grads, expected):
        assert g.shape == e.shape and torch.allclose(g, e, atol=1e-5)


def test_score_net_refuses_other_models():
    assert ScoreNet.of(torch.nn.Linear(3, 1)) is None


@pytest.mark.parametrize("name", ["bce", "hinge", "logistic", "truncated_logistic"])
def test_objective_derivative_matches_autograd(name):
    obj = OBJECTIVES[name]
    assert obj.closed_form_derivative
    f = torch.linspace(-4, 4, 41, dtype=torch.float64).requires_grad_()
    f = (f + 0.013).detach().requires_grad_()  # off the hinge's kink
    y = (torch.arange(41) % 2).double()
    (expected,) = torch.autograd.grad(obj.per_sample(f, y).sum(), f)
    assert torch.allclose(obj.derivative(f.detach(), y), expected, atol=1e-12)


def _problem(constraints, n=60, k=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    group = torch.cat([torch.arange(k), torch.randint(0, k, (n - k,), generator=g)])
    y = torch.cat([torch.tensor([0.0, 1.0, 0.0]), torch.randint(0, 2, (n - 3,), generator=g).float()])
    X = torch.randn(n, 5, generator=g)
    return Problem(X=X, y=y, group=group, group_names=[f"g{i}" for i in range(k)], model_type="mlp",
                   model_factory=lambda d: mlp(d, [4], "relu"), objective="bce", constraints=constraints,
                   device="cpu")


@pytest.mark.parametrize("mode", ["one_sided", "two_sided"])
def test_weighted_gradient_matches_autograd(mode):
    """∇θ [α F + wᵀ G] in score space equals autograd's, for loss_gap (closed-form vjp) together with a family
    using the default (autograd) vjp."""
    fams = [CONSTRAINTS.get("loss_gap")(0.01, {"mode": mode}), CONSTRAINTS.get("demographic_parity")(0.02)]
    problem = _problem(fams)
    model = _randomised(problem.make_model())
    net = ScoreNet.of(model)
    idx = torch.tensor([0, 1, 2, 5, 7, 11, 13, 17, 19, 23])
    ev = score_evaluation(problem, net, idx)
    ref = problem.evaluate(model, idx)
    assert torch.allclose(ev.objective, ref.objective) and torch.allclose(ev.constraints, ref.constraints, atol=1e-6)
    m = ref.constraints.numel()
    for alpha, w in [(1.0, None), (0.0, torch.linspace(0.5, 2.0, m)), (1.0, torch.linspace(-1.0, 1.0, m))]:
        loss = alpha * ref.objective + (0.0 if w is None else (w * ref.constraints).sum())
        expected = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
        for g, e in zip(ev.space.gradient(alpha, w), expected):
            assert torch.allclose(g, e, atol=1e-5)


def test_split_rows_space_matches_autograd():
    """F and G on different rows of one forward (ALM's ξ | ζ1 | ζ2 layout)."""
    problem = _problem([CONSTRAINTS.get("loss_gap")(0.0, {"mode": "two_sided"})])
    model = _randomised(problem.make_model())
    net = ScoreNet.of(model)
    obj, con, rest = torch.tensor([3, 4, 8]), torch.tensor([0, 1, 2, 9, 10]), torch.tensor([30, 31])
    with torch.no_grad():
        scores, tape = net.forward(problem.X[torch.cat([obj, con, rest])])
    data = problem.data.subset(con)
    space = ScoreSpace(problem, net, tape, scores, 3, problem.y[obj], 3, data)
    w = torch.linspace(-0.5, 0.9, len(problem.constraint_names))
    loss = problem.objective(model(problem.X[obj]), problem.y[obj]) \
        + (w * problem.constraint_values_on(model(problem.X[con]), data)).sum()
    for g, e in zip(space.gradient(1.0, w), torch.autograd.grad(loss, list(model.parameters()))):
        assert torch.allclose(g, e, atol=1e-5)


@pytest.mark.parametrize("solver", ["ssl_alm", "alm", "ssg"])
def test_score_space_solvers_match_autograd_path(solver):
    """The same run with and without the score space (autograd fallback) gives the same iterates."""
    problem = _problem([CONSTRAINTS.get("loss_gap")(0.01, {"mode": "two_sided"})], n=200)
    cls = ALGORITHMS.get(solver)
    runs = []
    for use_space in (True, False):
        torch.manual_seed(0)
        model = problem.make_model()
        alg = cls(problem, cls.Config(batch_size=16), model, seed=0)
        alg.horizon = 30
        if not use_space:
            alg.net = None
        else:
            assert alg.net is not None and score_space_net(alg) is not None
        current = alg.evaluate()
        alg.start(current)
        for k in range(30):
            current, _ = alg.step(k, current)
        runs.append([p.detach().clone() for p in model.parameters()])
    for a, b in zip(*runs):
        assert torch.allclose(a, b, atol=1e-4)


def test_fairness_data_group_label_is_lazy():
    data = FairnessData.build(torch.tensor([0.0, 1.0, 1.0]), torch.tensor([0, 0, 1]), 2)
    assert data.group_label is None
    assert data.by_group_label.counts.tolist() == [1.0, 1.0, 0.0, 1.0]


def _rate_data(overlapping: bool, empty: bool, n=40, k=4, seed=1):
    """FairnessData over k groups (group k − 1 empty when ``empty``; each sample also in group (g + 1) mod k
    when ``overlapping``)."""
    g = torch.Generator().manual_seed(seed)
    group = torch.randint(0, k - 1 if empty else k, (n,), generator=g)
    y = torch.randint(0, 2, (n,), generator=g).float()
    if not overlapping:
        return FairnessData.build(y, group, k)
    rows = torch.cat([torch.arange(n), torch.arange(n)])
    member = torch.cat([group, (group + 1) % (k - 1 if empty else k)])
    return FairnessData.overlapping(y, rows, member, k)


@pytest.mark.parametrize("overlapping", [False, True], ids=["partition", "overlapping"])
@pytest.mark.parametrize("empty", [False, True], ids=["all-groups", "empty-group"])
@pytest.mark.parametrize("temperature", [1.0, 0.25])
@pytest.mark.parametrize("family,config", [
    ("demographic_parity", {}), ("equal_opportunity", {}), ("equalized_odds", {}),
    ("demographic_parity", {"reference": "overall"}),
    ("equalized_odds", {"aggregate": "separate"})])
def test_rate_family_closed_form_vjp_matches_autograd(family, config, temperature, empty, overlapping):
    """The sigmoid rate families' closed-form vjp equals the autograd one of ConstraintFamily.vjp, on random
    scores and on scores that tie every group's rate (constant scores: amax / amin share the gradient);
    ``reference="overall"`` keeps autograd."""
    fam = CONSTRAINTS.get(family)(0.02, {**config, "temperature": temperature})
    data = _rate_data(overlapping, empty)
    fam.bind([f"g{i}" for i in range(data.n_groups)], data.by_group.counts, data.y.numel())
    n, m = data.y.numel(), len(fam.names)
    g = torch.Generator().manual_seed(2)
    for scores, tied in ((torch.randn(n, generator=g, dtype=torch.float64) * 2, False),
                         (torch.zeros(n, dtype=torch.float64), True), (torch.randn(n, generator=g), False)):
        w = torch.linspace(0.5, 1.5, m, dtype=scores.dtype)
        mine = fam.vjp(scores, data, w)
        expected = super(type(fam), fam).vjp(scores, data, w)
        assert mine.shape == expected.shape == (n,) and mine.dtype == scores.dtype
        assert torch.allclose(mine, expected, atol=1e-6 if scores.dtype == torch.float32 else 1e-12)
        assert (mine.abs().sum() == 0) == tied  # ties cancel; otherwise the gradient moves some score


def test_sparse_rows_products_equal_the_dense_ones_and_dense_matrices_are_refused():
    """CSR copies of a mostly-zero X give X w and Xᵀ v to float rounding; a dense X (or a float64 one) gets none."""
    from solvers.sparse_rows import MAX_DENSITY, SparseRows

    g = torch.Generator().manual_seed(3)
    X = torch.randn(300, 20, generator=g) * (torch.rand(300, 20, generator=g) < 0.1)
    rows = SparseRows.of(X)
    w, v = torch.randn(20, generator=g), torch.randn(300, generator=g)
    assert rows is not None and rows.rows._nnz() == int((X != 0).sum())
    assert torch.allclose(rows.mv(w), X @ w, atol=1e-5) and torch.allclose(rows.rmv(v), X.t() @ v, atol=1e-4)
    dense = torch.randn(300, 20, generator=g) * (torch.rand(300, 20, generator=g) < MAX_DENSITY + 0.1)
    assert SparseRows.of(dense) is None and SparseRows.of(X.double()) is None


def test_linear_full_batch_space_uses_the_sparse_rows_and_matches_autograd():
    """A full-batch evaluation of a linear model on a mostly-zero X runs its products on the CSR copies (kept
    on the problem, rebuilt when X changes) with the scores and gradients of autograd on the dense X."""
    from solvers.sparse_rows import sparse_rows

    problem = _problem([CONSTRAINTS.get("demographic_parity")(0.02)], n=200)
    problem.model_factory, problem.model_type = linear, "linear"
    with torch.no_grad():
        problem.X.mul_(torch.rand(problem.X.shape, generator=torch.Generator().manual_seed(4)) < 0.2)
    model = _randomised(problem.make_model())
    ev = score_evaluation(problem, ScoreNet.of(model), None)
    assert ev.space.rows is not None and sparse_rows(problem) is ev.space.rows
    ref = problem.evaluate(model)
    assert torch.allclose(ev.scores, ref.scores, atol=1e-5) and torch.allclose(ev.constraints, ref.constraints, atol=1e-6)
    for alpha, w in [(1.0, None), (0.0, torch.ones(1))]:
        loss = alpha * ref.objective + (0.0 if w is None else (w * ref.constraints).sum())
        expected = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
        for got, e in zip(ev.space.gradient(alpha, w), expected):
            assert got.shape == e.shape and torch.allclose(got, e, atol=1e-5)
    with torch.no_grad():
        problem.X.fill_(1.0)  # now dense: no CSR copies any more
    assert sparse_rows(problem) is None

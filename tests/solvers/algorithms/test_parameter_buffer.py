"""The parameters in one buffer while the driver iterates (:mod:`solvers.algorithms.parameter_buffer`): the divergence
check's sum is non-finite exactly when an entry is, the buffer survives a checkpoint restore, a replaced storage
falls back to the per-tensor sum, and the model leaves the loop with a storage per tensor."""
import math

import pytest
import torch

from solvers import CONSTRAINTS, Observer, Problem, solve
from solvers.algorithms.parameter_buffer import one_buffer, parameter_sum
from solvers.models.factory import mlp


def _params():
    torch.manual_seed(0)
    model = mlp(5, [6, 4], "relu")
    return model, [p for p in model.parameters()]


def _finite(params, buffer) -> bool:
    return math.isfinite(parameter_sum(params, buffer).item())


def test_the_sum_over_the_buffer_is_non_finite_exactly_when_an_entry_is():
    model, params = _params()
    before = [p.detach().clone() for p in params]
    with one_buffer(params) as buffer, torch.no_grad():
        assert buffer is not None and buffer.holds(params)
        assert torch.equal(buffer.flat, torch.cat([b.reshape(-1) for b in before]))
        params[2].add_(1.0)  # an in-place step writes the buffer
        assert torch.equal(buffer.flat, torch.cat([p.reshape(-1) for p in params]))
        assert _finite(params, buffer)
        for t, p in enumerate(params):
            for bad in (math.nan, math.inf, -math.inf):
                keep = p.view(-1)[-1].item()
                p.view(-1)[-1] = bad
                assert not _finite(params, buffer), (t, bad)
                p.view(-1)[-1] = keep
        params[0].view(-1)[0], params[3].view(-1)[0] = math.inf, -math.inf  # infinities of both signs: NaN
        assert not _finite(params, buffer)
        params[0].view(-1)[0], params[3].view(-1)[0] = 0.0, 0.0
        assert _finite(params, buffer)
    assert len({p.untyped_storage().data_ptr() for p in params}) == len(params)


def test_a_restored_checkpoint_keeps_the_buffer_and_a_replaced_storage_falls_back():
    model, params = _params()
    state = {k: v.clone() + 1.0 for k, v in model.state_dict().items()}
    with one_buffer(params) as buffer, torch.no_grad():
        model.load_state_dict(state)  # (what a checkpoint restore does: a copy in place)
        assert buffer.holds(params)
        assert torch.equal(buffer.flat, torch.cat([v.reshape(-1) for v in state.values()]))
        params[1].data = params[1].data.clone()  # a storage of its own: the buffer no longer holds θ
        assert not buffer.holds(params)
        params[1][0] = math.nan
        assert not _finite(params, buffer)


def test_parameters_that_cannot_share_a_buffer_are_left_alone():
    a, b = torch.zeros(3, requires_grad=True), torch.zeros(2, dtype=torch.float64, requires_grad=True)
    with one_buffer([a, b]) as buffer:
        assert buffer is None
    with one_buffer([a, a]) as buffer:
        assert buffer is None
    model, params = _params()
    with one_buffer(params, enabled=False) as buffer:
        assert buffer is None


@pytest.mark.parametrize("solver", ["ssl_alm", "ssw"])
def test_a_score_space_run_returns_a_model_with_a_storage_per_tensor(solver):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(120, 4, generator=g)
    problem = Problem(X=X, y=(X[:, 0] > 0).float(), group=torch.randint(0, 2, (120,), generator=g),
                      group_names=["a", "b"], model_type="mlp", model_factory=lambda d: mlp(d, [5], "relu"),
                      objective="bce", constraints=[CONSTRAINTS.get("loss_gap")(0.01, {"mode": "two_sided"})],
                      device="cpu")
    torch.manual_seed(0)
    model = mlp(4, [5], "relu")
    shared = []

    class Storages(Observer):
        def on_iteration(self, record):  # during the loop: one storage for every tensor
            shared.append(len({p.untyped_storage().data_ptr() for p in model.parameters()}))

    res = solve(problem, {"name": solver, "params": {"batch_size": 16}}, Storages(), max_iterations=30, model=model)
    assert res.model is model and shared == [1] * 30
    tensors = list(res.model.parameters())
    assert len({p.untyped_storage().data_ptr() for p in tensors}) == len(tensors)
    assert res.iterations == 30 and math.isfinite(res.last.objective)

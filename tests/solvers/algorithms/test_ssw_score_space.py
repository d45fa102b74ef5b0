"""SSw on the score-space path: the same iterates as the autograd implementation it replaced.

``AutogradSSw`` below is that implementation, kept as a test helper (not product code): F and G from one
forward with the autograd graph, S^f = ∇F by autograd, and on a constraint step a FRESH balanced batch ζ'
(Algorithm 3 line 10) evaluated with a graph and differentiated through ``max_i c_i``."""
import pytest
import torch

from solvers import CONSTRAINTS
from solvers.algorithms import ALGORITHMS
from solvers.algorithms.alm import BalancedConstraintBatches
from solvers.algorithms.base import Algorithm, gradient
from solvers.algorithms.ssw import SSw
from solvers.models.factory import mlp
from solvers.problem import Evaluation, Problem


class AutogradSSw(BalancedConstraintBatches, Algorithm):
    """The autograd SSw (before the score-space path), step for step."""

    # the tolerance schedule ε_k is not what changed: shared with the product class
    start = SSw.start
    epsilon = SSw.epsilon

    def step(self, k: int, current: Evaluation):
        c = self.config
        eps = self.epsilon(k)
        cons = current.constraints
        base = super().samples_per_step() if not self.full_batch else self.problem.n_samples
        if cons.numel() == 0 or float(cons.detach().max()) <= eps:
            grads, eta, switched = gradient(current.objective, self.params), c.eta_f, 0.0
            self._samples = base + (0 if self.full_batch else self.constraint_samples())
        else:
            if not self.full_batch:
                cons = self.problem.evaluate(self.model, self.constraint_idx()).constraints
            grads, eta, switched = gradient(cons.max(), self.params), c.eta_c, 1.0
            self._samples = base + (0 if self.full_batch else 2 * self.constraint_samples())
        with torch.no_grad():
            torch._foreach_add_(self.params, grads, alpha=-eta)
            self.problem.project_(self.params)
        dev = self.problem.device
        return self.evaluate(), {"constraint_step": torch.tensor([switched], device=dev),
                                 "epsilon": torch.tensor([eps], device=dev)}

    def samples_per_step(self) -> int:
        return self._samples


def _problem(n=203, k=3, seed=0, mode="two_sided", tolerance=0.005):
    g = torch.Generator().manual_seed(seed)
    group = torch.randint(0, k, (n,), generator=g)
    y = torch.randint(0, 2, (n,), generator=g).float()
    X = torch.randn(n, 5, generator=g)
    X[:, 0] += 1.5 * (group == 0)  # a group-dependent feature: the loss gap moves with θ
    return Problem(X=X, y=y, group=group, group_names=[f"g{i}" for i in range(k)], model_type="mlp",
                   model_factory=lambda d: mlp(d, [6, 4], "relu"), objective="bce",
                   constraints=[CONSTRAINTS.get("loss_gap")(tolerance, {"mode": mode})], device="cpu")


def _trajectory(cls, problem, config, iterations, seed=0):
    torch.manual_seed(seed)
    model = problem.make_model()
    alg = cls(problem, config, model, seed=seed)
    alg.horizon = iterations
    out = []
    with torch.set_grad_enabled(alg.needs_autograd):
        current = alg.evaluate()
        alg.start(current)
        for k in range(iterations):
            current, duals = alg.step(k, current)
            out.append((duals["constraint_step"].item(), duals["epsilon"].item(), alg.samples_per_step(),
                        current.objective.item(), current.constraints.tolist(),
                        [p.detach().clone() for p in model.parameters()]))
    return alg, out


@pytest.mark.parametrize("params", [
    {"batch_size": 16, "eta_f": 0.2, "eta_c": 0.2, "eps0": 0.02, "decay_start": 5},
    {"batch_size": 16, "constraint_batch": 4, "eta_f": 0.5, "eta_c": 0.05, "eps0": 0.0, "tol_per_epoch": False},
    {"batch_size": None, "eta_f": 0.2, "eta_c": 0.2},  # full batch: the deterministic switching method
], ids=["balanced", "small-constraint-batch", "full-batch"])
@pytest.mark.parametrize("mode", ["one_sided", "two_sided"])
def test_ssw_score_space_iterates_equal_the_autograd_implementation(params, mode):
    problem = _problem(mode=mode)
    cls = ALGORITHMS.get("ssw")
    config = cls.Config(**params)
    new, ours = _trajectory(cls, problem, config, 60)
    assert new.net is not None and not new.needs_autograd  # the score-space path ran
    _, ref = _trajectory(AutogradSSw, problem, config, 60)
    steps = [r[0] for r in ref]
    assert 0 < sum(steps) < len(steps), "both branches must be taken for the test to mean something"
    for a, b in zip(ours, ref):
        assert a[:3] == b[:3]  # branch, ε_k and samples drawn
        assert a[3] == pytest.approx(b[3], abs=1e-5)
        assert a[4] == pytest.approx(b[4], abs=1e-5)
        for p, q in zip(a[5], b[5]):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-5)


def test_ssw_without_a_score_space_keeps_autograd():
    """A model the score space cannot differentiate (a forward hook) runs the autograd path, same iterates."""
    problem = _problem()
    cls = ALGORITHMS.get("ssw")
    config = cls.Config(batch_size=16, eta_f=0.2, eta_c=0.2, eps0=0.02)
    torch.manual_seed(0)
    model = problem.make_model()
    model.register_forward_hook(lambda m, i, o: None)
    alg = cls(problem, config, model, seed=0)
    assert alg.net is None and alg.needs_autograd
    current = alg.evaluate()
    alg.start(current)
    for k in range(20):
        current, _ = alg.step(k, current)
    _, ref = _trajectory(AutogradSSw, problem, config, 20)
    for p, q in zip(model.parameters(), ref[-1][5]):
        torch.testing.assert_close(p.detach(), q, rtol=1e-5, atol=1e-5)

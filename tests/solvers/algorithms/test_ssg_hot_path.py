"""SSG's mini-batch hot path: batch group structure from the epoch's permutation, per-sample losses shared by
the objective and loss_gap, the switching test on host values — the same iterates as the autograd path."""
import numpy as np
import pytest
import torch

from solvers import CONSTRAINTS, solve
from solvers import checkpoint as ckpt
from solvers.algorithms import ALGORITHMS
from solvers.batching import BatchSampler
from solvers.constraints import FairnessData
from solvers.models import mlp
from solvers.observer import Observer
from solvers.problem import Problem


def _problem(n=203, k=3, seed=0, mode="two_sided"):
    g = torch.Generator().manual_seed(seed)
    group = torch.randint(0, k, (n,), generator=g)
    y = torch.randint(0, 2, (n,), generator=g).float()
    X = torch.randn(n, 5, generator=g)
    return Problem(X=X, y=y, group=group, group_names=[f"g{i}" for i in range(k)], model_type="mlp",
                   model_factory=lambda d: mlp(d, [6, 4], "relu"), objective="bce",
                   constraints=[CONSTRAINTS.get("loss_gap")(0.005, {"mode": mode})], device="cpu")


def test_run_structure_equals_subset():
    g = torch.Generator().manual_seed(1)
    data = FairnessData.build((torch.rand(103, generator=g) > 0.5).float(), torch.randint(0, 3, (103,), generator=g), 3)
    perm = torch.randperm(103, generator=g)
    for size in (1, 7, 16):
        for offset in (0, 5):
            for a in range(offset, 103 - size + 1, size):
                run, ref = data.run(perm, a, a + size), data.subset(perm[a:a + size])
                for x, r in ((run.y, ref.y), (run.group, ref.group), (run.by_group.counts, ref.by_group.counts),
                             (run.by_group.valid, ref.by_group.valid)):
                    assert torch.equal(x, r)
                assert run.by_group.counts_key() == ref.by_group.counts_key()  # the composition cache key
    perm.copy_(torch.randperm(103, generator=g))  # rewritten in place (a checkpoint restore): the cache is stale
    assert torch.equal(data.run(perm, 3, 10).group, data.subset(perm[3:10]).group)


def test_uniform_run_is_a_run_of_the_permutation():
    group = torch.randint(0, 2, (50,))
    a, b = BatchSampler(group, 2, seed=4), BatchSampler(group, 2, seed=4)
    for _ in range(20):  # 7 does not divide 50: batches wrap across epochs
        idx, order, start, stop = a.uniform_run(7)
        assert torch.equal(idx, b.uniform(7))
        if order is not None:
            assert torch.equal(idx, order[start:stop])
            idx[0] = -1  # a copy: writing it (a checkpoint restore does) leaves the permutation alone
            assert order[start] != -1


@pytest.mark.parametrize("eta_c", [None, 0.05], ids=["polyak", "constant"])
@pytest.mark.parametrize("mode", ["one_sided", "two_sided"])
def test_ssg_score_space_iterates_equal_autograd(eta_c, mode):
    """Same branches and, up to float rounding, the same iterates with and without the score space."""
    problem = _problem(mode=mode)
    cls = ALGORITHMS.get("ssg")
    runs = []
    for use_space in (True, False):
        torch.manual_seed(0)
        model = problem.make_model()
        alg = cls(problem, cls.Config(batch_size=16, eta_c=eta_c, eta_f=0.05, tolerance=0.02), model, seed=0)
        alg.horizon = 60
        if not use_space:
            alg.net, alg.needs_autograd = None, True
        with torch.set_grad_enabled(alg.needs_autograd):
            current = alg.evaluate()
            alg.start(current)
            flags = []
            for k in range(60):
                current, duals = alg.step(k, current)
                flags.append(duals["objective_step"].item())
        runs.append((flags, [p.detach().clone() for p in model.parameters()]))
    (flags_a, params_a), (flags_b, params_b) = runs
    assert flags_a == flags_b and 0 < sum(flags_a) < len(flags_a)  # both branches taken
    for a, b in zip(params_a, params_b):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_shared_losses_equal_recomputed():
    problem = _problem()
    family = problem.constraints[0]
    idx = torch.arange(0, 40)
    scores = torch.randn(40)
    data = problem.data.subset(idx)
    plain = family.gap(scores, data)
    data.share_losses(problem.objective, scores, problem.objective.per_sample(scores, data.y))
    assert torch.equal(family.gap(scores, data), plain)
    other = problem.data.subset(idx)
    other.share_losses(problem.objective, scores.clone(), torch.zeros(40))  # other scores: not used
    assert torch.equal(family.gap(scores, other), plain)


class _At(Observer):
    def __init__(self, at):
        self.at, self.saved, self.records, self._k = at, None, [], 0

    def on_iteration(self, record):
        self.records.append(record)
        self._k = record.iteration

    def checkpoint_due(self):
        return self._k == self.at

    def on_checkpoint(self, checkpoint):
        self.saved = checkpoint


def test_ssg_minibatch_resume_continues_the_run():
    spec = {"name": "ssg", "params": {"batch_size": 16, "eta_c": 0.05}}
    full = _At(17)
    reference = solve(_problem(), spec, full, max_iterations=40, seed=2)
    resumed_obs = _At(-1)
    resumed = solve(_problem(), spec, resumed_obs, max_iterations=40, seed=2, resume=full.saved)
    np.testing.assert_allclose([r.constraints for r in resumed_obs.records], [r.constraints for r in full.records[17:]],
                               rtol=1e-5, atol=1e-6)
    for a, b in zip(resumed.model.parameters(), reference.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert isinstance(full.saved, ckpt.Checkpoint)

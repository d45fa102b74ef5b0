"""Mini-batch sampling and mini-batch solves."""
from __future__ import annotations

import torch

from solvers import Problem, RecordingObserver, solve
from solvers.batching import BatchSampler
from solvers.constraints import CONSTRAINTS


def test_uniform_is_an_epoch_permutation_and_seeded():
    group = torch.tensor([0, 1] * 50)
    a, b = BatchSampler(group, 2, seed=3), BatchSampler(group, 2, seed=3)
    epoch = torch.cat([a.uniform(30) for _ in range(3)] + [a.uniform(10)])
    assert sorted(epoch.tolist()) == list(range(100))
    assert torch.equal(torch.cat([b.uniform(30) for _ in range(3)] + [b.uniform(10)]), epoch)
    assert not torch.equal(BatchSampler(group, 2, seed=4).uniform(100), epoch)


def test_balanced_draws_the_same_number_from_every_group():
    group = torch.tensor([0] * 90 + [1] * 7 + [3] * 3)  # group 2 is empty
    idx = BatchSampler(group, 4, seed=0).balanced(16)
    counts = torch.bincount(group[idx], minlength=4)
    assert counts.tolist() == [16, 16, 0, 16]


def test_minibatch_plada_counts_samples_and_stays_deterministic():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(400, 3, generator=g)
    group = (torch.rand(400, generator=g) < 0.4).long()
    y = ((X[:, 0] + group + 0.3 * torch.randn(400, generator=g)) > 0.5).float()
    problem = Problem(X=X, y=y, group=group, group_names=["a", "b"], device="cpu",
                      constraints=[CONSTRAINTS.get("demographic_parity")(0.05)])
    runs = []
    for _ in range(2):
        obs = RecordingObserver()
        solve(problem, {"name": "plada", "params": {"eta": 0.2, "batch_size": 64}}, obs, max_iterations=25)
        runs.append(obs.records)
    assert runs[0][-1].samples_seen == 25 * 64
    assert [r.objective for r in runs[0]] == [r.objective for r in runs[1]]


def _rows(n: int):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(n, 3, generator=g)
    group = (torch.rand(n, generator=g) < 0.4).long()
    y = ((X[:, 0] + 0.5 * group) > 0.2).float()
    return Problem(X=X, y=y, group=group, group_names=["a", "b"], device="cpu",
                   constraints=[CONSTRAINTS.get("demographic_parity")(tolerance=0.05)])


def test_fairsolves_own_defaults_step_on_minibatches_above_the_full_batch_limit():
    """erm (every job's baseline) and penalty: full batch up to FULL_BATCH_MAX_ROWS training rows, SCALE_BATCH above;
    a batch_size given is kept; the catalog's torch-free descriptions state the same numbers."""
    from solvers.batching import FULL_BATCH_MAX_ROWS, SCALE_BATCH, scale_batch_size
    from solvers.catalog import ALGORITHMS

    assert scale_batch_size(FULL_BATCH_MAX_ROWS) is None and scale_batch_size(FULL_BATCH_MAX_ROWS + 1) == SCALE_BATCH
    big, small = _rows(FULL_BATCH_MAX_ROWS + 1), _rows(2000)
    for name in ("erm", "penalty"):
        at_scale = solve(big, name, max_iterations=3)
        assert at_scale.config.batch_size == SCALE_BATCH and at_scale.samples_seen == 3 * SCALE_BATCH
        assert solve(small, name, max_iterations=3).config.batch_size is None
        assert solve(big, {"name": name, "params": {"batch_size": 512}}, max_iterations=3).samples_seen == 3 * 512
        assert f"{SCALE_BATCH:,} rows above {FULL_BATCH_MAX_ROWS:,} training rows" in ALGORITHMS.entry(name).description


def test_auto_gives_its_candidates_minibatches_above_the_full_batch_limit():
    from solvers.batching import FULL_BATCH_MAX_ROWS, SCALE_BATCH

    config = {"portfolio": ["ssg", "plada"], "iterations": 3, "refinements": 0, "exhaustive": True,
              "settings": {"plada": [{"eta": 0.5, "batch_size": 256}]}}
    tried = solve(_rows(FULL_BATCH_MAX_ROWS + 1), {"name": "auto", "params": config}, max_iterations=6).tried
    assert [t["params"].get("batch_size") for t in tried] == [SCALE_BATCH, 256]  # a setting's own batch_size is kept
    small = solve(_rows(2000), {"name": "auto", "params": config}, max_iterations=3).tried
    assert "batch_size" not in small[0]["params"]

"""Overlapping groups (a sparse row-to-group membership): construction, the loss-gap family and its exact
metric against per-group loops, and the partition as the one-hot special case of the same code path."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from pydantic import ValidationError

from solvers.constraints.intersectional import Intersectional
from solvers.constraints.loss_gap import LossGap
from solvers.fairness.exact import exact_gaps
from solvers.membership import Membership, ThresholdGroups, threshold_membership
from solvers.metrics import loss_gap
from solvers.objectives import per_sample_loss
from solvers.problem import Problem


def _table() -> pd.DataFrame:
    return pd.DataFrame({"a": [0.0, 0.5, 0.9, 0.2, np.nan], "b": [0.1, 0.6, 0.6, 0.9, 0.9]})


def test_threshold_membership_puts_a_row_in_every_group_it_passes():
    m = threshold_membership(_table(), {"thresholds": {"a": [0.4, 0.1], "b": [0.5]}})
    assert m.names == ["a>=0.1 & b>=0.5", "a>=0.4 & b>=0.5"]  # cuts sorted
    dense = m.csr().toarray()
    np.testing.assert_array_equal(dense, [[0, 0], [1, 1], [1, 1], [1, 0], [0, 0]])  # row 1 and 2: in both
    assert m.counts.tolist() == [3, 2]
    assert np.all(np.diff(m.rows) >= 0)  # CSR (row-major) order


def test_threshold_membership_drops_small_groups_and_takes_rows():
    m = threshold_membership(_table(), {"thresholds": {"a": [0.1, 0.4], "b": [0.5]}, "min_group_fraction": 0.5})
    assert m.names == ["a>=0.1 & b>=0.5"]  # 3 of 5 rows > 0.5 · 5; the 2-row group is dropped
    sub = m.take(np.array([3, 1]))
    np.testing.assert_array_equal(sub.csr().toarray(), [[1], [1]])


@pytest.mark.parametrize("thresholds, message", [
    ({"a": list(range(11)), "b": list(range(10)), "c": list(range(10))}, "1100 groups"),
    ({"a": []}, "thresholds.a"),
    ({"a": [0.1, 0.1]}, "distinct"),
    ({f"c{i}": [0.5] for i in range(9)}, "thresholds"),
])
def test_threshold_spec_is_bounded_and_names_the_field(thresholds, message):
    with pytest.raises(ValidationError, match=message):
        ThresholdGroups(thresholds=thresholds)


def _problem(membership: Membership, family, n: int, seed: int = 0) -> Problem:
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 3, generator=g)
    y = (torch.rand(n, generator=g) < 0.4).float()
    return Problem(X, y, None, membership.names, constraints=[family], membership=membership)


def _random_membership(n: int, k: int, seed: int = 1) -> Membership:
    rng = np.random.default_rng(seed)
    dense = rng.random((n, k)) < 0.45
    dense[:, 0] = True  # one group holding everyone ...
    dense[:, -1] = np.arange(n) < 5  # ... and one small group
    rows, groups = np.nonzero(dense)
    return Membership(rows.astype(np.int64), groups.astype(np.int64), n, [f"g{j}" for j in range(k)])


def test_overlapping_loss_gap_value_and_gradient_equal_a_per_group_loop():
    n, k = 40, 6
    m = _random_membership(n, k)
    family = Intersectional(0.05, {"min_group_fraction": 0.3})
    p = _problem(m, family, n)
    scores = torch.randn(n, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).requires_grad_()
    G = family.surrogate(scores, p.data)
    # the loop: G_g = mean over g of hinge − overall mean − ε for the kept groups
    losses = per_sample_loss("hinge")(scores, p.y.double())
    dense = torch.as_tensor(m.csr().toarray(), dtype=torch.bool)
    kept = [j for j in range(k) if dense[:, j].sum() > 0.3 * n]
    assert 0 < len(kept) < k  # the size filter is exercised
    loop = torch.stack([losses[dense[:, j]].mean() - losses.mean() - 0.05 for j in kept])
    torch.testing.assert_close(G, loop)
    assert family.names == [f"intersectional[g{j}]" for j in kept]
    w = torch.linspace(0.5, 2.0, len(kept), dtype=torch.float64)
    (expected,) = torch.autograd.grad((loop * w).sum(), scores)
    torch.testing.assert_close(family.vjp(scores.detach(), p.data, w), expected)
    (autograd,) = torch.autograd.grad((family.surrogate(scores, p.data) * w).sum(), scores)
    torch.testing.assert_close(autograd, expected)


def test_overlapping_exact_metric_equals_a_per_group_loop():
    n, k = 50, 5
    m = _random_membership(n, k, seed=3)
    rng = np.random.default_rng(4)
    y, logits = (rng.random(n) < 0.5).astype(int), rng.normal(size=n)
    family = Intersectional(0.0, {"min_group_fraction": 0.0})
    value = exact_gaps([family], y, logits, None, m.names, membership=m)[0]
    losses = np.maximum(0.0, 1.0 - (2 * y - 1) * logits)
    dense = m.csr().toarray().astype(bool)
    loop = max(losses[dense[:, j]].mean() - losses.mean() for j in range(k))
    assert value == pytest.approx(loop, rel=1e-12)


def test_a_partition_through_the_membership_path_equals_the_old_path():
    n, k = 60, 4
    rng = np.random.default_rng(5)
    group = rng.integers(0, k, n)
    names = [f"g{j}" for j in range(k)]
    old_family, new_family = LossGap(0.02, {"loss": "logistic"}), LossGap(0.02, {"loss": "logistic"})
    X, y = torch.randn(n, 3), torch.as_tensor(rng.random(n) < 0.3, dtype=torch.float32)
    old = Problem(X, y, torch.as_tensor(group), names, constraints=[old_family])
    new = Problem(X, y, None, names, constraints=[new_family], membership=Membership.from_partition(group, names))
    assert new.data.by_group.overlapping and not old.data.by_group.overlapping
    scores = torch.randn(n).requires_grad_()
    G_old, G_new = old_family.surrogate(scores, old.data), new_family.surrogate(scores, new.data)
    torch.testing.assert_close(G_new, G_old)
    w = torch.rand(k)
    torch.testing.assert_close(new_family.vjp(scores, new.data, w), old_family.vjp(scores, old.data, w))
    torch.testing.assert_close(new.data.by_group.means(y), old.data.by_group.means(y))
    logits = scores.detach().numpy()
    exact_old = loss_gap(y.numpy(), logits, group, names, "logistic")
    exact_new = loss_gap(y.numpy(), logits, None, names, "logistic",
                         membership=Membership.from_partition(group, names))
    assert exact_new == exact_old
    idx = torch.tensor([5, 1, 7, 30, 2])  # a mini-batch holds the same cells on both
    sub_old, sub_new = old.data.subset(idx).by_group, new.data.subset(idx).by_group
    torch.testing.assert_close(sub_new.counts, sub_old.counts)
    torch.testing.assert_close(sub_new.sums(scores[idx]), sub_old.sums(scores[idx]))


def test_plada_solves_on_overlapping_groups_full_and_mini_batch_with_an_exact_trace():
    from solvers import solve
    from solvers.models import scores_in_blocks
    from solvers.observer import RecordingObserver

    n, k = 120, 5
    m = _random_membership(n, k, seed=6)
    family = Intersectional(0.05, {"min_group_fraction": 0.0})
    train = _problem(m.take(np.arange(80)), family, 80, seed=7)
    val = _problem(m.take(np.arange(80, n)), Intersectional(0.05, {"min_group_fraction": 0.0}), 40, seed=8)
    observer = RecordingObserver(exact_every=1)
    result = solve(train, {"name": "plada", "params": {"eta": 0.05}}, observer, max_iterations=15, validation=val)
    assert result.status == "completed" and len(observer.records) == 15
    last = observer.records[-1]
    assert len(last.constraints) == len(family.names) == k
    with torch.no_grad():
        logits = scores_in_blocks(result.model, train.X).double().numpy()
    expected = exact_gaps([family], train.y.numpy(), logits, None, train.group_names, membership=train.membership)
    assert last.exact["train"][0] == pytest.approx(float(expected[0]))
    assert last.exact["validation"][0] is not None
    batched = solve(train, {"name": "plada", "params": {"eta": 0.05, "batch_size": 16}}, RecordingObserver(),
                    max_iterations=10)
    assert batched.status == "completed" and batched.iterations == 10

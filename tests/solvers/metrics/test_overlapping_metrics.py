"""Constraint families, exact metrics and the fairness report on overlapping groups: against brute-force
per-group loops on small tables, and a partition given as a membership against the partition path."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from solvers.constraints.demographic_parity import DemographicParity
from solvers.constraints.equal_opportunity import EqualOpportunity
from solvers.constraints.intersectional import Intersectional
from solvers.constraints.loss_gap import LossGap
from solvers.fairness.exact import exact_gaps
from solvers.fairness.intervals import constraint_bounds
from solvers.fairness.report import fairness_entries
from solvers.membership import Membership
from solvers.metrics import classification_metrics, group_fairness
from solvers.problem import Problem


def _random_membership(n: int, k: int, seed: int = 1) -> Membership:
    rng = np.random.default_rng(seed)
    dense = rng.random((n, k)) < 0.4
    dense[:, 0] = True              # one group holding everyone
    dense[:, 1] = np.arange(n) < 6  # a small one
    rows, groups = np.nonzero(dense)
    return Membership(rows.astype(np.int64), groups.astype(np.int64), n, [f"g{j}" for j in range(k)])


def _families():
    return [DemographicParity(0.05), DemographicParity(0.05, {"reference": "overall"}),
            EqualOpportunity(0.05), EqualOpportunity(0.05, {"reference": "overall"}),
            LossGap(0.05, {"loss": "logistic"}), LossGap(0.05, {"loss": "hinge", "mode": "two_sided"}),
            Intersectional(0.05, {"min_group_fraction": 0.2})]


def _data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    return (rng.random(n) < 0.45).astype(int), rng.normal(size=n)


def _loop(dense: np.ndarray, y: np.ndarray, logits: np.ndarray) -> list[float]:
    """Each family of :func:`_families`, exact, one group at a time."""
    pred = (logits > 0).astype(float)
    k = dense.shape[1]
    groups = [dense[:, j] for j in range(k) if dense[:, j].any()]
    sr = [pred[g].mean() for g in groups]
    tpr = [pred[g & (y == 1)].mean() for g in groups if (g & (y == 1)).any()]
    logistic = np.logaddexp(0.0, -(2 * y - 1) * logits)
    hinge = np.maximum(0.0, 1.0 - (2 * y - 1) * logits)
    hinge_means = [hinge[g].mean() for g in groups]
    big = [dense[:, j] for j in range(k) if dense[:, j].sum() > 0.2 * len(y)]
    return [max(sr) - min(sr), max(abs(s - pred.mean()) for s in sr),
            max(tpr) - min(tpr), max(abs(t - pred[y == 1].mean()) for t in tpr),
            max(logistic[g].mean() - logistic.mean() for g in groups), max(hinge_means) - min(hinge_means),
            max(hinge[g].mean() - hinge.mean() for g in big)]


def test_exact_values_on_a_membership_equal_a_per_group_loop():
    n, k = 80, 6
    m = _random_membership(n, k, seed=2)
    y, logits = _data(n, 3)
    families = _families()
    values = exact_gaps(families, y, logits, m, m.names)
    np.testing.assert_allclose(values, _loop(m.csr().toarray().astype(bool), y, logits), rtol=1e-12)
    np.testing.assert_allclose(exact_gaps(families, y, logits, None, m.names, membership=m), values)
    rates = group_fairness(y, (logits > 0).astype(int), m, m.names)
    dense = m.csr().toarray().astype(bool)
    assert rates["group_sizes"] == {f"g{j}": int(dense[:, j].sum()) for j in range(k)}
    with pytest.raises(ValueError, match="overlapping"):
        from solvers.constraints.minority_rate import MinorityRate
        exact_gaps([MinorityRate(0.1)], y, logits, m, m.names)


def _problem(group, names, families, n: int, seed: int = 0, membership=None) -> Problem:
    g = torch.Generator().manual_seed(seed)
    X, y = torch.randn(n, 3, generator=g), (torch.rand(n, generator=g) < 0.4).float()
    return Problem(X, y, group, names, constraints=families, membership=membership)


def test_surrogate_rows_on_a_membership_equal_a_per_group_loop():
    n, k = 50, 5
    m = _random_membership(n, k, seed=4)
    dp, eo = DemographicParity(0.05, {"reference": "overall"}), EqualOpportunity(0.02, {"reference": "overall"})
    p = _problem(None, m.names, [dp, eo], n, membership=m)
    scores = torch.randn(n, dtype=torch.float64, generator=torch.Generator().manual_seed(5)).requires_grad_()
    soft, y = torch.sigmoid(scores), p.y.double()
    dense = torch.as_tensor(m.csr().toarray(), dtype=torch.bool)
    loop_dp = torch.stack([(soft[dense[:, j]].mean() - soft.mean()).abs() - 0.05 for j in range(k)])
    pos = y > 0.5
    loop_eo = torch.stack([(soft[dense[:, j] & pos].mean() - soft[pos].mean()).abs() - 0.02 for j in range(k)])
    torch.testing.assert_close(dp.surrogate(scores, p.data), loop_dp)
    torch.testing.assert_close(eo.surrogate(scores, p.data), loop_eo)
    assert dp.names == [f"demographic_parity[g{j}]" for j in range(k)] and len(p.constraint_names) == 2 * k
    w = torch.linspace(0.5, 2.0, k, dtype=torch.float64)
    (expected,) = torch.autograd.grad((loop_dp * w).sum(), scores)
    torch.testing.assert_close(dp.vjp(scores.detach(), p.data, w), expected)
    idx = torch.tensor([3, 40, 7, 21, 9, 33])  # a mini-batch: the rows of its groups, the batch's overall rate
    batch = dp.surrogate(scores[idx], p.data.subset(idx))
    sub = dense[idx]
    present = [j for j in range(k) if sub[:, j].any()]
    expected = torch.full((k,), -0.05, dtype=torch.float64)
    expected[present] = torch.stack([(soft[idx][sub[:, j]].mean() - soft[idx].mean()).abs() - 0.05 for j in present])
    torch.testing.assert_close(batch, expected)


def test_a_partition_as_a_membership_gives_the_partition_values():
    n, k = 90, 4
    rng = np.random.default_rng(6)
    group = rng.integers(0, k, n)
    names = [f"g{j}" for j in range(k)]
    one_hot = Membership.from_partition(group, names)
    old, new = _families(), _families()
    p_old = _problem(torch.as_tensor(group), names, old, n, seed=7)
    p_new = _problem(None, names, new, n, seed=7, membership=one_hot)
    assert p_new.data.by_group.overlapping and p_old.constraint_names == p_new.constraint_names
    scores = torch.randn(n, dtype=torch.float64, generator=torch.Generator().manual_seed(8))
    torch.testing.assert_close(p_new.constraint_values(scores), p_old.constraint_values(scores))
    w = torch.rand(len(p_old.constraint_names), dtype=torch.float64)
    start = 0
    for a, b in zip(old, new):  # every family's VJP too
        m = len(a.names)
        torch.testing.assert_close(b.vjp(scores, p_new.data, w[start:start + m]),
                                   a.vjp(scores, p_old.data, w[start:start + m]))
        start += m
    y, logits = p_old.y.numpy().astype(int), scores.numpy()
    np.testing.assert_allclose(exact_gaps(new, y, logits, one_hot, names), exact_gaps(old, y, logits, group, names),
                               rtol=1e-12)
    by_old = constraint_bounds(old, y, logits, group, names, n_boot=200)
    by_new = constraint_bounds(new, y, logits, one_hot, names, n_boot=200)
    for a, b, family in zip(by_old, by_new, old):
        assert b.value == pytest.approx(a.value, rel=1e-12)
        if a.method == "bootstrap":  # the same resamples through the sparse membership: the same replicates
            assert (b.lo, b.hi, b.upper) == pytest.approx((a.lo, a.hi, a.upper), rel=1e-9), family
    old_metrics = classification_metrics(y, 1 / (1 + np.exp(-logits)), group, names, logits=logits)
    new_metrics = classification_metrics(y, 1 / (1 + np.exp(-logits)), one_hot, names, logits=logits)
    for key in ("demographic_parity", "equal_opportunity", "equalized_odds", "demographic_parity_by_group",
                "group_sizes", "loss_gap", "loss_gap_by_group", "accuracy"):
        assert new_metrics[key] == pytest.approx(old_metrics[key]), key


def test_fairness_report_on_a_membership():
    n, k = 300, 5
    m = _random_membership(n, k, seed=9)
    y, logits = _data(n, 10)
    families = _families()[:5]
    splits = {"train": np.arange(0, 180), "validation": np.arange(180, 240), "test": np.arange(240, n)}
    entries = fairness_entries(families, y, logits, m, m.names, splits, n_boot=100)
    assert [e["type"] for e in entries] == [f.name for f in families]
    dense = m.csr().toarray().astype(bool)
    for split, idx in splits.items():
        loop = _loop(dense[idx], y[idx], logits[idx])[:5]
        for entry, value, family in zip(entries, loop, families):
            assert entry[split]["value"] == pytest.approx(value, rel=1e-12)
            assert entry[split]["kept"] == (value <= family.tolerance)
            lo, hi = entry[split]["ci"]
            assert lo <= hi
    assert all(e["method"] == "bootstrap" for e in entries)
    assert [e["kept_on_test"] for e in entries] == [e["test"]["kept"] for e in entries]


def test_small_overlapping_groups_with_no_positive_prediction_are_no_sign_of_a_constant_model():
    from solvers.auto import triviality
    from solvers.fairness.report import trivial_reasons

    n = 200
    rng = np.random.default_rng(11)
    y = (rng.random(n) < 0.5).astype(int)
    logits = np.where(y == 1, 2.0, -2.0) + rng.normal(0, 0.1, n)
    group = (np.arange(n) < 10).astype(int)  # a 10-row group ...
    logits[:10] = -3.0                      # ... predicted negative throughout
    assert triviality(y, logits, group, 2) == "near_constant"  # a partition: as before
    assert triviality(y, logits, Membership.from_partition(group, ["a", "b"]), 2) is None
    assert triviality(y, np.full(n, -1.0), Membership.from_partition(group, ["a", "b"]), 2) == "near_constant"
    reasons = trivial_reasons(0.9, {f"g{j}": 0.0 for j in range(15)})
    assert reasons[0].count(" 0.0 %") == 10 and reasons[0].endswith("and 5 more")


def test_every_solver_that_takes_overlapping_groups_solves_on_a_membership():
    from solvers import solve
    from solvers.spec import generic_solvers

    n, k = 120, 5
    m = _random_membership(n, k, seed=12)
    names = [s for s in generic_solvers() if s != "auto"]  # auto runs these (tests/solvers/data/test_overlapping_spec.py)
    assert {"plada", "ssg", "lagrangian", "penalty", "erm"} <= set(names)
    for name in names:
        families = [DemographicParity(0.05, {"reference": "overall"}), Intersectional(0.05, {"min_group_fraction": 0.1})]
        p = _problem(None, m.names, families, n, seed=13, membership=m)
        for params in ({}, {"batch_size": 32}):
            result = solve(p, {"name": name, "params": params}, max_iterations=8, time_limit_s=60, seed=0)
            assert result.status == "completed" and result.iterations == 8, (name, params)
            assert len(result.last.constraints) == len(p.constraint_names) == 2 * k - 1  # g1 under 10 %
            assert all(torch.isfinite(t).all() for t in result.model.state_dict().values())

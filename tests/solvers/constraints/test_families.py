"""Constraint families: gradients (finite differences), values vs brute force, names and counts."""
import json

import numpy as np
import pandas as pd
import pytest
import torch

from solvers import CONSTRAINTS, ConstraintSpec, ProblemSpec, SolverSpec, run
from solvers.constraints import FairnessData
from solvers.objectives import OBJECTIVES

SURROGATES = ["sigmoid", "hinge", "clipped_linear"]
LOSSES = ["bce", "logistic", "hinge", "truncated_logistic"]


def _data(n=120, k=3, seed=0):
    rng = np.random.default_rng(seed)
    group = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])  # every group present
    y = rng.integers(0, 2, n)
    group[:2 * k], y[:2 * k] = np.repeat(np.arange(k), 2), np.tile([0, 1], k)  # both labels in each group
    f = rng.uniform(-3, 3, n)
    near = np.abs(np.abs(f) - 1) < 0.15
    f[near] += 0.4 * np.sign(f[near])  # away from the kinks of hinge / clipped at ±1
    data = FairnessData.build(torch.tensor(y, dtype=torch.float32), torch.tensor(group), k)
    return f, y, group, data


def _family(type_, group, k, tolerance=0.0, **cfg):
    """A family bound to groups g0..g{k-1} with the counts of ``group`` (the training data)."""
    fam = CONSTRAINTS.get(type_)(tolerance, cfg)
    return fam.bind([f"g{i}" for i in range(k)], np.bincount(group, minlength=k))


CASES = (
    [("demographic_parity", {"surrogate": s}) for s in SURROGATES]
    + [("equalized_odds", {"surrogate": s, "aggregate": a}) for s in SURROGATES for a in ("max", "separate")]
    + [("equal_opportunity", {"surrogate": s}) for s in SURROGATES]
    + [("minority_rate", {"surrogate": s}) for s in SURROGATES]
    + [("minority_rate", {"c": 0.5, "minority": "g1"})]
    + [("loss_gap", {"loss": l, "mode": m}) for l in LOSSES for m in ("one_sided", "two_sided")]
    + [("intersectional", {}), ("intersectional", {"loss": "bce", "min_group_fraction": 0.2})]
)


@pytest.mark.parametrize("type_,cfg", CASES, ids=[f"{t}-{'-'.join(map(str, c.values()))}" for t, c in CASES])
def test_gradcheck_every_surrogate(type_, cfg):
    f, _, group, data = _data()
    fam = _family(type_, group, 3, 0.05, **cfg)
    x = torch.tensor(f, dtype=torch.float64, requires_grad=True)
    out = fam.surrogate(x, data)
    assert out.shape == (len(fam.names),) and out.dtype == torch.float64
    assert torch.autograd.gradcheck(lambda s: fam.surrogate(s, data), (x,), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_gradcheck_objectives(name):
    f, y, _, _ = _data(n=60)
    obj = OBJECTIVES[name]
    x = torch.tensor(f, dtype=torch.float64, requires_grad=True)
    yt = torch.tensor(y, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda s: obj(s, yt), (x,), eps=1e-6, atol=1e-6)
    assert torch.autograd.gradcheck(lambda s: obj.per_sample(s, yt), (x,), eps=1e-6, atol=1e-6)


def test_objective_values():
    f = np.array([-2.0, -0.3, 0.5, 4.0])
    y = np.array([1, 0, 1, 0])
    yt = 2 * y - 1
    t, tf = torch.tensor(f), torch.tensor(y, dtype=torch.float64)
    logistic = np.log1p(np.exp(-yt * f))
    np.testing.assert_allclose(OBJECTIVES["logistic"].per_sample(t, tf).numpy(), logistic)
    np.testing.assert_allclose(OBJECTIVES["bce"].per_sample(t, tf).numpy(), logistic)
    np.testing.assert_allclose(OBJECTIVES["hinge"].per_sample(t, tf).numpy(), np.maximum(0, 1 - yt * f))
    np.testing.assert_allclose(OBJECTIVES["truncated_logistic"].per_sample(t, tf).numpy(), 2 * np.log(1 + logistic / 2))
    assert OBJECTIVES["truncated_logistic"](t, tf).item() == pytest.approx((2 * np.log(1 + logistic / 2)).mean())


def _losses(f, y, loss):
    yt = 2 * y - 1
    return {"bce": np.log1p(np.exp(-yt * f)), "logistic": np.log1p(np.exp(-yt * f)),
            "hinge": np.maximum(0, 1 - yt * f), "truncated_logistic": 2 * np.log1p(np.log1p(np.exp(-yt * f)) / 2)}[loss]


@pytest.mark.parametrize("loss", LOSSES)
def test_loss_gap_matches_brute_force(loss):
    f, y, group, data = _data(n=200, k=3, seed=3)
    ell = _losses(f, y, loss)
    group_loss = [ell[group == g].mean() for g in range(3)]
    one = _family("loss_gap", group, 3, 0.1, loss=loss).surrogate(torch.tensor(f), data).numpy()
    np.testing.assert_allclose(one, [group_loss[g] - ell.mean() - 0.1 for g in range(3)], atol=1e-10)
    two = _family("loss_gap", group, 3, 0.1, loss=loss, mode="two_sided").surrogate(torch.tensor(f), data).numpy()
    pairs = [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)]
    np.testing.assert_allclose(two, [group_loss[a] - group_loss[b] - 0.1 for a, b in pairs], atol=1e-10)


def test_minority_rate_matches_paper_form():
    f, y, group, data = _data(n=200, k=3, seed=4)
    s = 1 / (1 + np.exp(-f))
    for cfg, minority in (({}, int(np.argmin(np.bincount(group)))), ({"minority": "g2", "c": 0.3}, 2)):
        fam = _family("minority_rate", group, 3, 0.01, **cfg)
        c = cfg.get("c", 0.2)
        expected = (c * s.sum() - s[group == minority].sum()) / len(s) - 0.01
        assert fam.surrogate(torch.tensor(f), data).item() == pytest.approx(expected, abs=1e-10)
        assert fam.names == [f"minority_rate[g{minority}]"]
    with pytest.raises(ValueError, match="unknown minority"):
        _family("minority_rate", group, 3, minority="nobody")


def test_equal_opportunity_matches_brute_force():
    f, y, group, data = _data(n=200, k=4, seed=5)
    s = 1 / (1 + np.exp(-f))
    tpr = [s[(group == g) & (y == 1)].mean() for g in range(4)]
    got = CONSTRAINTS.get("eopp")(0.0).surrogate(torch.tensor(f), data)
    assert got.shape == (1,) and got.item() == pytest.approx(max(tpr) - min(tpr), abs=1e-10)


def test_names_and_counts_three_groups():
    names = ["Female", "Male", "Other"]
    counts = [50, 45, 5]
    one = CONSTRAINTS.get("loss_gap")(0.1).bind(names, counts)
    assert one.names == ["loss_gap[Female]", "loss_gap[Male]", "loss_gap[Other]"]
    two = CONSTRAINTS.get("loss_gap")(0.1, {"mode": "two_sided"}).bind(names, counts)
    assert two.names == ["loss_gap[Female-Male]", "loss_gap[Male-Female]", "loss_gap[Female-Other]",
                         "loss_gap[Other-Female]", "loss_gap[Male-Other]", "loss_gap[Other-Male]"]
    two2 = CONSTRAINTS.get("loss_gap")(0.1, {"mode": "two_sided"}).bind(names[:2], counts[:2])
    assert two2.names == ["loss_gap[Female-Male]", "loss_gap[Male-Female]"]
    inter = CONSTRAINTS.get("intersectional")(0.0, {"min_group_fraction": 0.05}).bind(names, counts)
    assert inter.names == ["intersectional[Female]", "intersectional[Male]"]  # 5/100 is not > 5%
    assert CONSTRAINTS.get("intersectional")(0.0).config.loss == "hinge"
    empty = CONSTRAINTS.get("loss_gap")(0.1).bind(names, [10, 0, 3])  # a group absent from training
    assert empty.names == ["loss_gap[Female]", "loss_gap[Other]"]
    with pytest.raises(RuntimeError, match="bind"):
        CONSTRAINTS.get("loss_gap")(0.1).names
    with pytest.raises(Exception):
        CONSTRAINTS.get("intersectional")(0.0, {"mode": "two_sided"})


def test_intersectional_535_groups_vectorised_matches_brute_force():
    rng = np.random.default_rng(0)
    n, k = 20_000, 535
    sizes = np.full(k, 10)
    sizes[:40] = 300  # 40 groups hold 1.5% each, 495 hold 0.05%
    sizes[40] = n - sizes.sum() + sizes[40]
    group = rng.permutation(np.repeat(np.arange(k), sizes))
    y = rng.integers(0, 2, n)
    f = rng.normal(size=n)
    data = FairnessData.build(torch.tensor(y, dtype=torch.float32), torch.tensor(group), k)
    names = [f"G{i}" for i in range(k)]
    counts = np.bincount(group, minlength=k)

    all_groups = CONSTRAINTS.get("intersectional")(0.0, {"min_group_fraction": 0.0}).bind(names, counts)
    assert len(all_groups.names) == 535
    filtered = CONSTRAINTS.get("intersectional")(0.02).bind(names, counts)
    kept = np.flatnonzero(counts > 0.01 * n)
    assert len(filtered.names) == kept.size == 41
    assert filtered.names == [f"intersectional[G{g}]" for g in kept]

    hinge = np.maximum(0, 1 - (2 * y - 1) * f)
    brute = np.array([hinge[group == g].mean() - hinge.mean() for g in range(k)])
    got_all = all_groups.surrogate(torch.tensor(f), data).numpy()
    np.testing.assert_allclose(got_all, brute, atol=1e-10)
    np.testing.assert_allclose(filtered.surrogate(torch.tensor(f), data).numpy(), brute[kept] - 0.02, atol=1e-10)


def test_minibatch_keeps_rows_and_missing_group_is_zero():
    f, y, group, data = _data(n=90, k=3, seed=6)
    fam = _family("loss_gap", group, 3, 0.0, mode="two_sided")
    keep = torch.tensor(np.flatnonzero(group != 2))  # a batch without group 2
    sub = FairnessData.build(data.y[keep], torch.tensor(group)[keep], 3)
    out = fam.surrogate(torch.tensor(f)[keep], sub)
    assert out.shape == (6,) and torch.isfinite(out).all()
    assert (out[2:] == 0).all()  # every pair involving g2


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(1)
    n = 500
    sex = rng.choice(["F", "M"], n, p=[0.4, 0.6])
    race = rng.choice(["A", "B", "C"], n, p=[0.6, 0.3, 0.1])
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    logit = 1.5 * x1 - x2 + 0.8 * (sex == "M") - 0.5 * (race == "C")
    label = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return pd.DataFrame({"x1": x1, "x2": x2, "sex": sex, "race": race, "label": label})


RUN_CASES = [
    {"type": "equal_opportunity", "tolerance": 0.05},
    {"type": "loss_gap", "tolerance": 0.05},
    {"type": "loss_gap", "tolerance": 0.05, "mode": "two_sided", "loss": "hinge"},
    {"type": "intersectional", "tolerance": 0.05, "min_group_fraction": 0.05},
    {"type": "minority_rate", "tolerance": 0.0, "c": 0.3},
]


@pytest.mark.parametrize("constraint", RUN_CASES, ids=lambda c: f"{c['type']}-{len(c)}")
def test_run_end_to_end_with_new_families(table, constraint):
    spec = ProblemSpec(target="label", positive_label=1, sensitive=["sex", "race"], features=["x1", "x2"],
                       constraints=[ConstraintSpec(**constraint)], solver=SolverSpec(name="penalty"),
                       objective="truncated_logistic" if constraint["type"] == "minority_rate" else "logistic",
                       model={"type": "linear", "ball": "l1", "radius": 5.0}, max_iterations=30, device="cpu")
    out = run(table, spec)
    assert out.status == "completed" and out.iterations >= 30  # more when the exact enforcement continued
    json.dumps(out.metrics)
    assert len(out.constraint_names) == len(out.tolerances) >= 1
    assert all(name.startswith(constraint["type"]) for name in out.constraint_names)
    for split in out.metrics.values():
        for key in ("equal_opportunity", "loss_gap", "loss_gap_by_group", "minority_rate", "minority_rate_by_group"):
            assert key in split
    if constraint["type"] == "intersectional":
        assert "intersectional" in out.metrics["train"]
        assert len(out.metrics["train"]["intersectional_by_group"]) == len(out.constraint_names)
    if constraint["type"] == "minority_rate":
        assert out.constraint_names == [f"minority_rate[{out.metrics['train']['minority_rate_group']}]"]

"""group_thresholds: the threshold LP / MIP against brute force on small problems, more than two groups (and
intersections, range rules) read back from the features, and the saved model's safetensors round trip."""
import concurrent.futures
import itertools
import math

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file, save_file

from solvers import Problem, ProblemSpec, run, solve
from solvers.models.thresholded import restore_model
from solvers.algorithms.group_thresholds import DECISIVE_Z, GroupReadError, group_reader
from solvers.models.thresholded import ThresholdNet
from solvers.constraints import CONSTRAINTS
from solvers.fairness.threshold_lp import FAMILY_RATES, expected_predictions, roc_points, solve_thresholds
from solvers.fairness.threshold_margin import SHARE_LIMIT
from solvers.metrics.classification import group_fairness

FAMILIES = [[("demographic_parity", 0.05)], [("equal_opportunity", 0.05)], [("equalized_odds", 0.1)],
            [("demographic_parity", 0.1), ("equalized_odds", 0.15)]]


def _small(n_groups, seed, levels=3, n=60):
    rng = np.random.default_rng(seed)
    group = rng.integers(0, n_groups, n)
    y = (rng.random(n) < 0.3 + 0.1 * group).astype(int)
    s = rng.integers(0, levels, n) + y + 0.5 * group            # few distinct scores per group: many ties
    return s.astype(float), y, group


def _value(pred, y, group, n_groups, families, objective):
    """(objective, feasible) of hard (or expected) predictions of one rule, from solvers.metrics.classification' definitions."""
    if objective == "accuracy":
        obj = float(np.mean(pred * y + (1 - pred) * (1 - y)))
    else:
        obj = 0.5 * (pred[y == 1].mean() + 1 - pred[y == 0].mean())
    if np.all((pred == 0) | (pred == 1)):
        rates = group_fairness(y, pred.astype(int), group, [str(g) for g in range(n_groups)])
        gaps = [rates[name] or 0.0 for name, _ in families]
    else:   # expected rates of a randomised rule
        gaps = [_expected_gap(pred, y, group, n_groups, name) for name, _ in families]
    return obj, all(g <= eps + 1e-9 for g, (_, eps) in zip(gaps, families))


def _expected_gap(p, y, group, n_groups, name):
    out = 0.0
    for rate in FAMILY_RATES[name]:
        rows = {"sr": np.ones_like(y, bool), "tpr": y == 1, "fpr": y == 0}[rate]
        counts = np.bincount(group[rows], minlength=n_groups)
        r = np.bincount(group[rows], weights=p[rows], minlength=n_groups)[counts > 0] / counts[counts > 0]
        out = max(out, float(r.max() - r.min()) if r.size else 0.0)
    return out


def _brute_force(s, y, group, n_groups, families, objective, q=None):
    """Best objective over every rule that picks, in each group, one threshold (q None: each distinct score
    and above all) or a mixture of them with weights on the grid 1/q: all combinations of the groups' options,
    enumerated by broadcasting (axis g = group g's options), rates counted from the rows."""
    P, N = np.bincount(group, weights=y, minlength=n_groups), np.bincount(group, weights=1 - y, minlength=n_groups)
    tp, fp = [], []
    for g in range(n_groups):
        t = np.concatenate([np.unique(s[group == g]), [np.inf]]) - 1e-9
        hits = s[group == g][:, None] > t[None, :]                              # (n_g, T)
        mix = np.eye(len(t)) if q is None else np.asarray(
            [c for c in itertools.product(range(q + 1), repeat=len(t)) if sum(c) == q], float) / q
        shape = [1] * n_groups
        shape[g] = len(mix)
        tp.append((mix @ (hits & (y[group == g] == 1)[:, None]).sum(0)).reshape(shape))
        fp.append((mix @ (hits & (y[group == g] == 0)[:, None]).sum(0)).reshape(shape))
    tp, fp = np.stack(np.broadcast_arrays(*tp), -1), np.stack(np.broadcast_arrays(*fp), -1)   # (..., K)
    if objective == "accuracy":
        obj = (tp + N - fp).sum(-1) / len(y)
    else:
        obj = 0.5 * (tp.sum(-1) / P.sum() + 1 - fp.sum(-1) / N.sum())
    rates = {"sr": ((tp + fp) / np.maximum(P + N, 1), P + N > 0), "tpr": (tp / np.maximum(P, 1), P > 0),
             "fpr": (fp / np.maximum(N, 1), N > 0)}
    ok = np.ones(obj.shape, bool)
    for name, eps in families:
        for r in FAMILY_RATES[name]:
            v, defined = rates[r]
            ok &= v[..., defined].max(-1) - v[..., defined].min(-1) <= eps + 1e-9
    return float(obj[ok].max())


@pytest.mark.parametrize("n_groups,seed", [(2, 0), (3, 1), (4, 2)])
@pytest.mark.parametrize("families", FAMILIES)
@pytest.mark.parametrize("objective", ["accuracy", "balanced_accuracy"])
def test_deterministic_optimum_is_the_brute_force_one(n_groups, seed, families, objective):
    s, y, group = _small(n_groups, seed, levels=3 if n_groups < 4 else 2)
    sol = solve_thresholds(s, y, group, n_groups, families, objective, randomized=False)
    best = _brute_force(s, y, group, n_groups, families, objective)
    assert sol.status == "optimal" and sol.objective == pytest.approx(best, abs=1e-9)
    assert (sol.weights.max(1) == 1).all()                                  # one threshold per group
    pred = expected_predictions(s, group, sol)
    obj, ok = _value(pred, y, group, n_groups, families, objective)         # the rule does what it says
    assert ok and obj == pytest.approx(sol.objective, abs=1e-9)


@pytest.mark.parametrize("family", ["demographic_parity", "equal_opportunity"])
@pytest.mark.parametrize("seed", [8, 9])
def test_the_band_sweep_is_the_brute_force_optimum_on_many_thresholds(family, seed):
    s, y, group = _small(3, seed, levels=10, n=400)                          # ~12 thresholds per group
    for eps in (0.0, 0.02, 0.1):
        fam = [(family, eps)]
        sol = solve_thresholds(s, y, group, 3, fam, "accuracy", randomized=False)
        assert sol.objective == pytest.approx(_brute_force(s, y, group, 3, fam, "accuracy"), abs=1e-12)


@pytest.mark.parametrize("families", [FAMILIES[2], FAMILIES[3], [("equal_opportunity", 0.03), ("demographic_parity", 0.1)]])
@pytest.mark.parametrize("seed", [10, 11])
def test_the_pair_sweep_is_the_brute_force_and_the_mip_optimum_for_two_groups(families, seed, monkeypatch):
    """Two groups under several rate bands: the exact sweep (pair_sweep) against brute force over every pair of
    thresholds and against the MIP it replaces, on ~12 thresholds a group, at tolerances from 0."""
    import solvers.fairness.threshold_lp as lp

    s, y, group = _small(2, seed, levels=10, n=400)
    for scale in (0.0, 0.3, 1.0):
        fam = [(name, eps * scale) for name, eps in families]
        sol = solve_thresholds(s, y, group, 2, fam, "accuracy", randomized=False)
        assert sol.objective == pytest.approx(_brute_force(s, y, group, 2, fam, "accuracy"), abs=1e-12)
        obj, ok = _value(expected_predictions(s, group, sol), y, group, 2, fam, "accuracy")
        assert ok and obj == pytest.approx(sol.objective, abs=1e-12) and (sol.weights.max(1) == 1).all()
        with monkeypatch.context() as m:
            m.setattr(lp, "_two_groups", lambda points: False)          # the MIP on the same problem
            m.setattr(lp, "WINDOW_BANDS", 0)
            mip = solve_thresholds(s, y, group, 2, fam, "accuracy", randomized=False)
        assert mip.status == "optimal" and sol.objective == pytest.approx(mip.objective, abs=1e-9)


@pytest.mark.parametrize("families", [FAMILIES[2], [("equal_opportunity", 0.03), ("demographic_parity", 0.1)]])
@pytest.mark.parametrize("n_groups,seed", [(3, 12), (4, 13)])
def test_the_window_sweep_is_the_brute_force_and_the_mip_optimum_for_two_bands(families, n_groups, seed,
                                                                              monkeypatch):
    """Three or four groups under two rate bands: the exact sweep over both bands' lower ends (window_sweep)
    against brute force over every combination of thresholds and against the MIP it replaces."""
    import solvers.fairness.threshold_lp as lp

    s, y, group = _small(n_groups, seed, levels=6 if n_groups == 3 else 4, n=300)
    for scale in (0.0, 0.3, 1.0):
        fam = [(name, eps * scale) for name, eps in families]
        sol = solve_thresholds(s, y, group, n_groups, fam, "accuracy", randomized=False)
        assert sol.objective == pytest.approx(_brute_force(s, y, group, n_groups, fam, "accuracy"), abs=1e-12)
        obj, ok = _value(expected_predictions(s, group, sol), y, group, n_groups, fam, "accuracy")
        assert ok and obj == pytest.approx(sol.objective, abs=1e-12) and (sol.weights.max(1) == 1).all()
        with monkeypatch.context() as m:
            m.setattr(lp, "WINDOW_BLOCK", 5)                          # candidates in blocks of a few: the same rule
            blocked = solve_thresholds(s, y, group, n_groups, fam, "accuracy", randomized=False)
        np.testing.assert_array_equal(blocked.thresholds, sol.thresholds)
        with monkeypatch.context() as m:
            m.setattr(lp, "WINDOW_BANDS", 0)                          # the MIP on the same problem
            mip = solve_thresholds(s, y, group, n_groups, fam, "accuracy", randomized=False)
        assert mip.status == "optimal" and sol.objective == pytest.approx(mip.objective, abs=1e-9)


@pytest.mark.parametrize("n_groups,seed", [(2, 3), (3, 4)])
@pytest.mark.parametrize("families", FAMILIES[:3])
def test_randomised_optimum_bounds_every_mixture_and_is_feasible(n_groups, seed, families):
    s, y, group = _small(n_groups, seed, levels=2 if n_groups == 3 else 3)
    sol = solve_thresholds(s, y, group, n_groups, families, "accuracy", randomized=True)
    pred = expected_predictions(s, group, sol)
    obj, ok = _value(pred, y, group, n_groups, families, "accuracy")
    assert ok and obj == pytest.approx(sol.objective, abs=1e-9)             # feasible, value as reported
    grid = _brute_force(s, y, group, n_groups, families, "accuracy", q=8 if n_groups == 2 else 5)
    deterministic = _brute_force(s, y, group, n_groups, families, "accuracy")
    assert sol.objective >= grid - 1e-9 and sol.objective >= deterministic - 1e-9   # no mixture does better
    assert sol.objective - grid <= 0.05                                     # and the grid comes close


def test_randomisation_beats_every_deterministic_rule_when_rates_cannot_match():
    # group 0's scores allow selection rates {0, 1/2, 1}, group 1's {0, 1/3, 2/3, 1}: with ε = 0.05 only a
    # mixture reaches a common rate other than 0 or 1
    s = np.array([2.0, 2.0, 0.0, 0.0, 3.0, 1.0, 0.0])
    y = np.array([1, 1, 0, 0, 1, 1, 0])
    group = np.array([0, 0, 0, 0, 1, 1, 1])
    fam = [("demographic_parity", 0.05)]
    lp = solve_thresholds(s, y, group, 2, fam, randomized=True)
    mip = solve_thresholds(s, y, group, 2, fam, randomized=False)
    assert lp.objective > mip.objective + 0.05
    assert mip.objective == pytest.approx(_brute_force(s, y, group, 2, fam, "accuracy"))


def test_roc_points_are_the_counts_of_each_threshold():
    s, y, group = _small(3, 7, levels=4, n=200)
    pts = roc_points(s, y, group, 3, hull=False)
    pred = s[None, :] > pts.threshold[:, None]                              # (points, rows)
    own = group[None, :] == pts.group[:, None]
    np.testing.assert_array_equal(pts.tp, (pred & own & (y == 1)).sum(1))
    np.testing.assert_array_equal(pts.fp, (pred & own & (y == 0)).sum(1))
    line = roc_points(np.array([3.0, 2.0, 1.0, 0.0]), np.array([1, 1, 0, 0]), np.zeros(4, int), 1)
    assert list(zip(line.fp, line.tp)) == [(0, 0), (0, 2), (2, 2)]           # points inside a segment dropped


@pytest.mark.parametrize("seed", range(6))
def test_the_randomised_lp_keeps_each_groups_convex_hull_and_the_same_optimum(seed, monkeypatch):
    """The kept points are Qhull's hull vertices of every group, and the LP over every ROC point has the same
    optimum (a point inside the hull is a mixture of its vertices)."""
    from scipy.spatial import ConvexHull

    import solvers.fairness.threshold_lp as lp

    rng = np.random.default_rng(seed)
    n, K = int(rng.integers(300, 4000)), int(rng.integers(2, 5))
    g = rng.integers(0, K, n)
    y = (rng.random(n) < rng.uniform(0.1, 0.6, K)[g]).astype(int)
    s = np.round(rng.normal(size=n) + y * rng.uniform(-0.5, 2.0, K)[g], int(rng.integers(1, 4)))
    every = roc_points(s, y, g, K, hull=False)
    hull = roc_points(s, y, g, K)
    for k in range(K):
        pts = np.column_stack([every.fp[every.group == k], every.tp[every.group == k]]).astype(float)
        vertices = {tuple(v) for v in pts[ConvexHull(pts).vertices]}
        assert {(f, t) for f, t in zip(hull.fp[hull.group == k], hull.tp[hull.group == k])} == vertices
    assert len(hull.group) < len(every.group) / 3
    families = [("equalized_odds", 0.03), ("demographic_parity", 0.05)][: 1 + seed % 2]
    fast = solve_thresholds(s, y, g, K, families)
    monkeypatch.setattr(lp, "hull_vertices", lambda p: np.ones(len(p.group), dtype=bool))
    slow = solve_thresholds(s, y, g, K, families)
    assert fast.objective == pytest.approx(slow.objective, abs=1e-9)
    assert fast.n_points < slow.n_points


def _table(n=1600, seed=0):
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], n)
    race = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    age = rng.integers(18, 80, n)
    x = rng.normal(size=n)
    logit = x + 1.2 * (sex == "M") + 0.6 * (race == "a") + 0.02 * (age - 45)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    return pd.DataFrame({"x": x, "age": age, "sex": sex, "race": race, "y": y})


@pytest.mark.parametrize("sensitive,rules", [
    (["sex", "race"], {}),
    (["age"], {"age": {"ranges": {"young": [None, 30], "old": [60, None]}, "other": "middle"}}),
    (["age", "sex"], {"age": {"ranges": {"25-60": [25, 61]}, "other": "other"}}),   # "other" on both sides
])
def test_groups_are_read_from_the_features_on_new_rows(sensitive, rules):
    table = _table()
    spec = ProblemSpec(target="y", positive_label="yes", sensitive=sensitive, group_rules=rules,
                       constraints=[{"type": "demographic_parity", "tolerance": 0.05}],
                       solver={"name": "group_thresholds"}, split={"test": 0.25, "validation": 0.25, "seed": 0},
                       max_iterations=100)
    from solvers.pipeline import prepare

    data = prepare(table, spec)
    train = data.splits["train"]
    K = len(data.group_names)
    reader = group_reader(data.X[train], data.group[train], K)
    net = ThresholdNet(torch.nn.Linear(data.X.shape[1], 1), *reader, np.zeros((K, 1)), np.ones((K, 1)),
                       np.zeros(data.X.shape[1]))
    test = data.splits["test"]
    got = net.group_of(torch.as_tensor(data.X[test])).numpy()
    np.testing.assert_array_equal(got, data.group[test])


def test_group_reader_refuses_features_without_the_groups():
    rng = np.random.default_rng(0)
    with pytest.raises(GroupReadError, match="sensitive columns"):
        group_reader(rng.normal(size=(100, 3)), rng.integers(0, 2, 100), 2)


def test_job_keeps_the_constraint_on_validation_with_many_groups_and_restores(tmp_path):
    table = _table(2000, 1)
    spec = ProblemSpec(target="y", positive_label="yes", sensitive=["sex", "race"],
                       constraints=[{"type": "equalized_odds", "tolerance": 0.1}],
                       solver={"name": "group_thresholds"},
                       split={"test": 0.2, "validation": 0.3, "seed": 0}, max_iterations=100)
    out = run(table, spec)
    assert len(out.groups) == 6
    report = out.enforcement
    assert report["method"] == "group_thresholds" and report["status"] == "optimal" and report["randomized"]
    assert report["gaps"]["equalized_odds"] <= 0.1                          # the LP's expected rates
    val = out.metrics["validation"]                                         # the realised (drawn) rule
    assert val["accuracy"] == pytest.approx(report["realised_accuracy"], abs=1e-12)
    assert val["equalized_odds"] == pytest.approx(report["realised_gaps"]["equalized_odds"], abs=1e-12)
    path = tmp_path / "model.safetensors"
    save_file(out.state_dict, str(path))
    state = load_file(str(path))
    from solvers.pipeline import prepare
    from solvers.models.factory import model_factory

    data = prepare(table, spec)
    model = restore_model(model_factory(spec.model)(data.X.shape[1]), state)
    assert isinstance(model.net, ThresholdNet)
    with torch.no_grad():
        scores = model(torch.as_tensor(data.X[data.splits["test"]])).double().numpy()
    np.testing.assert_allclose(1 / (1 + np.exp(-scores)), out.predictions["score"].to_numpy(), rtol=1e-6)


def test_gbdt_base_is_boosted_then_wrapped_whole_and_restores(tmp_path):
    table = _table(1500, 2)
    spec = ProblemSpec(target="y", positive_label="yes", sensitive=["sex"],
                       model={"type": "gbdt", "n_estimators": 20, "num_leaves": 7, "min_child_samples": 10},
                       constraints=[{"type": "demographic_parity", "tolerance": 0.05}],
                       solver={"name": "group_thresholds"}, split={"test": 0.2, "validation": 0.3, "seed": 0},
                       max_iterations=20)
    out = run(table, spec)
    assert out.iterations == 20 and not out.enforcement["randomized"]             # the default for DP
    assert out.metrics["validation"]["demographic_parity"] <= 0.05                 # exact, no draw
    assert any(k.startswith("base.") for k in out.state_dict) and "thresholds" in out.state_dict
    path = tmp_path / "model.safetensors"
    save_file(out.state_dict, str(path))
    from solvers.pipeline import prepare
    from solvers.models.factory import model_factory

    data = prepare(table, spec)
    model = restore_model(model_factory(spec.model)(data.X.shape[1]), load_file(str(path)))
    assert isinstance(model, ThresholdNet)
    with torch.no_grad():
        scores = model(torch.as_tensor(data.X[data.splits["test"]])).double().numpy()
    np.testing.assert_allclose(1 / (1 + np.exp(-scores)), out.predictions["score"].to_numpy(), rtol=1e-6)


def test_randomised_rule_is_reproducible_and_warm_starts_from_its_base():
    rng = np.random.default_rng(5)
    n = 1500
    g = rng.integers(0, 2, n)
    X = np.column_stack([rng.normal(size=(n, 2)) + 0.7 * g[:, None], g == 1, g == 0]).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=n) > 0.6).astype(np.int64)
    kw = dict(group_names=["a", "b"], device="cpu")
    problem = Problem(X=X[:1000], y=y[:1000], group=g[:1000],
                      constraints=[CONSTRAINTS.get("demographic_parity")(0.01)], **kw)
    val = Problem(X=X[1000:], y=y[1000:], group=g[1000:], **kw)
    res = solve(problem, {"name": "group_thresholds", "params": {"randomized": True}}, max_iterations=100,
                validation=val)
    assert res.model.net.report["randomized"]
    with torch.no_grad():
        first, again = res.model(val.X), res.model(val.X)
    torch.testing.assert_close(first, again, rtol=0, atol=0)
    report = res.model.net.report
    assert report["gaps"]["demographic_parity"] <= 0.01
    again = solve(problem, "group_thresholds", max_iterations=10, validation=val, model=res.model)
    assert isinstance(again.model.net, ThresholdNet) and not isinstance(again.model.net.base, ThresholdNet)
    eo = Problem(X=X[:1000], y=y[:1000], group=g[:1000], constraints=[CONSTRAINTS.get("equalized_odds")(0.02)], **kw)
    assert solve(eo, "group_thresholds", max_iterations=5, validation=val).model.net.report["gaps"][
        "equalized_odds"] <= 0.02


def test_partial_dp_deterministic_optimum_is_the_brute_force_one():
    from solvers.metrics.partial import kept_mask, partial_dp

    s, y, group = _small(3, 11, levels=4, n=90)
    interval, eps, theta = [0.0, 0.5], 0.1, 0.0
    from solvers.metrics.percentile_intervals import Intervals

    kept = kept_mask(s, group, Intervals.build(interval, ["0", "1", "2"]))
    sol = solve_thresholds(s, y, group, 3, [("partial_demographic_parity", eps)], randomized=False, kept=kept,
                           theta=theta)
    options = [np.append(np.unique(s[group == g]) - 1e-9, s[group == g].max() + 1) for g in range(3)]
    best = -np.inf
    for thresholds in itertools.product(*options):     # the exact metric of each shifted score f − t_g
        shifted = s - np.asarray(thresholds)[group]
        if partial_dp(shifted, group, interval, theta, 3)["value"] <= eps:
            best = max(best, float(np.mean((shifted > 0) == (y == 1))))
    assert sol.objective == pytest.approx(best, abs=1e-12)
    with pytest.raises(ValueError, match="deterministic"):
        solve_thresholds(s, y, group, 3, [("partial_demographic_parity", eps)], randomized=True, kept=kept)
    with pytest.raises(ValueError, match="θ̂ = 0"):
        solve_thresholds(s, y, group, 3, [("partial_demographic_parity", eps)], randomized=False, kept=kept,
                         theta=0.5)


def test_unsupported_constraint_is_refused_by_the_spec():
    from solvers.data.spec import SpecError, check_solver_supports

    spec = ProblemSpec(target="y", positive_label="yes", sensitive=["sex"],
                       constraints=[{"type": "partial_statistical_parity", "tolerance": 0.05,
                                     "interval": [0.0, 0.5]}], solver={"name": "group_thresholds"})
    with pytest.raises(SpecError, match="group_thresholds") as err:
        check_solver_supports(spec)
    assert err.value.loc == ("constraints", 0, "type")


def test_a_randomised_base_wrapped_whole_restores_from_its_state():
    """A model without a ``net`` (the reductions' randomised classifier, as gbdt) is wrapped whole; its saved
    state (``base.mix``, ... and the rule's buffers) rebuilds both through ``restore_model``."""
    from solvers.models.factory import linear
    from solvers.models.randomized import RandomizedModel

    d, rng = 3, np.random.default_rng(0)
    base = RandomizedModel(d, weight=torch.as_tensor(rng.normal(size=(2, d))), bias=torch.zeros(2),
                           mix=torch.tensor([0.3, 0.7]))
    net = ThresholdNet(base, [0], [1e6], [[0.0], [1.0]], [[0.0], [1.0]], [0, 1], [[0.1], [-0.2]], [[1.0], [1.0]],
                       np.zeros(d))
    X = torch.as_tensor(np.column_stack([rng.integers(0, 2, 50), rng.normal(size=(50, 2))]), dtype=torch.float32)
    restored = restore_model(linear(d), {k: v.clone() for k, v in net.state_dict().items()})
    assert isinstance(restored, ThresholdNet) and isinstance(restored.base, RandomizedModel)
    with torch.no_grad():
        torch.testing.assert_close(restored(X), net(X), rtol=0, atol=0)


def test_gbdt_base_is_cross_fitted_on_request_with_a_margin_by_default_and_linear_refuses_cross_fitting():
    """``cross_fit: 5`` on a gbdt base the job trains: thresholds on the out-of-fold scores of every train and
    validation row, base refitted on them, chosen at ε' = ε(1 − share) ≤ ε by the margin (on by default); the
    out-of-fold rule meets ε' on those rows. The default is the validation split alone. cross_fit on a linear
    base, or 1 fold, is refused."""
    table = _table(1500, 2)
    fields = dict(target="y", positive_label="yes", sensitive=["sex"],
                  constraints=[{"type": "demographic_parity", "tolerance": 0.05}],
                  split={"test": 0.2, "validation": 0.3, "seed": 0}, max_iterations=20)
    gbdt = {"type": "gbdt", "n_estimators": 20, "num_leaves": 7, "min_child_samples": 10}
    default = run(table, ProblemSpec(**fields, model=gbdt, solver={"name": "group_thresholds"}))
    assert default.enforcement["cross_fit"] is None and default.enforcement["margin"]["delta"] == 0.1
    out = run(table, ProblemSpec(**fields, model=gbdt, solver={"name": "group_thresholds",
                                                               "params": {"cross_fit": 5}}))
    report = out.enforcement
    assert report["cross_fit"] == {"folds": 5, "model": "refit"}
    margin = report["margin"]
    assert margin["delta"] == 0.1 and margin["about"] == "population" and margin["unseen_rows"] is None
    assert 0.0 <= margin["share"] <= SHARE_LIMIT
    assert margin["tolerances"]["demographic_parity"] == pytest.approx(0.05 * (1 - margin["share"]))
    assert report["gaps"]["demographic_parity"] <= margin["tolerances"]["demographic_parity"] + 1e-9
    plain = run(table, ProblemSpec(**fields, model=gbdt, solver={"name": "group_thresholds", "params": {
        "cross_fit": 0, "margin_delta": None}}))
    assert plain.enforcement["cross_fit"] is None and plain.enforcement["margin"] is None
    from solvers.data.spec import SpecError

    with pytest.raises(SpecError, match="cross_fit applies to a gbdt base") as refused:
        run(table, ProblemSpec(**fields, solver={"name": "group_thresholds", "params": {"cross_fit": 5}}))
    assert refused.value.loc == ("solver", "params", "cross_fit")
    with pytest.raises(ValueError, match="cross_fit"):
        ProblemSpec(**fields, model=gbdt, solver={"name": "group_thresholds", "params": {"cross_fit": 1}})


def test_the_tuned_base_replaces_only_the_hyper_parameters_left_at_their_defaults():
    """``base_model: "tuned"`` (the default) boosts solvers.models.gbdt.threshold_base.TUNED where the model spec holds
    LightGBM's defaults, and keeps whatever the spec sets; ``"spec"`` boosts the spec as it is; a linear base is
    untouched. The trees tell: their count and their most leaves."""
    from solvers.models.gbdt.threshold_base import TUNED, tuned_spec
    from solvers.data.spec import ModelSpec

    spec, replaced = tuned_spec(ModelSpec(type="gbdt", num_leaves=7))
    assert replaced == {k: v for k, v in TUNED.items() if k != "num_leaves"} and spec.num_leaves == 7
    assert all(getattr(spec, k) == v for k, v in replaced.items())
    own = ModelSpec(type="gbdt", **{k: v + 1 if k != "colsample_bytree" else 0.9 for k, v in TUNED.items()})
    assert tuned_spec(own) == (own, {})

    table = _table(1500, 2)
    fields = dict(target="y", positive_label="yes", sensitive=["sex"], model={"type": "gbdt", "min_child_samples": 10},
                  constraints=[{"type": "demographic_parity", "tolerance": 0.05}],
                  split={"test": 0.2, "validation": 0.3, "seed": 0}, max_iterations=1000)

    def trees(out):
        import lightgbm

        text = bytes(out.state_dict["base.booster"].numpy()).decode()
        dump = lightgbm.Booster(model_str=text).dump_model()["tree_info"]
        return len(dump), max(t["num_leaves"] for t in dump)

    tuned = run(table, ProblemSpec(**fields, solver={"name": "group_thresholds"}))
    assert tuned.enforcement["base_params"] == TUNED
    assert tuned.iterations == TUNED["n_estimators"] and trees(tuned)[0] == TUNED["n_estimators"]
    assert trees(tuned)[1] <= TUNED["num_leaves"]
    as_spec = run(table, ProblemSpec(**fields, solver={"name": "group_thresholds", "params": {"base_model": "spec"}}))
    assert as_spec.enforcement["base_params"] is None
    assert trees(as_spec)[0] == ModelSpec(type="gbdt").n_estimators and trees(as_spec)[1] > TUNED["num_leaves"]
    linear = run(table, ProblemSpec(**{**fields, "model": {"type": "linear"}, "max_iterations": 50},
                                    solver={"name": "group_thresholds"}))
    assert linear.enforcement["base_params"] is None


def test_cross_fitting_boosts_k_minus_1_fold_models_and_reuses_the_train_split_base_for_the_validation_fold(
        monkeypatch):
    """With a validation split, the validation rows are one fold: the base boosted on the train split is that fold's
    model, so ``cross_fit: 3`` boosts 2 fold models (each on the validation rows and the other train fold) and the
    refit, 3 ``lightgbm.train`` calls instead of 4, and the validation rows' out-of-fold scores are the base's."""
    import lightgbm as lgb

    import solvers.models.gbdt.cross_fit as cross_fit

    real, fits, scored = lgb.train, [], {}

    def counting(params, train_set, *args, **kwargs):
        booster = real(params, train_set, *args, **kwargs)
        fits.append(train_set.num_data())
        return booster

    class Recording(cross_fit.CrossFit):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            scored.update(fold=self.fold, starts=scored.get("starts", 0) + 1)

        def scores(self, known):
            scored.update(known=known)
            return super().scores(known)

    monkeypatch.setattr(lgb, "train", counting)
    monkeypatch.setattr(cross_fit, "CrossFit", Recording)
    table = _table(1500, 4)
    spec = ProblemSpec(target="y", positive_label="yes", sensitive=["sex"], max_iterations=20,
                       constraints=[{"type": "demographic_parity", "tolerance": 0.05}],
                       split={"test": 0.2, "validation": 0.3, "seed": 0},
                       model={"type": "gbdt", "n_estimators": 20, "num_leaves": 7, "min_child_samples": 10},
                       solver={"name": "group_thresholds", "params": {"cross_fit": 3, "base_model": "spec"}})
    out = run(table, spec)
    n_val = round(0.3 * 1500)
    n_fit = len(scored["fold"])
    n_train = n_fit - n_val
    assert out.enforcement["cross_fit"] == {"folds": 3, "model": "refit"}
    assert out.enforcement["split"] == "train+validation"
    assert (scored["fold"][n_train:] == 0).all() and set(scored["fold"][:n_train]) == {1, 2}
    assert list(scored["known"]) == [0] and len(scored["known"][0]) == n_fit - n_train
    assert scored["starts"] == 1   # started beside the base, at its rounds: never boosted twice
    train_folds = np.bincount(scored["fold"][:n_train])[1:]
    assert sorted(fits) == sorted([n_fit - train_folds[0], n_fit - train_folds[1], n_fit])   # 2 folds + refit
    # a randomised rule (equalized odds) stores the train split's model: the 2 fold models only, no refit
    fits.clear()
    odds = run(table, ProblemSpec.model_validate(
        {**spec.model_dump(exclude_unset=True), "constraints": [{"type": "equalized_odds", "tolerance": 0.1}]}))
    assert odds.enforcement["randomized"] and odds.enforcement["cross_fit"] == {"folds": 3, "model": "train"}
    assert sorted(fits) == sorted([n_fit - train_folds[0], n_fit - train_folds[1]])


@pytest.mark.parametrize("binned", [False, True])
def test_fold_models_and_refit_boosted_at_once_equal_one_after_the_other(monkeypatch, binned):
    """``FAIRSOLVE_GBDT_PARALLEL_FITS`` threads give the same out-of-fold scores and refit, bit for bit — also when
    the rows are binned once by the first fit's thread (``binned``) while the others wait for it."""
    from solvers.data.spec import ModelSpec
    from solvers.models.gbdt.cross_fit import cross_fit

    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 6))
    y = (X[:, 0] + rng.normal(size=3000) > 0).astype(float)
    g = (X[:, 1] > 0).astype(int)
    spec = ModelSpec(type="gbdt", n_estimators=30, num_leaves=15, min_child_samples=10)
    runs = {}
    for threads in ("1", "3"):
        monkeypatch.setenv("FAIRSOLVE_GBDT_PARALLEL_FITS", threads)
        scores, booster = cross_fit(X, y, g, spec, 30, 3, seed=0, with_refit=True, binned=binned)
        runs[threads] = (scores, booster.predict(X, raw_score=True))
    np.testing.assert_array_equal(runs["1"][0], runs["3"][0])
    np.testing.assert_array_equal(runs["1"][1], runs["3"][1])


def test_linear_thresholds_on_train_and_validation_rows_on_request_and_refused_for_gbdt():
    """``threshold_rows: train_validation`` fits a linear base's thresholds (and their population margin) on every
    train and validation row: the margin's rows are all of them, so it is narrower than on the validation split
    alone; a gbdt base the job trains is refused (its train scores are in sample)."""
    table = _table(3000, 5)
    fields = dict(target="y", positive_label="yes", sensitive=["sex"], max_iterations=200,
                  constraints=[{"type": "demographic_parity", "tolerance": 0.05}],
                  split={"test": 0.2, "validation": 0.3, "seed": 0})
    val = run(table, ProblemSpec(**fields, solver={"name": "group_thresholds"}))
    both = run(table, ProblemSpec(**fields, solver={"name": "group_thresholds",
                                                    "params": {"threshold_rows": "train_validation"}}))
    assert val.enforcement["split"] == "validation" and both.enforcement["split"] == "train+validation"
    assert both.enforcement["margin"]["met"] and val.enforcement["margin"]["met"]
    assert both.enforcement["margin"]["share"] < val.enforcement["margin"]["share"]
    gbdt = {"type": "gbdt", "n_estimators": 10, "num_leaves": 7}
    from solvers.data.spec import SpecError

    with pytest.raises(SpecError, match="threshold_rows") as refused:
        run(table, ProblemSpec(**fields, model=gbdt, solver={"name": "group_thresholds",
                                                             "params": {"threshold_rows": "train_validation"}}))
    assert refused.value.loc == ("solver", "params", "threshold_rows")


@pytest.mark.parametrize("max_iterations", [20, 12])
def test_cross_fitting_started_beside_the_base_gives_the_model_started_after_it(monkeypatch, max_iterations):
    """The fold models and the refit start with the base's boosting (at its ``n_estimators`` rounds): the job's
    model and decisions are bit for bit those of cross-fitting started once the base has ended; a base that ends
    with fewer trees (``max_iterations`` 12 < 20 rounds) has them boosted again at its count."""
    import solvers.models.gbdt.cross_fit as cross_fit
    from solvers.algorithms.group_thresholds import _Thresholded

    starts = []

    class Counting(cross_fit.CrossFit):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            starts.append(self.rounds)

    monkeypatch.setattr(cross_fit, "CrossFit", Counting)
    table = _table(1500, 4)
    spec = ProblemSpec(target="y", positive_label="yes", sensitive=["sex"], max_iterations=max_iterations,
                       constraints=[{"type": "demographic_parity", "tolerance": 0.05}],
                       split={"test": 0.2, "validation": 0.3, "seed": 0},
                       model={"type": "gbdt", "n_estimators": 20, "num_leaves": 7, "min_child_samples": 10},
                       solver={"name": "group_thresholds", "params": {"cross_fit": 3, "base_model": "spec"}})
    ahead = run(table, spec)
    assert starts == ([20] if max_iterations == 20 else [20, 12])
    real_start = _Thresholded.start

    def start_after(self, current):
        real_start(self, current)
        if self.ahead is not None:
            self.ahead.cancel()
            self.ahead = None

    monkeypatch.setattr(_Thresholded, "start", start_after)
    after = run(table, spec)
    for column in ("score", "prediction"):
        np.testing.assert_array_equal(ahead.predictions[column], after.predictions[column])
    assert bytes(ahead.state_dict["base.booster"].numpy()) == bytes(after.state_dict["base.booster"].numpy())


@pytest.mark.parametrize("randomized,families", [
    (False, [("demographic_parity", None)]), (False, [("equal_opportunity", None)]),
    (True, [("equalized_odds", None)]), (True, [("demographic_parity", None), ("equal_opportunity", None)])])
def test_solves_on_prepared_points_are_the_fresh_solves_at_every_tolerance(randomized, families):
    """The margin's bisection solves the same rows again and again: one ``prepare`` serves them all (the LP's
    matrices built once), with the same thresholds and weights as a solve from the rows each time."""
    from solvers.fairness.threshold_lp import prepare

    rng = np.random.default_rng(4)
    n, K = 3000, 3
    g = rng.integers(0, K, n)
    y = (rng.random(n) < 0.25 + 0.1 * g).astype(np.int64)
    s = rng.normal(size=n) + 1.2 * y + 0.3 * g
    prepared = prepare(s, y, g, K, "accuracy", randomized)
    for eps in (0.2, 0.08, 0.03, 0.01):
        asked = [(name, eps) for name, _ in families]
        fresh = solve_thresholds(s, y, g, K, asked, randomized=randomized)
        again = solve_thresholds(s, y, g, K, asked, randomized=randomized, prepared=prepared)
        assert np.array_equal(fresh.thresholds, again.thresholds) and np.array_equal(fresh.weights, again.weights)
        assert fresh.gaps == again.gaps
    if randomized:   # the programme's matrices were built once (one band structure), the tolerances moved b_ub only
        assert len(prepared._lp) == 1
        per_rate = [(name, (0.05, 0.02) if name == "equalized_odds" else 0.05) for name, _ in families]
        fresh = solve_thresholds(s, y, g, K, per_rate, randomized=True)
        again = solve_thresholds(s, y, g, K, per_rate, randomized=True, prepared=prepared)
        assert np.array_equal(fresh.weights, again.weights) and fresh.gaps == again.gaps
    with pytest.raises(ValueError, match="prepared"):
        solve_thresholds(s, y, g, K, asked, randomized=not randomized, prepared=prepared)


def test_row_codes_are_numpys_unique_rows_inverse():
    from solvers.algorithms.group_thresholds import _row_codes

    rng = np.random.default_rng(8)
    for _ in range(50):
        A = rng.integers(0, 3, size=(int(rng.integers(1, 400)), int(rng.integers(1, 6)))).astype(np.float32)
        A[rng.random(A.shape) < 0.05] = -0.0
        assert np.array_equal(_row_codes(A), np.unique(A, axis=0, return_inverse=True)[1].reshape(-1))
    assert _row_codes(np.zeros((5, 0))).tolist() == [0] * 5


def test_a_deterministic_rule_scores_without_the_draw(monkeypatch):
    """One threshold per group: J = 0 whatever u(x), so the forward pass skips the draw and scores as the general
    path (a second, zero-weight column) does."""
    base = torch.nn.Linear(3, 1)
    rows = torch.randn(50, 3)
    rows[:, 2] = (torch.rand(50) < 0.5).float()     # the group's indicator column
    reader = (np.array([2]), np.array([1e6]), np.array([[0.0], [1.0]]), np.array([[0.0], [1.0]]), np.array([0, 1]))

    class Flat(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = base

        def forward(self, x):
            return self.net(x).reshape(-1)

    one = ThresholdNet(Flat(), *reader, np.array([[0.3], [-0.2]]), np.ones((2, 1)), np.ones(3))
    two = ThresholdNet(Flat(), *reader, np.array([[0.3, 0.3], [-0.2, -0.2]]), np.ones((2, 2)), np.ones(3))
    expected = two(rows)
    monkeypatch.setattr(ThresholdNet, "draw", lambda self, x: (_ for _ in ()).throw(AssertionError("drawn")))
    assert torch.equal(one(rows), expected)


def _finite_population(n: int, seed: int) -> pd.DataFrame:
    """n rows: six normal features, a sex column, y ~ Bernoulli(σ(x0 + x1 / 2 + 0.3 [male])) (noisy labels)."""
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 6))
    sex = np.where(r.random(n) < 0.5, "f", "m")
    y = np.where(r.random(n) < 1 / (1 + np.exp(-(X[:, 0] + 0.5 * X[:, 1] + 0.3 * (sex == "m")))), "yes", "no")
    table = pd.DataFrame(X, columns=[f"x{i}" for i in range(6)])
    return table.assign(sex=sex, y=y)


@pytest.mark.parametrize("kind", ["demographic_parity", "equalized_odds"])
def test_select_stores_the_base_whose_out_of_fold_rule_is_the_more_accurate_on_the_population(kind):
    """``base_model: "select"``: where the population repeats the fitting rows (a bootstrap sample of a finite
    table of 3,000 rows with noisy labels), LightGBM's own capacity memorises them, its out-of-fold rule is the more
    accurate and it is stored — more accurate on the population than the tuned base's job; where the rows are fresh
    draws of a continuous population, the tuned base is (seeds where the out-of-fold gap is above 1 pp). The stored
    model is the chosen base's, with its trees: LightGBM's capacity refitted on all the fitting rows, for a
    randomised rule (equalized odds) too, where the tuned base stores its model of the train split."""
    import lightgbm

    from fairsolve.model import FairModel
    from solvers.data.encoding import TableEncoder
    from solvers.models.gbdt.threshold_base import CAPACITY, TUNED

    def job(sample, base_model):
        spec = ProblemSpec(target="y", positive_label="yes", sensitive=["sex"], model={"type": "gbdt"},
                           constraints=[{"type": kind, "tolerance": 0.05}], split={"test": 0.1, "validation": 0.3,
                                                                                  "seed": 0},
                           solver={"name": "group_thresholds", "params": {"cross_fit": 3, "base_model": base_model}})
        out = run(sample, spec)
        return out, FairModel.from_state(TableEncoder.from_dict(out.encoder), spec.model, out.state_dict)

    def accuracy(model, population):
        return float(((model.decision_function(population) > 0) == (population["y"] == "yes").to_numpy()).mean())

    def leaves(out):
        dump = lightgbm.Booster(model_str=bytes(out.state_dict["base.booster"].numpy()).decode()).dump_model()
        return len(dump["tree_info"]), max(t["num_leaves"] for t in dump["tree_info"])

    population = _finite_population(3000, 0)
    sample = population.iloc[np.random.default_rng(10).integers(0, 3000, 3000)].reset_index(drop=True)
    selected, selected_model = job(sample, "select")
    tuned, tuned_model = job(sample, "tuned")
    record = selected.enforcement["base_selection"]
    assert record["chosen"] == "capacity" and record["capacity"] > record["tuned"] + 0.01
    assert record["rows"] == "validation" and record["z"] <= -DECISIVE_Z   # decided on the validation fold
    assert selected.enforcement["base_params"] == CAPACITY
    assert tuned.enforcement["base_selection"] is None and tuned.enforcement["base_params"] == TUNED
    assert accuracy(selected_model, population) > accuracy(tuned_model, population) + 0.01
    assert leaves(selected) == (CAPACITY["n_estimators"], CAPACITY["num_leaves"])
    assert selected.enforcement["cross_fit"] == {"folds": 3, "model": "refit"}   # the refit, randomised rule too
    assert tuned.enforcement["cross_fit"]["model"] == ("refit" if kind == "demographic_parity" else "train")

    fresh = _finite_population(200_000, 0)
    out, _ = job(fresh.iloc[np.random.default_rng(10).choice(200_000, 3000, replace=False)].reset_index(drop=True),
                 "select")
    record = out.enforcement["base_selection"]
    assert record["chosen"] == "tuned" and record["tuned"] > record["capacity"]
    assert out.enforcement["base_params"] == TUNED and leaves(out)[1] <= TUNED["num_leaves"]
    # 900 validation rows could not tell the bases apart: both were cross-fitted and judged on every fitting row
    assert record["rows"] == "out_of_fold" and abs(record["validation"]["z"]) < DECISIVE_Z


def _bootstrap_select_job():
    """A bootstrap sample of a 3,000-row finite population (its rows repeat: LightGBM's capacity wins) and a
    ``select`` spec, DP ≤ 0.05."""
    population = _finite_population(3000, 0)
    sample = population.iloc[np.random.default_rng(10).integers(0, 3000, 3000)].reset_index(drop=True)
    spec = ProblemSpec(target="y", positive_label="yes", sensitive=["sex"], model={"type": "gbdt"},
                       constraints=[{"type": "demographic_parity", "tolerance": 0.05}],
                       split={"test": 0.1, "validation": 0.3, "seed": 0},
                       solver={"name": "group_thresholds", "params": {"cross_fit": 3, "base_model": "select"}})
    return sample, spec


def test_select_decided_on_the_validation_fold_stores_the_model_judging_every_row_would(monkeypatch):
    """Where the validation fold decides (the bootstrap sample above), the job stores the same model, bit for bit,
    as when both bases are cross-fitted and judged on every fitting row out of fold (both thresholds ∞): the chosen
    base's fold models, refit and rule do not depend on when the choice is made."""
    from solvers.algorithms import group_thresholds

    sample, spec = _bootstrap_select_job()
    early = run(sample, spec)
    monkeypatch.setattr(group_thresholds, "DECISIVE_Z", math.inf)
    monkeypatch.setattr(group_thresholds, "DECISIVE_Z_AHEAD", math.inf)
    late = run(sample, spec)
    assert early.enforcement["base_selection"]["rows"] == "validation"
    assert late.enforcement["base_selection"]["rows"] == "out_of_fold"
    assert early.enforcement["base_selection"]["chosen"] == late.enforcement["base_selection"]["chosen"]
    assert set(early.state_dict) == set(late.state_dict)
    for key, value in early.state_dict.items():
        assert torch.equal(value, late.state_dict[key]), key


def test_select_needs_less_evidence_for_the_base_it_cross_fitted_ahead(monkeypatch):
    """The validation fold decides at DECISIVE_Z_AHEAD for the base cross-fitted ahead of the choice and only at
    DECISIVE_Z for the other: on the bootstrap sample (rows repeat, so LightGBM's capacity goes ahead and wins),
    with DECISIVE_Z = ∞ the choice is still made on the validation fold; when the tuned base is made to go ahead
    instead (SPECULATE_SHARE above any share), the same verdict for capacity is not enough and every fitting row
    is judged."""
    from solvers.algorithms import group_thresholds

    sample, spec = _bootstrap_select_job()
    monkeypatch.setattr(group_thresholds, "DECISIVE_Z", math.inf)
    monkeypatch.setattr(group_thresholds, "DECISIVE_Z_AHEAD", 0.0)
    ahead = run(sample, spec).enforcement["base_selection"]
    assert ahead["rows"] == "validation" and ahead["chosen"] == "capacity"
    monkeypatch.setattr(group_thresholds, "SPECULATE_SHARE", 2.0)
    other = run(sample, spec).enforcement["base_selection"]
    assert other["rows"] == "out_of_fold" and other["validation"]["chosen"] == "capacity"
    assert other["chosen"] == "capacity"


@pytest.mark.parametrize("objective", ["accuracy", "balanced_accuracy"])
@pytest.mark.parametrize("family,randomized", [(("demographic_parity", 0.02), False), (("equalized_odds", 0.03), True)])
def test_row_objectives_average_to_the_rules_objective(objective, family, randomized):
    """The per-row expected objective the selection's paired z is computed from averages to the LP's objective on
    the same rows (deterministic and randomised rules, accuracy and balanced accuracy)."""
    from solvers.algorithms.group_thresholds import _row_objective

    rng = np.random.default_rng(0)
    g = rng.integers(0, 3, 3000)
    y = (rng.random(3000) < 0.3 + 0.1 * g).astype(float)
    s = rng.normal(size=3000) + y + 0.3 * g
    solution = solve_thresholds(s, y, g, 3, [family], objective, randomized, 10.0, None, 0.0)
    assert _row_objective(s, g, y, solution, objective).mean() == pytest.approx(solution.objective, abs=1e-12)


def test_select_needs_a_cross_fitted_gbdt_base():
    table = _table(600, 1)
    fields = dict(target="y", positive_label="yes", sensitive=["sex"],
                  constraints=[{"type": "demographic_parity", "tolerance": 0.05}])
    for model, params in (({"type": "gbdt"}, {"base_model": "select"}),
                          ({"type": "linear"}, {"base_model": "select", "threshold_rows": "train_validation"})):
        with pytest.raises(ValueError, match="base_model 'select'"):
            run(table, ProblemSpec(**fields, model=model, solver={"name": "group_thresholds", "params": params}))


def test_repeated_rows_fit_the_rule_to_the_refits_in_sample_scores_with_good_turings_share():
    """``repeats`` (deterministic thresholds over the stored refit): on a bootstrap sample of a finite table the
    report's ρ̂ is the share of the table the fitting rows hold (within 0.03), and the rule differs from the one
    fitted to out-of-fold scores alone; on fresh draws of a continuous population ρ̂ = 0 and the job is the same
    bit for bit; a randomised rule (equalized odds) leaves it off by default."""
    def job(sample, kind="demographic_parity", **params):
        spec = ProblemSpec(target="y", positive_label="yes", sensitive=["sex"], model={"type": "gbdt"},
                           constraints=[{"type": kind, "tolerance": 0.05}],
                           split={"test": 0.1, "validation": 0.3, "seed": 0},
                           solver={"name": "group_thresholds", "params": {"cross_fit": 3, "base_model": "spec",
                                                                         **params}})
        return run(sample, spec)

    population = _finite_population(3000, 0)
    idx = np.random.default_rng(10).integers(0, 3000, 3000)
    sample = population.iloc[idx].reset_index(drop=True)
    on, off = job(sample), job(sample, repeats=False)
    fitting = np.setdiff1d(np.arange(len(idx)), np.asarray(on.predictions["row"]))
    held = len(np.unique(idx[fitting])) / 3000
    assert on.enforcement["repeats"]["share"] == pytest.approx(held, abs=0.03)
    assert off.enforcement["repeats"] is None
    assert on.enforcement["thresholds"] != off.enforcement["thresholds"]

    fresh = _finite_population(200_000, 0).iloc[:3000]
    on, off = job(fresh), job(fresh, repeats=False)
    assert on.enforcement["repeats"] == {"share": 0.0}
    np.testing.assert_array_equal(on.predictions["score"], off.predictions["score"])
    assert job(sample, "equalized_odds").enforcement["repeats"] is None


def test_held_fits_wait_for_release_and_a_cancel_ends_them(monkeypatch):
    """``CrossFit(held=...)``: the held fold models and refit boost nothing until ``release`` (only fold 0's model is
    trained while the others are held), then give the same scores and refit as fits never held; cancelled while
    held, they end without training."""
    import lightgbm as lgb

    import solvers.models.gbdt.cross_fit as cross_fit
    from solvers.data.spec import ModelSpec

    real, fits = lgb.train, []

    def counting(params, train_set, *args, **kwargs):
        fits.append(train_set.num_data())
        return real(params, train_set, *args, **kwargs)

    monkeypatch.setattr(lgb, "train", counting)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(900, 4))
    y = (X[:, 0] + rng.normal(size=900) > 0).astype(float)
    g = (X[:, 1] > 0).astype(int)
    spec = ModelSpec(type="gbdt", n_estimators=10, num_leaves=7, min_child_samples=10)
    free = cross_fit.CrossFit(X, y, g, spec, 10, 3, 0, with_refit=True).result({})
    fits.clear()
    held = cross_fit.CrossFit(X, y, g, spec, 10, 3, 0, with_refit=True, held=(1, 2, None))
    first = held.fold_scores(0)
    assert len(fits) == 1   # fold 0's model only
    held.release()
    scores, refit, refit_scores = held.result({})
    np.testing.assert_array_equal(first, free[0][held.fold == 0])
    np.testing.assert_array_equal(scores, free[0])
    np.testing.assert_array_equal(refit_scores, free[2])
    assert len(fits) == 4
    fits.clear()
    stopped = cross_fit.CrossFit(X, y, g, spec, 10, 3, 0, with_refit=True, held=(1, 2, None))
    stopped.fold_scores(0)
    stopped.cancel()
    for j in (1, 2, None):
        future = stopped._futures[j]
        with pytest.raises((cross_fit.Abandoned, concurrent.futures.CancelledError)):
            future.result()
    assert len(fits) == 1


def _five_groups(n, seed=0):
    """Continuous scores of 5 groups: every score its own ROC point, a deterministic MIP that takes seconds."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 5, n)
    y = (rng.random(n) < 0.2 + 0.12 * g).astype(int)
    return rng.normal(size=n) + 1.5 * y + 0.3 * g, y, g


THREE_BANDS = [("demographic_parity", 0.03), ("equalized_odds", 0.03)]


def test_a_mip_out_of_time_keeps_a_feasible_rule_and_with_none_left_the_better_constant_rule():
    s, y, g = _five_groups(2000)
    solved = solve_thresholds(s, y, g, 5, THREE_BANDS, randomized=False, time_limit_s=60)
    assert solved.status == "optimal" and solved.mip_gap == 0.0
    for limit in (0.0, -1.0, 0.05):   # no time (no MIP at all), or less than HiGHS needs for a first point
        short = solve_thresholds(s, y, g, 5, THREE_BANDS, randomized=False, time_limit_s=limit)
        assert short.status == "time_limit"
        assert all(short.gaps[name] <= eps for name, eps in THREE_BANDS)
        assert short.objective <= solved.objective
        pred = expected_predictions(s, g, short)
        if short.mip_gap is None:   # the constant rule: everybody negative or everybody positive
            assert np.all(pred == pred[0])
            assert short.objective == pytest.approx(max(np.mean(y), 1 - np.mean(y)))


def test_a_deterministic_job_spends_no_more_than_its_time_limit_on_mip_solves_and_warns():
    """Three bands over five groups, ``randomized: false``: a MIP per solve, 57 of them in the margin's search.
    Each gets what is left of the job's time limit (not 60 s each); once it is spent the constant rule, and the
    job's warning says so."""
    import time

    from solvers.fairness.report import warnings_for

    s, y, g = _five_groups(6000, 1)
    X = np.column_stack([s, np.eye(5)[g]]).astype(np.float32)
    kw = dict(group_names=[str(k) for k in range(5)], device="cpu")
    constraints = [CONSTRAINTS.get(name)(eps) for name, eps in THREE_BANDS]
    problem = Problem(X=X[:3000], y=y[:3000], group=g[:3000], constraints=constraints, **kw)
    val = Problem(X=X[3000:], y=y[3000:], group=g[3000:], **kw)
    started = time.perf_counter()
    res = solve(problem, {"name": "group_thresholds", "params": {"randomized": False, "margin_delta": 0.1}},
                max_iterations=5, validation=val, time_limit_s=0.2)
    took = time.perf_counter() - started
    report = res.model.net.report
    assert took < 30   # one solve (60 s on its own, 16 s on 3,000 rows at the most) may straddle the deadline
    assert report["status"] == "time_limit" and not report["randomized"]
    warned = [w for w in warnings_for([], {}, report) if "ran out of the job's time limit" in w]
    assert len(warned) == 1 and ("constant rule" in warned[0]) == (report["mip_gap"] is None)

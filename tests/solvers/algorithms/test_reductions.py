"""The ``reductions`` solver: fairlearn's own result for the same estimator, the paper's guarantee on a small
problem, the randomised classifier's score convention, its storage without pickle, stopping mid-fit."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from fairlearn.reductions import EqualizedOdds, ExponentiatedGradient, GridSearch, TruePositiveRateParity
from safetensors.torch import load, save
from sklearn.linear_model import LogisticRegression

from solvers import ConstraintSpec, Problem, ProblemSpec, RecordingObserver, SpecError, check_spec_against_table, solve
from solvers.algorithms.auc_postprocess import restore_model
from solvers.algorithms.reductions import component, difference_bound
from solvers.models import linear
from solvers.observer import Observer
from solvers.randomized import CLIP, RandomizedModel
from bench.common.datagen import planted_table

TOL = 0.05


def three_groups(n: int = 900, seed: int = 0):
    """Three groups with different base rates (a planted disparity) and four features."""
    rng = np.random.default_rng(seed)
    group = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    X = rng.normal(size=(n, 4)).astype(np.float32)
    X[:, 3] = group == 0
    logit = 1.2 * X[:, 0] - 0.8 * X[:, 1] + 1.5 * (group == 0) - 1.0 * (group == 2)
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    return X, y, group


def problem_of(X, y, group, kind: str, tolerance: float = TOL) -> Problem:
    return Problem(X=X, y=y, group=group, group_names=["a", "b", "c"],
                   constraints=[ConstraintSpec(type=kind, tolerance=tolerance).build()], device="cpu")


def fairlearn_probability(fitted, X) -> np.ndarray:
    return fitted._pmf_predict(X)[:, 1]


def test_exponentiated_gradient_is_fairlearns_and_keeps_theorem_1():
    """Same weights, components and P(ŷ = 1 | x) as fairlearn's ExponentiatedGradient on the same
    LogisticRegression; Theorem 1 of Agarwal et al.: every moment constraint of Q̂ within c + (1 + 2ν)/B
    (ν the duality gap fairlearn reached, B = 1/eps) on the training rows."""
    X, y, group = three_groups()
    observer = RecordingObserver()
    result = solve(problem_of(X, y, group, "demographic_parity"),
                   {"name": "reductions", "params": {"decision": "majority"}}, observer, max_iterations=500)
    from fairlearn.reductions import DemographicParity
    theirs = ExponentiatedGradient(LogisticRegression(max_iter=1000), DemographicParity(difference_bound=TOL / 2),
                                   eps=TOL).fit(X, y, sensitive_features=group)   # three groups: c = ε/2
    assert result.status == "completed" and result.stop_reason is None
    net = result.model
    assert isinstance(net, RandomizedModel) and len(net.trees) == 0
    weights = theirs.weights_[theirs.weights_ > 0]
    np.testing.assert_allclose(net.mix.numpy(), weights.to_numpy(), rtol=0, atol=1e-12)
    coefs = np.stack([component(theirs.predictors_[i], 4)[1][0] for i in weights.index])
    np.testing.assert_allclose(net.linear.weight.numpy(), coefs, rtol=1e-12, atol=1e-12)
    p_ours = net.positive_probability(torch.as_tensor(X)).numpy()
    np.testing.assert_allclose(p_ours, fairlearn_probability(theirs, X), atol=1e-9)
    # one iteration per oracle call fitted by the estimator, and the last one is Q̂
    called = theirs.n_oracle_calls_ - theirs.n_oracle_calls_dummy_returned_
    assert len(observer.records) == result.iterations == called + 1
    assert all(len(r.duals["lambda"]) == 6 for r in observer.records[:-1]) and observer.records[-1].duals is None
    rates = np.array([p_ours[group == g].mean() for g in range(3)])
    violation = np.abs(rates - p_ours.mean()).max()
    assert violation <= TOL / 2 + (1 + 2 * theirs.best_gap_) * TOL + 1e-12
    # σ(f) is P(ŷ = 1 | x) (clipped) and the prediction 1{f > 0} the weighted majority 1{p > ½}
    with torch.no_grad():
        scores = result.model(torch.as_tensor(X)).double().numpy()
    np.testing.assert_allclose(1 / (1 + np.exp(-scores)), np.clip(p_ours, CLIP, 1 - CLIP), rtol=1e-5)
    np.testing.assert_array_equal(scores > 0, p_ours > 0.5)


def test_grid_search_is_fairlearns_with_equal_opportunity_and_equalized_odds():
    X, y, group = three_groups(seed=1)
    for kind, moment in (("equal_opportunity", TruePositiveRateParity), ("equalized_odds", EqualizedOdds)):
        result = solve(problem_of(X, y, group, kind), {"name": "reductions", "params": {"method": "grid_search",
                                                                                           "grid_size": 12}})
        theirs = GridSearch(LogisticRegression(max_iter=1000), moment(difference_bound=TOL / 2), grid_size=12).fit(
            X, y, sensitive_features=group)
        assert result.iterations == 12 + 1
        best = theirs.predictors_[theirs.best_idx_]
        np.testing.assert_array_equal(result.model.positive_probability(torch.as_tensor(X)).numpy(),
                                      best.predict(X).astype(np.float64))


def test_two_groups_bound_keeps_exactly_the_spread_tolerance():
    """With two groups, fairlearn's constraints max_a |μ_a − μ_*| ≤ c at c = difference_bound(ε) hold exactly
    when the spread |μ_a − μ_b| ≤ ε (for every pair of rates); with more groups c = ε/2 implies it."""
    rng = np.random.default_rng(0)
    group = rng.choice(2, size=1000, p=[0.7, 0.3])
    y = rng.integers(0, 2, 1000)
    c = difference_bound("demographic_parity", TOL, y, group)
    share = np.bincount(group) / len(group)
    rates = rng.random((10_000, 2))
    deviation = np.abs(rates - (rates @ share)[:, None]).max(1)
    spread = np.abs(rates[:, 0] - rates[:, 1])
    np.testing.assert_array_equal(deviation <= c + 1e-15, spread <= TOL + 1e-15)
    tpr = difference_bound("equal_opportunity", TOL, y, group)
    assert tpr == pytest.approx(TOL * np.bincount(group[y == 1]).max() / (y == 1).sum())
    odds = difference_bound("equalized_odds", TOL, y, group)
    assert odds == min(tpr, difference_bound("equal_opportunity", TOL, 1 - y, group))
    assert difference_bound("demographic_parity", TOL, y, rng.integers(0, 3, 1000)) == TOL / 2


def test_restore_rebuilds_the_randomised_classifier_from_safetensors():
    X, y, group = three_groups(seed=2)
    result = solve(problem_of(X, y, group, "demographic_parity"), "reductions")
    blob = save({k: v.contiguous() for k, v in result.model.state_dict().items()})
    reloaded = restore_model(linear(X.shape[1]), load(blob))
    x = torch.as_tensor(X)
    with torch.no_grad():
        torch.testing.assert_close(reloaded(x), result.model(x), rtol=0, atol=0)
    assert isinstance(reloaded, RandomizedModel) and reloaded.mix.shape == result.model.mix.shape


class StopAfter(Observer):
    def __init__(self, n: int) -> None:
        self.seen = 0
        self.n = n

    def on_iteration(self, record) -> None:
        self.seen += 1

    def should_stop(self):
        return "cancelled" if self.seen >= self.n else None


def test_a_stop_ends_fairlearns_fit_and_keeps_the_last_oracle_classifier():
    import threading

    X, y, group = three_groups(seed=3)
    before = {t for t in threading.enumerate() if t.name == "fairlearn-fit"}
    result = solve(problem_of(X, y, group, "demographic_parity"), "reductions", StopAfter(3))
    assert result.status == "stopped" and result.stop_reason == "cancelled" and result.iterations == 3
    assert result.model.mix.tolist() == [1.0]
    assert not [t for t in threading.enumerate() if t.name == "fairlearn-fit" and t not in before]


def test_the_spec_takes_one_supported_constraint():
    table = planted_table(300)
    base = dict(target="income", positive_label=">50K", sensitive=["sex"], solver={"name": "reductions"})
    with pytest.raises(SpecError) as err:
        check_spec_against_table(ProblemSpec(**base, constraints=[]), table)
    assert err.value.loc == ("constraints",)
    two = [{"type": "demographic_parity", "tolerance": 0.1}, {"type": "equal_opportunity", "tolerance": 0.1}]
    with pytest.raises(SpecError) as err:
        check_spec_against_table(ProblemSpec(**base, constraints=two), table)
    assert err.value.loc == ("constraints",)
    with pytest.raises(SpecError) as err:
        check_spec_against_table(ProblemSpec(**base, constraints=[{"type": "loss_gap", "tolerance": 0.1}]), table)
    assert err.value.loc == ("constraints", 0, "type")
    with pytest.raises(ValueError, match="batch_size"):
        ProblemSpec(**{**base, "solver": {"name": "reductions", "params": {"batch_size": 64}}})


def test_gbdt_components_are_fairlearns_lightgbm_and_round_trip_as_lightgbm_text():
    """Over the gbdt model type the oracle is LGBMClassifier with the model spec's hyper-parameters: the same
    P(ŷ = 1 | x) as fairlearn's ExponentiatedGradient over that classifier; the stored Q (LightGBM's text per
    tree component, no pickle) reloads through restore_model into the same scores."""
    from lightgbm import LGBMClassifier

    from solvers import ModelSpec
    from solvers.gbdt import lightgbm_params
    from solvers.models import model_factory

    X, y, group = three_groups(n=600, seed=4)
    spec = ModelSpec(type="gbdt", n_estimators=15, num_leaves=7)
    problem = Problem(X=X, y=y, group=group, group_names=["a", "b", "c"], model_factory=model_factory(spec),
                      model_type="gbdt", constraints=[ConstraintSpec(type="demographic_parity", tolerance=TOL).build()],
                      device="cpu")
    result = solve(problem, {"name": "reductions", "params": {"max_iter": 8}}, seed=3)
    from fairlearn.reductions import DemographicParity
    theirs = ExponentiatedGradient(LGBMClassifier(n_estimators=15, **lightgbm_params(spec, 3)),
                                   DemographicParity(difference_bound=TOL / 2), eps=TOL, max_iter=8).fit(
        X, y, sensitive_features=group)
    model = result.model
    assert len(model.trees) >= 1
    np.testing.assert_allclose(model.positive_probability(torch.as_tensor(X)).numpy(),
                               fairlearn_probability(theirs, X), atol=1e-9)
    state = load(save({k: v.contiguous() for k, v in model.state_dict().items()}))
    assert all(state[f"trees.{i}.booster"].dtype == torch.uint8 for i in range(len(model.trees)))
    reloaded = restore_model(model_factory(spec)(X.shape[1]), state)
    with torch.no_grad():
        torch.testing.assert_close(reloaded(torch.as_tensor(X)), model(torch.as_tensor(X)), rtol=0, atol=0)


def test_draw_decides_each_row_by_one_seeded_draw_of_q():
    """decision 'draw': ŷ = 1{u(x) < p_Q(x)} with u(x) = frac(|xᵀr|) spread uniformly over rows, so each group's
    positive rate is Q's expected one (within sampling error); deterministic, and the same after restore."""
    X, y, group = three_groups(n=3000, seed=5)
    X[:, 0] = np.round(X[:, 0], 2)   # a grid of values, as encoded tables have
    result = solve(problem_of(X, y, group, "demographic_parity"),
                   {"name": "reductions", "params": {"decision": "draw"}}, seed=7)
    model, x = result.model, torch.as_tensor(X)
    with torch.no_grad():
        decided = (model(x) > 0).numpy()
        p, u = model.positive_probability(x).numpy(), model.uniform(x).numpy()
    np.testing.assert_array_equal(decided, u < p)
    assert abs(u.mean() - 0.5) < 0.03 and abs((u < 0.25).mean() - 0.25) < 0.03
    for g in range(3):
        rows = group == g
        assert abs(decided[rows].mean() - p[rows].mean()) <= 4 * np.sqrt(0.25 / rows.sum())
    state = load(save({k: v.contiguous() for k, v in model.state_dict().items()}))
    with torch.no_grad():
        torch.testing.assert_close(restore_model(linear(X.shape[1]), state)(x), model(x), rtol=0, atol=0)


class CountingLogistic(LogisticRegression):
    """LogisticRegression counting its ``predict`` calls per rows (class-wide: fairlearn fits clones)."""

    calls: dict[int, int] = {}

    def predict(self, X):
        CountingLogistic.calls[id(X)] = CountingLogistic.calls.get(id(X), 0) + 1
        return super().predict(X)


def test_fairlearns_two_predictions_of_the_training_rows_per_oracle_call_are_one():
    """fairlearn computes γ(h) of its objective and of its constraint on the same rows after each oracle call:
    the oracle answers the second from the first (same result as fairlearn's own fit, fewer passes)."""
    from fairlearn.reductions import DemographicParity

    from solvers.oracle_stream import OracleEstimator, OracleStream

    X, y, group = three_groups()
    CountingLogistic.calls = {}
    stream = OracleStream()
    oracle = OracleEstimator(CountingLogistic(max_iter=1000), stream)
    ours = ExponentiatedGradient(oracle, DemographicParity(difference_bound=TOL / 2), eps=TOL)
    stream.start(ours, X, y, sensitive_features=group)
    fits = 0
    while (item := stream.next())[0] == "oracle":
        fits += 1
    assert item[0] == "done" and fits > 3
    on_train = max(CountingLogistic.calls.values())
    assert on_train == fits   # one pass of each fitted classifier over the training rows (not two)
    theirs = ExponentiatedGradient(LogisticRegression(max_iter=1000), DemographicParity(difference_bound=TOL / 2),
                                   eps=TOL).fit(X, y, sensitive_features=group)
    np.testing.assert_array_equal(ours.weights_.to_numpy(), theirs.weights_.to_numpy())
    np.testing.assert_array_equal(ours._pmf_predict(X), theirs._pmf_predict(X))


def test_a_lightgbm_oracle_scores_the_training_rows_once_for_fairlearn_and_the_trajectory(monkeypatch):
    """Per LightGBM oracle call, one pass over the training rows serves fairlearn's two predictions and the
    trajectory's evaluation of h_t; the trajectory and Q are those of predicting each time."""
    import lightgbm as lgb

    from solvers import ModelSpec
    from solvers.models import model_factory
    from solvers.oracle_stream import OracleEstimator, lightgbm_labels

    X, y, group = three_groups(n=600, seed=4)
    spec = ModelSpec(type="gbdt", n_estimators=15, num_leaves=7)

    def run():
        problem = Problem(X=X, y=y, group=group, group_names=["a", "b", "c"], model_factory=model_factory(spec),
                          model_type="gbdt", device="cpu",
                          constraints=[ConstraintSpec(type="demographic_parity", tolerance=TOL).build()])
        observer = RecordingObserver()
        result = solve(problem, {"name": "reductions", "params": {"max_iter": 8}}, observer, seed=3)
        return result, [(r.objective, *r.constraints) for r in observer.records]

    passes = []
    predict = lgb.Booster.predict

    def counting(self, data, *args, **kwargs):
        passes.append(len(data))
        return predict(self, data, *args, **kwargs)

    monkeypatch.setattr(lgb.Booster, "predict", counting)
    ours, trajectory = run()
    fits = len(trajectory) - 1  # the last record is Q
    ours_passes = passes.count(len(X))
    plain_fit = OracleEstimator.fit

    def without_scores(self, X_, y_, sample_weight=None):  # the former path: fairlearn and the trajectory predict
        self.estimator_ = clone(self.estimator).fit(X_, y_, sample_weight=sample_weight)
        self.classes_, self._predicted = self.estimator_.classes_, None
        self.stream.fitted(self.estimator_)
        return self

    from sklearn.base import clone

    monkeypatch.setattr(OracleEstimator, "fit", without_scores)
    passes.clear()
    theirs, former = run()
    # formerly fairlearn once per call (its second prediction is the first's copy) and the trajectory once; now
    # one pass in all (the rest, in both runs: Q's components on the training rows)
    assert fits > 2 and passes.count(len(X)) - ours_passes == fits and ours_passes - fits <= len(ours.model.trees)
    monkeypatch.setattr(OracleEstimator, "fit", plain_fit)
    assert trajectory == former
    np.testing.assert_array_equal(ours.model.positive_probability(torch.as_tensor(X)).numpy(),
                                  theirs.model.positive_probability(torch.as_tensor(X)).numpy())
    # the labels from raw scores are LGBMClassifier.predict's, rows of a near-zero score included
    classifier = lgb.LGBMClassifier(n_estimators=5, num_leaves=7, verbose=-1).fit(X, y)
    raw = predict(classifier.booster_, X, raw_score=True)
    np.testing.assert_array_equal(lightgbm_labels(classifier, X, raw), classifier.predict(X))
    tiny = np.where(np.arange(len(X)) % 3 == 0, 1e-14, raw)  # "unsure" rows are asked of the classifier
    expected = classifier.classes_[(tiny > 0).astype(int)]
    expected[(tiny > 0) & (tiny <= 1e-12)] = classifier.predict(X[(tiny > 0) & (tiny <= 1e-12)])
    np.testing.assert_array_equal(lightgbm_labels(classifier, X, tiny), expected)

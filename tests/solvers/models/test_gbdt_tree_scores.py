"""One LightGBM tree evaluated with numpy (:mod:`solvers.models.gbdt.tree_scores`) against ``Booster.predict``, bit for bit;
and the boosting solvers' training scores, kept tree by tree, against the booster's own raw prediction."""

from __future__ import annotations

import copy

import lightgbm as lgb
import numpy as np
import pytest
import torch

from solvers import ModelSpec, Problem, solve
from solvers.algorithms.boosting import Boosting
from solvers.models.gbdt.tree_scores import CATCH_UP_TREES, KeptScores, TreeScorer, parse_tree
from solvers.models.factory import model_factory
from tests.support.problems import planted_problem_data
from tests.support.problems import SMALL, gbdt_problem


def awkward_rows(rng: np.random.Generator, n: int, zeros: float = 0.3, width: int = 6) -> np.ndarray:
    """float32 rows of ``width`` columns with zeros (a share ``zeros``), NaN, −0.0, values below LightGBM's zero
    threshold and an integer column."""
    X = rng.normal(size=(n, width)).astype(np.float32)
    X[rng.random(X.shape) < zeros] = 0.0
    X[rng.random(X.shape) < 0.1] = np.nan
    X[rng.random(X.shape) < 0.03] = -0.0
    X[rng.random(X.shape) < 0.03] = 1e-38
    X[:, 5] = np.round(np.nan_to_num(X[:, 5]) * 2)
    return X


@pytest.mark.parametrize("zeros,width,route", [(0.3, 80, "numpy"), (0.6, 40, "numpy"), (0.9, 6, "csr"),
                                               (0.3, 6, "dense")],
                         ids=["wide-dense", "bank-like", "sparse", "narrow-dense"])
@pytest.mark.parametrize("params", [{}, {"use_missing": False}, {"zero_as_missing": True}, {"max_bin": 7}],
                         ids=["nan-missing", "no-missing", "zero-as-missing", "few-bins"])
def test_each_tree_and_their_sum_are_lightgbms_prediction_bit_for_bit(params, zeros, width, route):
    rng = np.random.default_rng(7)
    X = awkward_rows(rng, 2000, zeros, width)
    y = (rng.random(len(X)) < 1 / (1 + np.exp(-2 * np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 5])))).astype(float)
    booster = lgb.train({"objective": "binary", "verbosity": -1, "num_leaves": 15, "min_child_samples": 5,
                         "num_threads": 1, **params}, lgb.Dataset(X, y), num_boost_round=15)
    rows = np.concatenate([X[:300], awkward_rows(rng, 1500, zeros, width)])  # rows seen in training and new ones
    scorer = TreeScorer(rows)
    assert route == ("numpy" if scorer.lightgbm_rows is None else "dense" if scorer.lightgbm_rows is rows else "csr")
    total = np.zeros(len(rows))
    for tree in range(booster.current_iteration()):
        ours = scorer.tree_values(booster, tree)
        theirs = booster.predict(rows, start_iteration=tree, num_iteration=1, raw_score=True)
        assert np.array_equal(ours, theirs), (tree, np.abs(ours - theirs).max())
        total += ours
    assert np.array_equal(total, booster.predict(rows, raw_score=True))  # summed from 0 in order, as LightGBM does


def test_a_single_leaf_and_a_categorical_split_are_served():
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.integers(0, 6, 800), rng.normal(size=(800, 49))]).astype(np.float64)  # wide: numpy
    y = (np.isin(X[:, 0], [1, 4]) ^ (rng.random(800) < 0.1)).astype(float)
    booster = lgb.train({"objective": "binary", "verbosity": -1, "num_leaves": 4, "min_data_per_group": 5,
                         "cat_smooth": 1, "num_threads": 1}, lgb.Dataset(X, y, categorical_feature=[0]), 3)
    assert not parse_tree(booster.model_to_string(start_iteration=0, num_iteration=1)).numeric
    scorer = TreeScorer(X)
    assert scorer.lightgbm_rows is None
    for tree in range(3):  # categorical splits: LightGBM's own prediction
        assert np.array_equal(scorer.tree_values(booster, tree),
                              booster.predict(X, start_iteration=tree, num_iteration=1, raw_score=True))
    stump = lgb.train({"objective": "binary", "verbosity": -1, "min_child_samples": 1000}, lgb.Dataset(X, y), 1)
    only = parse_tree(stump.model_to_string())
    assert only.feature.size == 0
    assert np.array_equal(scorer.values(only), stump.predict(X, raw_score=True))


def _rounds_against_prediction(monkeypatch, problem, solver: str, spec_rounds: int = 100) -> tuple[list, list]:
    """Run ``solver`` and compare, after every round, the solver's training scores and the model's forward pass
    over the training rows with a fresh ``Booster.predict``: (max |scores − prediction| per round, forward equal)."""
    X = problem.X.numpy()
    gaps, forward = [], []
    original = Boosting.step

    def step(self, k, current):
        out = original(self, k, current)
        predicted = self.trainer.booster.predict(X, raw_score=True)
        gaps.append(float(np.abs(self.trainer.scores - predicted).max()))
        forward.append(np.array_equal(self.model(problem.X).double().numpy(), predicted.astype(np.float32)))
        return out

    monkeypatch.setattr(Boosting, "step", step)
    result = solve(problem, solver, max_iterations=spec_rounds, seed=0)
    assert len(gaps) == result.iterations > 1
    return gaps, forward


def test_custom_objective_training_scores_are_the_boosters_raw_prediction_every_round(monkeypatch):
    gaps, forward = _rounds_against_prediction(monkeypatch, gbdt_problem(), "fair_boosting")
    assert max(gaps) == 0.0 and all(forward)   # LightGBM's own training scores, bit for bit


def test_binary_training_scores_are_read_back_from_probabilities_within_the_stated_error(monkeypatch):
    gaps, forward = _rounds_against_prediction(monkeypatch, gbdt_problem(), "erm")
    assert max(gaps) <= 5e-10 and all(forward)   # Trainer's bound; the forward pass stays LightGBM's prediction


def test_a_round_with_a_probability_at_the_edge_is_read_exactly(monkeypatch):
    """Separable rows drive the scores past |f| = 13.8 (p beyond P_EDGE): those rounds are read tree by tree,
    bit for bit, and the ones before within the bound."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32)
    problem = Problem(X, y, (X[:, 1] > 0).astype(np.int64), ["a", "b"], model_type="gbdt", objective="logistic",
                      model_factory=model_factory(ModelSpec(type="gbdt", n_estimators=200, learning_rate=1.0,
                                                            min_child_samples=2, min_child_weight=1e-8)),
                      device="cpu")
    edge = []
    original = Boosting.step

    def step(self, k, current):
        out = original(self, k, current)
        edge.append(float(np.abs(self.trainer.scores).max()) > 13.8)
        return out

    monkeypatch.setattr(Boosting, "step", step)
    gaps, _ = _rounds_against_prediction(monkeypatch, problem, "erm", 200)
    assert any(edge) and not all(edge)
    assert all(g == 0.0 for g, e in zip(gaps, edge) if e) and max(gaps) <= 5e-10


def test_training_scores_on_real_tables_match_the_prediction_every_round(monkeypatch):
    """Adult (one-hot, LightGBM's sparse path) and bank, encoded as a job encodes them, the tuned base's settings
    (15 leaves, half the features)."""
    from bench.common.datasets import adult, bank, data_dir
    from solvers import ProblemSpec, prepare

    if not (data_dir() / "adult.data").exists():
        pytest.skip("the real tables are not in FAIRSOLVE_DATA_DIR")
    for table, fields in ((adult(), {"target": "income", "positive_label": ">50K", "sensitive": ["sex"]}),
                          (bank(), {"target": "y", "positive_label": "yes", "sensitive": ["marital"]})):
        data = prepare(table.sample(n=4000, random_state=0).reset_index(drop=True), ProblemSpec.model_validate(
            {**fields, "model": {"type": "gbdt"}, "constraints": [], "solver": {"name": "erm"}}))
        train = data.splits["train"]
        spec = ModelSpec(type="gbdt", n_estimators=100, num_leaves=15, colsample_bytree=0.5)
        problem = Problem(np.asarray(data.X)[train], np.asarray(data.y)[train], np.asarray(data.group)[train],
                          list(data.group_names), model_type="gbdt", objective="logistic",
                          model_factory=model_factory(spec), device="cpu")
        gaps, forward = _rounds_against_prediction(monkeypatch, problem, "erm")
        monkeypatch.undo()   # the next table's check wraps the solver's own step
        assert max(gaps) <= 5e-10 and all(forward), table.columns[-1]


def test_kept_scores_follow_a_growing_booster_tree_by_tree_or_all_at_once():
    rng = np.random.default_rng(5)
    X = awkward_rows(rng, 1500)
    y = (rng.random(len(X)) < 0.4).astype(float)
    params = {"objective": "binary", "verbosity": -1, "num_leaves": 7, "num_threads": 1}
    booster = lgb.Booster(params, lgb.Dataset(X, y))
    kept = KeptScores(X)
    for rounds in (1, 2, 5, CATCH_UP_TREES + 3, 1):  # the fourth catch-up is past the limit: one whole prediction
        for _ in range(rounds):
            booster.update()
        assert np.array_equal(kept.catch_up(booster), booster.predict(X, raw_score=True))
    assert kept.trees == booster.current_iteration() == 1 + 2 + 5 + CATCH_UP_TREES + 3 + 1
    later = KeptScores(X).start_from(booster.predict(X, raw_score=True, num_iteration=4), 4)
    assert np.array_equal(later.catch_up(booster), booster.predict(X, raw_score=True))
    with pytest.raises(ValueError, match="fewer"):
        KeptScores(X).start_from(np.zeros(len(X)), 10_000).catch_up(booster)


def test_a_boosted_models_forward_reads_its_kept_scores_only_for_the_same_unchanged_rows(monkeypatch):
    rng = np.random.default_rng(11)
    X, y, s = planted_problem_data(n=600)
    table_X = np.vstack([np.asarray(X, dtype=np.float32), rng.normal(size=(200, X.shape[1])).astype(np.float32)])
    problem = Problem(table_X[:600], y, s, ["a", "b"], model_factory=model_factory(ModelSpec(**SMALL)),
                      model_type="gbdt", objective="logistic", constraints=[], device="cpu")  # a view of the table
    model = solve(problem, "erm", max_iterations=100, seed=0).model
    assert len(model.kept) == 1 and model.kept[0][1].span_in(table_X) == (0, 600)
    predicted = []
    lightgbm_predict = type(model.booster).predict

    def counting(self, data, *args, **kwargs):
        predicted.append(len(data))
        return lightgbm_predict(self, data, *args, **kwargs)

    monkeypatch.setattr(type(model.booster), "predict", counting)
    caught_up = model(problem.X)   # the solve read LightGBM's training scores: the kept rows catch up when first read
    assert predicted and all(n == 600 for n in predicted)
    predicted.clear()
    everything = torch.as_tensor(table_X)
    fresh = torch.as_tensor(lightgbm_predict(model.booster, table_X, raw_score=True), dtype=torch.float32)
    assert torch.equal(model(everything), fresh) and predicted == [200]  # LightGBM predicted the other rows only
    assert torch.equal(model(problem.X), fresh[:600]) and torch.equal(caught_up, fresh[:600]) and predicted == [200]
    twin = copy.deepcopy(model)   # a snapshot: its booster's copy reads a copy of the kept scores
    assert len(twin.kept) == 1 and twin.kept[0][0] is twin.booster and twin.kept[0][1] is not model.kept[0][1]
    assert torch.equal(twin(everything), fresh) and predicted == [200, 200]   # the kept rows were not predicted
    assert not np.shares_memory(twin.kept[0][1].scores, model.kept[0][1].scores)   # its scores are its own
    predicted.clear()
    table_X[3, 0] += 1.0  # the kept rows changed in memory: LightGBM predicts all of them again
    changed = torch.as_tensor(lightgbm_predict(model.booster, table_X, raw_score=True), dtype=torch.float32)
    assert torch.equal(model(everything), changed) and predicted == [800]
    assert model.kept[0][1].span_in(table_X.copy()) is None  # equal values elsewhere in memory: not the kept rows


def test_rows_past_the_copy_limit_are_predicted_by_lightgbm_as_they_are_and_never_matched(monkeypatch):
    from solvers.models.gbdt import tree_scores

    rng = np.random.default_rng(2)
    X = awkward_rows(rng, 1000, 0.9)  # sparse: under the limit it would be a CSR copy
    booster = lgb.train({"objective": "binary", "verbosity": -1, "num_leaves": 7, "num_threads": 1},
                        lgb.Dataset(X, (rng.random(1000) < 0.3).astype(float)), 6)
    monkeypatch.setattr(tree_scores, "MAX_COPIED_VALUES", X.size - 1)
    kept = KeptScores(X)
    assert kept.rows is X and kept.span_in(X) is None
    assert np.array_equal(kept.catch_up(booster), booster.predict(X, raw_score=True))
    assert kept.scorer.lightgbm_rows is X

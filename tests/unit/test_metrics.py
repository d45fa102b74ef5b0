import numpy as np
import pytest
from fairlearn.metrics import (demographic_parity_difference, equal_opportunity_difference,
                               equalized_odds_difference)

from solvers import classification_metrics, group_fairness


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("seed", [0, 1])
def test_gaps_match_fairlearn(k, seed):
    rng = np.random.default_rng(seed)
    n = 1000
    group = rng.integers(0, k, n)
    y = (rng.random(n) < 0.3 + 0.1 * group).astype(int)
    pred = (rng.random(n) < 0.2 + 0.15 * group).astype(int)
    names = [f"g{i}" for i in range(k)]
    ours = group_fairness(y, pred, group, names)
    assert ours["demographic_parity"] == pytest.approx(demographic_parity_difference(y, pred, sensitive_features=group))
    assert ours["equalized_odds"] == pytest.approx(equalized_odds_difference(y, pred, sensitive_features=group))
    assert ours["equal_opportunity"] == pytest.approx(equal_opportunity_difference(y, pred, sensitive_features=group))
    rates = ours["demographic_parity_by_group"]
    assert rates["g0"] == pytest.approx(pred[group == 0].mean())
    assert ours["equalized_odds_by_group"]["g1"]["fpr"] == pytest.approx(pred[(group == 1) & (y == 0)].mean())
    assert sum(ours["group_sizes"].values()) == n


def test_group_without_positives_is_skipped_for_tpr():
    y = np.array([1, 0, 1, 0, 0, 0])
    pred = np.array([1, 0, 0, 1, 1, 0])
    group = np.array([0, 0, 0, 1, 1, 1])
    out = group_fairness(y, pred, group, ["a", "b"])
    assert out["equal_opportunity_by_group"]["b"] is None
    assert out["equal_opportunity"] == 0.0
    assert out["equalized_odds"] == pytest.approx(2 / 3)  # FPR a = 0/1, FPR b = 2/3


def test_classification_metrics_plain_floats_and_one_class():
    out = classification_metrics(np.ones(4), np.array([0.9, 0.2, 0.7, 0.6]), np.array([0, 0, 1, 1]), ["a", "b"])
    assert out["roc_auc"] is None and out["accuracy"] == 0.75
    assert isinstance(out["log_loss"], float) and out["n"] == 4

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


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scores_match_scikit_learn(seed):
    """accuracy, balanced accuracy, ROC AUC (with tied and saturated scores) and log loss as scikit-learn's."""
    from sklearn import metrics as skm

    rng = np.random.default_rng(seed)
    n = 3000
    y = (rng.random(n) < 0.3).astype(int)
    logits = np.round(rng.normal(1.5 * y - 0.7, 1.0 + seed), 1)  # rounded: many ties
    logits[:50] = 40.0 * np.sign(logits[:50])                     # σ saturates at 0 / 1: ties in the score, clipping
    score = 1 / (1 + np.exp(-logits))
    out = classification_metrics(y, score, rng.integers(0, 2, n), ["a", "b"], logits=logits)
    pred = (score > 0.5).astype(int)
    assert out["accuracy"] == pytest.approx(skm.accuracy_score(y, pred), rel=1e-12)
    assert out["balanced_accuracy"] == pytest.approx(skm.balanced_accuracy_score(y, pred), rel=1e-12)
    assert out["roc_auc"] == pytest.approx(skm.roc_auc_score(y, score), rel=1e-12)
    assert out["log_loss"] == pytest.approx(skm.log_loss(y, np.clip(score, 1e-15, 1 - 1e-15), labels=[0, 1]),
                                            rel=1e-12)


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("loss", ["bce", "hinge", "truncated_logistic"])
def test_loss_gap_and_minority_rate_match_brute_force(k, loss):
    from solvers.metrics.classification import loss_gap, minority_rate

    rng = np.random.default_rng(k)
    n = 800
    group = rng.integers(0, k, n)
    group[group == k - 1] = rng.integers(0, k, (group == k - 1).sum())  # last group smaller
    y = rng.integers(0, 2, n)
    f = rng.normal(scale=2.0, size=n)
    yt = 2 * y - 1
    ell = {"bce": np.log1p(np.exp(-yt * f)), "hinge": np.maximum(0, 1 - yt * f),
           "truncated_logistic": 2 * np.log1p(np.log1p(np.exp(-yt * f)) / 2)}[loss]
    names = [f"g{i}" for i in range(k)]
    out = loss_gap(y, f, group, names, loss)
    gaps = {}
    for g in range(k):
        total = 0.0
        members = 0
        for i in range(n):
            if group[i] == g:
                total += ell[i]
                members += 1
        gaps[f"g{g}"] = total / members - ell.mean()
    assert out["loss_gap"] == pytest.approx(max(gaps.values()))
    assert out["loss_gap_by_group"] == pytest.approx(gaps)
    big = loss_gap(y, f, group, names, "hinge", min_group_fraction=1.0 / k, name="intersectional")
    assert set(big["intersectional_by_group"]) == {nm for g, nm in enumerate(names) if (group == g).sum() > n / k}

    pred = (f > 0).astype(int)
    mr = minority_rate(pred, group, names)
    counts = np.bincount(group, minlength=k)
    smallest = int(np.argmin(counts))
    shares = {f"g{g}": sum(1 for i in range(n) if group[i] == g and pred[i] == 1) / pred.sum() for g in range(k)}
    assert mr["minority_rate_group"] == f"g{smallest}"
    assert mr["minority_rate"] == pytest.approx(shares[f"g{smallest}"])
    assert mr["minority_rate_by_group"] == pytest.approx(shares)
    assert minority_rate(pred, group, names, "g0")["minority_rate"] == pytest.approx(shares["g0"])
    assert minority_rate(np.zeros(n), group, names)["minority_rate"] is None


def test_classification_metrics_has_new_metrics_from_probabilities():
    rng = np.random.default_rng(7)
    n = 300
    group, y, f = rng.integers(0, 3, n), rng.integers(0, 2, n), rng.normal(size=n)
    p = 1 / (1 + np.exp(-f))
    out = classification_metrics(y, p, group, ["a", "b", "c"], loss="hinge", intersectional_min_fraction=0.01)
    exact = classification_metrics(y, p, group, ["a", "b", "c"], logits=f, loss="hinge", intersectional_min_fraction=0.01)
    assert out["loss_gap"] == pytest.approx(exact["loss_gap"], abs=1e-9) and out["loss_gap_loss"] == "hinge"
    assert out["intersectional"] == pytest.approx(out["loss_gap"], abs=1e-9)
    assert set(out["minority_rate_by_group"]) == {"a", "b", "c"}


def test_benchmark_criteria_are_reported_as_the_worst_pair():
    from solvers.metrics.benchmark import benchmark_metrics
    from solvers.metrics.classification import classification_metrics

    rng = np.random.default_rng(7)
    n = 600
    group = rng.integers(0, 3, n)
    y = rng.integers(0, 2, n)
    score = np.clip(rng.random(n) * 0.6 + 0.25 * group / 2, 0, 1)
    out = classification_metrics(y, score, group, ["a", "b", "c"])
    pairs = [benchmark_metrics(y[(group == a) | (group == b)], score[(group == a) | (group == b)],
                               group[(group == a) | (group == b)] == a) for a, b in ((0, 1), (0, 2), (1, 2))]
    assert out["independence"] == pytest.approx(max(p["Ind"] for p in pairs))
    assert out["separation"] == pytest.approx(max(p["Sp"] for p in pairs))
    assert out["sufficiency"] == pytest.approx(max(p["Sf"] for p in pairs))
    assert out["inaccuracy"] == pytest.approx(1 - out["accuracy"])
    two = classification_metrics(y, score, (group > 0).astype(int), ["a", "b"])
    assert two["independence"] == pytest.approx(two["demographic_parity"])


def test_a_partitions_rates_from_one_cell_count_equal_the_per_group_rates():
    """group_fairness counts a partition's cells group × label × prediction once; the same partition as a
    membership takes the per-group and per-cell rates (group_rates): equal on random tables, empty groups and cells
    included."""
    from solvers.data.membership import Membership
    from solvers.metrics.classification import group_fairness

    rng = np.random.default_rng(4)
    for _ in range(200):
        n, k = int(rng.integers(1, 200)), int(rng.integers(1, 6))
        y, pred, group = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, k, n)
        names = [f"g{i}" for i in range(k)]
        assert group_fairness(y, pred, group, names) == group_fairness(y, pred, Membership.from_partition(group, names),
                                                                       names)

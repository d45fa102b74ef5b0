"""solvers.fairness.exact: one exact value per family, the same numbers as the evaluation metrics."""
import numpy as np
import pytest

from solvers.fairness.exact import exact_gaps, kept
from solvers.metrics import group_fairness, loss_gap, minority_rate
from solvers.spec import ConstraintSpec


def _families(*specs, names=("a", "b", "c"), counts=(300, 500, 200)):
    return [ConstraintSpec(**s).build().bind(list(names), list(counts)) for s in specs]


@pytest.fixture
def split():
    rng = np.random.default_rng(3)
    n = 1000
    group = np.repeat([0, 1, 2], [300, 500, 200])
    y = (rng.random(n) < 0.3 + 0.2 * (group == 1)).astype(int)
    logits = rng.normal(size=n) + 0.8 * y + 0.5 * (group == 2)
    return y, logits, group, ["a", "b", "c"]


def test_rate_families_match_group_fairness(split):
    y, f, g, names = split
    fams = _families({"type": "demographic_parity", "tolerance": 0.05}, {"type": "equal_opportunity", "tolerance": 0.05},
                     {"type": "equalized_odds", "tolerance": 0.05, "aggregate": "separate"})
    ref = group_fairness(y, (f > 0).astype(int), g, names)
    values = exact_gaps(fams, y, f, g, names)
    assert values == pytest.approx([ref["demographic_parity"], ref["equal_opportunity"], ref["equalized_odds"]])
    assert kept(values, fams).tolist() == [v <= 0.05 for v in values]


def test_loss_and_minority_families(split):
    y, f, g, names = split
    fams = _families({"type": "loss_gap", "tolerance": 0.1}, {"type": "loss_gap", "tolerance": 0.1, "mode": "two_sided"},
                     {"type": "minority_rate", "tolerance": 0.0, "c": 0.3})
    values = exact_gaps(fams, y, f, g, names)
    one = loss_gap(y, f, g, names)
    by = np.array(list(one["loss_gap_by_group"].values()))
    pred = (f > 0).astype(int)
    share = minority_rate(pred, g, names, "c")["minority_rate"]
    assert values[0] == pytest.approx(one["loss_gap"])
    assert values[1] == pytest.approx(by.max() - by.min())
    # c·P/n − P_min/n, directly from the predictions
    assert values[2] == pytest.approx(0.3 * pred.mean() - pred[g == 2].sum() / len(pred))
    assert (values[2] <= 0) == (share >= 0.3)


def test_auc_parity_and_undefined(split):
    y, f, g, names = split
    from solvers.auc.metrics import fairness_gap

    fams = _families({"type": "auc_parity", "tolerance": 0.02, "variant": "intra"},
                     {"type": "equal_opportunity", "tolerance": 0.02})
    values = exact_gaps(fams, y, f, g, names)
    assert values[0] == pytest.approx(fairness_gap(y, f, g == 0, "intra"))
    none_positive = exact_gaps(fams[1:], np.zeros_like(y), f, g, names)
    assert np.isnan(none_positive[0]) and not kept(none_positive, fams[1:])[0]


@pytest.mark.parametrize("typ", ["partial_statistical_parity", "partial_demographic_parity"])
def test_partial_families_match_their_exact_metrics(split, typ):
    y, f, g, names = split
    family = ConstraintSpec(type=typ, tolerance=0.05, interval=[0.0, 0.3]).build().bind(names, [300, 500, 200])
    assert exact_gaps([family], y, f, g, names)[0] == pytest.approx(family.exact_metrics(y, f, g, names)[typ])

"""solvers.fairness.intervals: the bounds' statistics equal the exact values, and their coverage by simulation."""
import numpy as np
import pytest

from solvers.auc.metrics import auc_between
from solvers.fairness.exact import exact_gaps
from solvers.fairness.intervals import (bootstrap_statistic, clopper_pearson, constraint_bounds, upper_bounds,
                                        weighted_auc)
from solvers.spec import ConstraintSpec

NAMES = ["a", "b", "c"]


def _family(**spec):
    return ConstraintSpec(**spec).build().bind(NAMES, [300, 500, 200])


def _sample(n, rng, shift=(0.0, 0.3, -0.2)):
    group = rng.choice(3, n, p=[0.3, 0.5, 0.2])
    y = (rng.random(n) < 0.4).astype(int)
    logits = rng.normal(size=n) + 1.0 * y + np.asarray(shift)[group]
    return y, logits, group


@pytest.mark.parametrize("spec", [{"type": "loss_gap", "tolerance": 0.1},
                                  {"type": "loss_gap", "tolerance": 0.1, "mode": "two_sided", "loss": "hinge"},
                                  {"type": "minority_rate", "tolerance": 0.0, "c": 0.3},
                                  {"type": "auc_parity", "tolerance": 0.02, "variant": "intra"},
                                  {"type": "auc_parity", "tolerance": 0.02, "variant": "inter"}])
def test_bootstrap_statistic_on_the_split_is_the_exact_value(spec):
    y, f, g = _sample(800, np.random.default_rng(0))
    f = np.round(f, 1)  # ties
    family = _family(**spec)
    statistic = bootstrap_statistic(family, y, f, g, NAMES)
    assert statistic(np.tile(np.arange(len(y)), (2, 1)))[0] == pytest.approx(exact_gaps([family], y, f, g, NAMES)[0])


def test_weighted_auc_is_auc_of_the_resample():
    rng = np.random.default_rng(1)
    s = np.round(rng.normal(size=300), 1)
    in_g, in_gp = rng.random(300) < 0.6, rng.random(300) < 0.5
    w = rng.multinomial(300, np.full(300, 1 / 300), size=3).astype(float)
    got = weighted_auc(w, s, in_g, in_gp)
    for b in range(3):
        rows = np.repeat(np.arange(300), w[b].astype(int))
        assert got[b] == pytest.approx(auc_between(s[rows], in_g[rows], in_gp[rows]))


def test_clopper_pearson_edges():
    lo, hi = clopper_pearson(np.array([0, 10, 3]), np.array([10, 10, 0]), 0.05)
    assert lo[0] == 0 and hi[1] == 1 and np.isnan(lo[2])
    assert hi[0] == pytest.approx(1 - 0.025 ** (1 / 10))  # exact binomial: (1-p)^n = α/2


def test_rate_gap_bounds_cover_the_true_gap():
    """DP and EOdds on 3 groups with known rates: the simultaneous bounds cover the true gaps ≥ 95 %."""
    rng = np.random.default_rng(7)
    sel = np.array([0.30, 0.36, 0.25])  # P(ŷ = 1 | g), ŷ independent of y
    true_dp = sel.max() - sel.min()
    dp, eo = _family(type="demographic_parity", tolerance=0.05), _family(type="equalized_odds", tolerance=0.05)
    covered_upper = covered_ci = 0
    reps = 300
    for _ in range(reps):
        n = 600
        g = rng.choice(3, n, p=[0.3, 0.5, 0.2])
        y = (rng.random(n) < 0.4).astype(int)
        f = np.where(rng.random(n) < sel[g], 1.0, -1.0)
        b_dp, b_eo = constraint_bounds([dp, eo], y, f, g, NAMES)
        covered_upper += (b_dp.upper >= true_dp) and (b_eo.upper >= true_dp)  # EOdds' true gap = DP's here
        covered_ci += b_dp.lo <= true_dp <= b_dp.hi
    assert covered_upper / reps >= 0.95 and covered_ci / reps >= 0.95


def test_bootstrap_upper_bound_covers_the_loss_gap():
    """One-sided loss-gap bound: true gap estimated on a very large sample, covered in ≥ 92 % of 200 samples."""
    rng = np.random.default_rng(11)
    family = _family(type="loss_gap", tolerance=0.1)
    y, f, g = _sample(400_000, rng)
    truth = exact_gaps([family], y, f, g, NAMES)[0]
    hits = 0
    reps = 200
    for _ in range(reps):
        y, f, g = _sample(1500, rng)
        hits += upper_bounds([family], y, f, g, NAMES, n_boot=200, seed=int(rng.integers(1 << 30)))[0] >= truth
    assert hits / reps >= 0.92

"""The stochastic benchmark's Ind, Sp, Sf, Ina, Wd against brute-force loops and scipy."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from solvers.benchmark_metrics import benchmark_metrics, ina, ind, predictions, sf, sp, wd


def _rate(num, den):
    return num / den if den else math.nan


def brute(y, yhat, s):
    """Loop over samples, counting every conditional frequency by hand."""
    cnt = {}
    for yi, pi, si in zip(y, yhat, s):
        for key in (("g", si), ("gy", si, yi), ("gp", si, pi)):
            tot, pos = cnt.get(key, (0, 0))
            hit = pi if key[0] != "gp" else yi
            cnt[key] = (tot + 1, pos + hit)

    def r(*key):
        tot, pos = cnt.get(key, (0, 0))
        return _rate(pos, tot)

    ind_ = abs(r("g", 1) - r("g", 0))
    sp_terms = [abs(r("gy", 1, v) - r("gy", 0, v)) for v in (0, 1)]
    sf_terms = [abs(r("gp", 1, v) - r("gp", 0, v)) for v in (0, 1)]
    sp_ = sum(t for t in sp_terms if not math.isnan(t)) if any(not math.isnan(t) for t in sp_terms) else math.nan
    sf_ = sum(t for t in sf_terms if not math.isnan(t)) if any(not math.isnan(t) for t in sf_terms) else math.nan
    wrong = sum(int(a != b) for a, b in zip(y, yhat))
    return ind_, sp_, sf_, wrong / len(y)


@pytest.mark.parametrize("seed", range(20))
def test_ind_sp_sf_ina_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    s = rng.random(n) < rng.uniform(0.1, 0.9)
    y = (rng.random(n) < np.where(s, 0.2, 0.5)).astype(int)
    proba = np.clip(rng.normal(0.4 + 0.2 * y - 0.1 * s, 0.25), 0, 1)
    yhat = predictions(proba)
    want = brute(y.tolist(), yhat.tolist(), s.astype(int).tolist())
    got = (ind(yhat, s), sp(y, yhat, s), sf(y, yhat, s), ina(y, yhat))
    for g, w in zip(got, want):
        assert (math.isnan(g) and math.isnan(w)) or g == pytest.approx(w, abs=1e-12)


def test_hand_computed_values():
    # s = 1 (protected): y = [1, 1, 0, 0], ŷ = [1, 0, 0, 0];  s = 0: y = [1, 0, 0], ŷ = [1, 1, 0]
    y = np.array([1, 1, 0, 0, 1, 0, 0])
    yhat = np.array([1, 0, 0, 0, 1, 1, 0])
    s = np.array([1, 1, 1, 1, 0, 0, 0], dtype=bool)
    assert ind(yhat, s) == pytest.approx(abs(1 / 4 - 2 / 3))
    # TPR: 1/2 vs 1 ; FPR: 0 vs 1/2
    assert sp(y, yhat, s) == pytest.approx(0.5 + 0.5)
    # PPV = P(y=1|ŷ=1): 1 vs 1/2 ; P(y=1|ŷ=0): 1/3 vs 0
    assert sf(y, yhat, s) == pytest.approx(0.5 + 1 / 3)
    assert ina(y, yhat) == pytest.approx(2 / 7)


def test_sf_undefined_term_is_skipped():
    # no positive prediction in the protected group: the PPV term is undefined, only NPV counts
    y = np.array([1, 0, 1, 0])
    yhat = np.array([0, 0, 1, 0])
    s = np.array([1, 1, 0, 0])
    assert sf(y, yhat, s) == pytest.approx(abs(1 / 2 - 0.0))
    assert math.isnan(sf(y, yhat, np.ones(4)))  # one group empty: nothing defined


def test_threshold_is_strict():
    assert predictions(np.array([0.5, 0.5000001, 0.49])).tolist() == [0, 1, 0]


@pytest.mark.parametrize("seed", range(10))
def test_wd_exact_w1_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    x = rng.random(int(rng.integers(10, 200)))
    s = rng.random(x.size) < 0.4
    s[0], s[1] = True, False
    assert wd(x, s, bins=None, p=1) == pytest.approx(wasserstein_distance(x[s], x[~s]), abs=1e-12)


def _quantile_integral(a_vals, a_w, b_vals, b_w, p, grid=200_000):
    """Brute force: ∫_0^1 |F_a^{-1}(t) − F_b^{-1}(t)|^p dt on a fine midpoint grid."""
    t = (np.arange(grid) + 0.5) / grid

    def q(vals, w):
        order = np.argsort(vals)
        vals, cw = vals[order], np.cumsum(w[order]) / w.sum()
        return np.array([vals[min(np.searchsorted(cw, ti), vals.size - 1)] for ti in t])

    return float(np.mean(np.abs(q(a_vals, a_w) - q(b_vals, b_w)) ** p))


@pytest.mark.parametrize("seed", range(3))
def test_wd_binned_w2_squared_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    x = np.clip(np.concatenate([rng.beta(2, 5, 150), rng.beta(4, 2, 90)]), 0, 1)
    s = np.r_[np.ones(150, bool), np.zeros(90, bool)]
    centres = (np.arange(50) + 0.5) / 50
    ha = np.histogram(x[s], bins=50, range=(0, 1))[0].astype(float)
    hb = np.histogram(x[~s], bins=50, range=(0, 1))[0].astype(float)
    want = _quantile_integral(centres, ha, centres, hb, 2)
    assert wd(x, s) == pytest.approx(want, rel=1e-3, abs=1e-6)
    assert wd(x, s, root=True) == pytest.approx(want ** 0.5, rel=1e-3)


def test_wd_identical_groups_is_zero_and_shift_is_exact():
    x = np.linspace(0.01, 0.49, 40)
    s = np.arange(40) % 2 == 0
    assert wd(np.r_[x, x], np.r_[np.ones(40, bool), np.zeros(40, bool)]) == pytest.approx(0.0)
    # every protected score 0.3 higher: binned at centres, W2² is the squared shift between bin centres
    a, b = np.full(10, 0.11), np.full(10, 0.41)
    assert wd(np.r_[a, b], np.r_[np.ones(10, bool), np.zeros(10, bool)]) == pytest.approx(0.3 ** 2)
    assert wd(np.r_[a, b], np.r_[np.ones(10, bool), np.zeros(10, bool)], bins=None, p=1) == pytest.approx(0.3)
    assert math.isnan(wd(x, np.ones(40, bool)))
    del s


def test_benchmark_metrics_bundle():
    rng = np.random.default_rng(0)
    proba, y, s = rng.random(100), rng.integers(0, 2, 100), rng.random(100) < 0.3
    out = benchmark_metrics(y, proba, s)
    yhat = predictions(proba)
    assert out == {"Ind": ind(yhat, s), "Sp": sp(y, yhat, s), "Sf": sf(y, yhat, s), "Ina": ina(y, yhat),
                   "Wd": wd(proba, s)}

"""Exact AUC fairness metrics vs brute-force pairwise counts; the square surrogate's closed form and
min–max form vs the pairwise average (Lemma 1, corrected −c₁α²); Lemma 2 (w = 0 strictly feasible)."""
import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from solvers.auc import VARIANTS, auc, auc_fairness, components, term_sets, term_values
from solvers.auc.metrics import GROUP_SETS, set_mask
from solvers.auc.surrogate import level_values, per_sample_F_G, scaled_indicators


def brute_auc(s, in_g, in_gp):
    num = den = 0.0
    for i in np.flatnonzero(in_g):
        for j in np.flatnonzero(in_gp):
            if i == j:
                continue
            den += 1
            num += 1.0 if s[i] > s[j] else (0.5 if s[i] == s[j] else 0.0)
    return num / den


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(3)
    n = 120
    y = rng.integers(0, 2, n)
    group = rng.integers(0, 3, n)
    s = np.round(rng.normal(size=n) + 0.7 * y - 0.4 * (group == 0), 1)  # rounding makes ties
    return y, s, group


def test_auc_matches_sklearn_and_brute_force(small):
    y, s, _ = small
    assert auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert auc(y, s) == pytest.approx(brute_auc(s, y == 1, y == 0), abs=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_variants_match_brute_force(small, variant):
    y, s, group = small
    prot = group == 0
    g1, g1p, g2, g2p = GROUP_SETS[variant]
    first = brute_auc(s, set_mask(y, prot, g1), set_mask(y, prot, g1p))
    second = 0.5 if g2 is None else brute_auc(s, set_mask(y, prot, g2), set_mask(y, prot, g2p))
    a1, a2, gap = components(y, s, prot, variant)
    assert a1 == pytest.approx(first, abs=1e-12) and a2 == pytest.approx(second, abs=1e-12)
    assert gap == pytest.approx(abs(first - second), abs=1e-12)


def test_per_group_max_pair_and_ci(small):
    y, s, group = small
    names = ["a", "b", "c"]
    d = auc_fairness(y, s, group, names, "intra", protected="b", n_boot=50, seed=1)
    assert d["protected"] == "b"
    assert d["value"] == pytest.approx(d["by_group"]["b"])
    pairs = []
    for a in range(3):
        for b in range(3):
            if a != b:
                rows = (group == a) | (group == b)
                pairs.append(components(y[rows], s[rows], group[rows] == a, "intra")[2])
    assert d["max_pair"] == pytest.approx(max(pairs))
    lo, hi = d["value_ci"]
    assert lo <= hi and 0 <= lo <= 1
    assert d["auc_ci"][0] <= d["auc"] <= d["auc_ci"][1] + 0.05


def test_self_pairs_excluded_in_overlapping_sets():
    s = np.array([0.0, 1.0, 2.0, 3.0])
    y = np.array([1, 1, 1, 1])
    prot = np.array([True, True, False, False])
    # Ex. 4 positive gap: AUC({ζ=1,γ=1}, {ζ=1}) over distinct pairs: (0 vs 1,2,3)->0, (1 vs 0,2,3)->1 of 3
    a1, _, _ = components(y, s, prot, "aeg_positive")
    assert a1 == pytest.approx(1 / 6)


# ------------------------------------------------------------------ surrogate (Lemma 1, closed form)

def _data(seed=0, n=60):
    g = torch.Generator().manual_seed(seed)
    y = (torch.rand(n, generator=g) < 0.4).float()
    prot = torch.rand(n, generator=g) < 0.5
    h = torch.randn(n, generator=g, dtype=torch.float64) + y
    return y, prot, h


@pytest.mark.parametrize("variant", ["group", "inter", "intra", "bpsn_bnsp"])
def test_closed_form_and_minmax_equal_pairwise_average(variant):
    c1, c2 = 0.5, 1.0
    y, prot, h = _data()
    in_p, in_q = term_sets(y, prot, variant)
    closed = term_values(h, in_p, in_q, c1, c2)
    sp, sq = scaled_indicators(in_p, in_q, torch.float64)
    for k in range(5):
        P, Q = in_p[:, k], in_q[:, k]
        pair = (c1 * (h[P][:, None] - h[Q][None, :] - c2) ** 2).mean()   # all ordered pairs of P × Q
        assert float(closed[k]) == pytest.approx(float(pair), rel=1e-10)
        mP, mQ = h[P].mean(), h[Q].mean()

        def value(a, b, alpha, printed=False):
            F, G = per_sample_F_G(h, sp, sq, torch.full((5,), a, dtype=h.dtype), torch.full((5,), b, dtype=h.dtype),
                                  c1, c2)
            return float(F[:, k].mean() + alpha * G[:, k].mean() - (1.0 if printed else c1) * alpha ** 2)

        saddle = value(float(mP), float(mQ), float(mP - mQ))
        assert saddle == pytest.approx(float(pair), rel=1e-9)
        # saddle: α* maximises, (a*, b*) minimise
        for d in (-0.3, 0.2):
            assert value(float(mP), float(mQ), float(mP - mQ) + d) < saddle
            assert value(float(mP) + d, float(mQ), float(mP - mQ)) > saddle
            assert value(float(mP), float(mQ) + d, float(mP - mQ)) > saddle
        # the printed "−α²" is not exact when c₁ ≠ 1 (misprint)
        best_printed = max(value(float(mP), float(mQ), a, printed=True) for a in np.linspace(-3, 3, 601))
        if abs(float(mP - mQ)) > 0.05:
            assert abs(best_printed - float(pair)) > 1e-3


@pytest.mark.parametrize("variant", VARIANTS)
def test_lemma2_zero_model_strictly_feasible(variant):
    """h ≡ 0 (w = 0): f₁ = f₂ = 2c₁c₂² ≤ 1 < 1 + κ when c₁c₂² ≤ 0.5."""
    y, prot, h = _data(1)
    in_p, in_q = term_sets(y, prot, variant)
    for c1, c2 in [(0.5, 1.0), (0.125, 2.0), (0.3, 1.2)]:
        f = level_values(torch.zeros_like(h), in_p, in_q, c1, c2)
        assert float(f[1]) == pytest.approx(2 * c1 * c2 ** 2) and float(f[2]) == pytest.approx(2 * c1 * c2 ** 2)
        assert max(float(f[1]), float(f[2])) - (1.0 + 1e-3) < 0          # strictly feasible for any κ ≥ 1e-3
    f = level_values(torch.zeros_like(h), in_p, in_q, 1.0, 1.0)   # c₁ = c₂ = 1 (the experiments) violates it
    assert float(f[1]) == pytest.approx(2.0) and float(f[1]) > 1.0 + 0.5


def test_roc_curve_area_equals_exact_auc(small):
    from app.render.charts.roc import roc_points

    y, s, _ = small
    fpr, tpr = roc_points(s[y == 1], s[y == 0])
    assert np.trapezoid(tpr, fpr) == pytest.approx(auc(y, s), abs=1e-12)   # ties step diagonally = ½

"""Partial-fairness metrics against brute force; interval bookkeeping; the DC split identities."""
import itertools
import math

import numpy as np
import pytest
import torch

from solvers import ConstraintSpec
from solvers.constraints import FairnessData
from solvers.partial import (Intervals, partial_dp, partial_equal_opportunity, partial_equalized_odds,
                             partial_group_auc, partial_sp)


def _kept_brute(h, g, k, pieces):
    idx = [i for i in range(len(h)) if g[i] == k]
    idx.sort(key=lambda i: -h[i])  # stable: ties keep index order
    n = len(idx)
    out = []
    for r, i in enumerate(idx, start=1):
        if any(math.ceil(a * n - 1e-9) < r <= math.ceil(b * n - 1e-9) for a, b in pieces):
            out.append(h[i])
    return out


def _brute(h, g, y, G, pieces, thr=0.0):
    kept = [_kept_brute(h, g, k, pieces) for k in range(G)]
    sp = dp = auc = 0.0
    for k, k2 in itertools.permutations(range(G), 2):
        A, B = kept[k], kept[k2]
        for t in sorted(set(A + B)):
            sp = max(sp, abs(sum(a > t for a in A) / len(A) - sum(b > t for b in B) / len(B)))
        dp = max(dp, abs(sum(a > thr for a in A) / len(A) - sum(b > thr for b in B) / len(B)))
        auc = max(auc, abs(sum(a >= b for a in A for b in B) / (len(A) * len(B)) - 0.5))
    eo = []
    for c in (0, 1):
        cell = [[h[i] for i in range(len(h)) if g[i] == k and y[i] == c] for k in range(G)]
        kc = []
        for k in range(G):
            vals = sorted(cell[k], reverse=True)
            n = len(vals)
            kc.append([v for r, v in enumerate(vals, 1)
                       if any(math.ceil(a * n - 1e-9) < r <= math.ceil(b * n - 1e-9) for a, b in pieces)])
        eo.append(max(abs(sum(a > thr for a in kc[k]) / len(kc[k]) - sum(b > thr for b in kc[k2]) / len(kc[k2]))
                      for k, k2 in itertools.permutations(range(G), 2)))
    return sp, dp, auc, eo[1], max(eo)


@pytest.mark.parametrize("seed,G,pieces", [(0, 2, [[0.05, 0.3]]), (1, 3, [[0.0, 0.25]]),
                                           (2, 2, [[0.0, 0.2], [0.5, 0.7]]), (3, 3, [[0.0, 1.0]])])
def test_metrics_match_brute_force(seed, G, pieces):
    rng = np.random.default_rng(seed)
    n = 150
    g = rng.integers(0, G, n)
    h = np.round(rng.normal(size=n) + 0.4 * g, 1)  # rounding creates ties
    y = rng.integers(0, 2, n)
    sp, dp, auc, eop, eod = _brute(list(h), list(g), list(y), G, pieces, thr=0.2)
    iv = pieces if len(pieces) > 1 else pieces[0]
    assert partial_sp(h, g, iv, G)["value"] == pytest.approx(sp, abs=1e-12)
    assert partial_dp(h, g, iv, 0.2, G)["value"] == pytest.approx(dp, abs=1e-12)
    assert partial_group_auc(h, g, iv, G)["value"] == pytest.approx(auc, abs=1e-12)
    assert partial_equal_opportunity(h, g, y, iv, 0.2, G) == pytest.approx(eop, abs=1e-12)
    assert partial_equalized_odds(h, g, y, iv, 0.2, G) == pytest.approx(eod, abs=1e-12)


def test_per_group_interval_metric_uses_each_groups_own_interval():
    rng = np.random.default_rng(5)
    g = np.repeat([0, 1], 200)
    h = rng.normal(size=400)
    iv = {"a": [0.0, 0.2], "b": [0.1, 0.3]}
    kept = [_kept_brute(list(h), list(g), 0, [[0.0, 0.2]]), _kept_brute(list(h), list(g), 1, [[0.1, 0.3]])]
    ks = max(abs(sum(a > t for a in kept[0]) / len(kept[0]) - sum(b > t for b in kept[1]) / len(kept[1]))
             for t in kept[0] + kept[1])
    assert partial_sp(h, g, iv, group_names=["a", "b"])["value"] == pytest.approx(ks)


def test_identical_distributions_are_fair_and_shifted_ones_are_not():
    rng = np.random.default_rng(0)
    h = rng.normal(size=20000)
    g = rng.integers(0, 2, 20000)
    assert partial_sp(h, g, [0.05, 0.3], 2)["value"] < 0.08
    shifted = h + 2.0 * g
    assert partial_sp(shifted, g, [0.05, 0.3], 2)["value"] > 0.9


def test_grid_bounds_single_interval_are_the_rows_of_problem_15():
    iv = Intervals.build([0.05, 0.30], ["a", "b"])
    q, L, U = iv.grid_bounds(0.1, 10)
    p = 0.05 + q * 0.25
    assert np.allclose(L, p[:, None]) and np.allclose(U, p[:, None] + 0.1 * 0.25)
    assert p.min() == pytest.approx(0.05) and p.max() < 0.30 - 0.1 * 0.25


def test_grid_bounds_union_skip_the_gap():
    iv = Intervals.build([[0.0, 0.1], [0.5, 0.6]], ["a"])
    # c(F) reaches 0.1 (half of |I| = 0.2) at F = 0.1; anything up to 0.5 has the same measure.
    _, L, U = iv.grid_bounds(0.5, 2)  # q in {0, 0.25}
    assert L[:, 0] == pytest.approx([0.0, 0.05])
    assert U[0, 0] == pytest.approx(0.5) and U[1, 0] == pytest.approx(0.55)


def _family(typ, interval, surrogate, tol=0.05, names=("a", "b", "c")):
    fam = ConstraintSpec(type=typ, tolerance=tol, interval=interval, surrogate=surrogate).build()
    fam.bind(list(names), [10, 10, 10])
    return fam


@pytest.mark.parametrize("typ", ["partial_statistical_parity", "partial_demographic_parity"])
@pytest.mark.parametrize("surrogate", ["clipped_linear", "sigmoid"])
@pytest.mark.parametrize("interval", [[0.05, 0.3], [[0.0, 0.1], [0.4, 0.6]], {"a": [0.0, 0.25], "*": [0.1, 0.4]}])
def test_dc_split_identity(typ, surrogate, interval):
    """f⁺ − f⁻ equals the constraint written directly from its definition, on random inputs."""
    torch.manual_seed(0)
    fam = _family(typ, interval, surrogate)
    iv = fam.intervals
    sig = (lambda x: (x + 0.5).clamp(0, 1)) if surrogate == "clipped_linear" else torch.sigmoid
    for trial in range(5):
        group = torch.randint(0, 3, (300,))
        scores = torch.randn(300, dtype=torch.float64) * 2
        data = FairnessData.build(torch.zeros(300), group, 3)
        fam.init_parameters(torch.device("cpu"))
        with torch.no_grad():
            if typ == "partial_statistical_parity":
                fam.theta.add_(torch.randn_like(fam.theta))
        plus, minus = fam.dc_parts(scores, data)
        if typ == "partial_statistical_parity":
            theta = fam.theta.double()
            S = torch.stack([sig(scores[group == k][None, :] - theta[:, None]).mean(1) for k in range(3)], 1)
            L, U = fam.L.double(), fam.U.double()
            direct = torch.cat([(L - S).reshape(-1), (S - U).reshape(-1)])
        else:
            S = torch.stack([sig(scores[group == k] - 0.0).mean() for k in range(3)])
            phi = torch.as_tensor(iv.phi(S.numpy()[:, None])[:, 0])
            direct = torch.stack([phi[a] - phi[b] - fam.tolerance for a, b in fam.pairs.tolist()])
        assert torch.allclose((plus - minus).double(), direct, atol=1e-5)
        assert torch.allclose(fam.surrogate(scores, data).double(), direct, atol=1e-5)


def test_clipped_linear_dc_parts_are_convex_in_the_score():
    """Midpoint convexity of f⁺ and f⁻ in (h, θ) for the clipped-linear splits (Ex. D.3, D.5)."""
    for typ in ("partial_statistical_parity", "partial_demographic_parity"):
        fam = _family(typ, [0.05, 0.3], "clipped_linear")
        group = torch.randint(0, 3, (200,), generator=torch.Generator().manual_seed(1))
        data = FairnessData.build(torch.zeros(200), group, 3)
        for seed in range(5):
            gen = torch.Generator().manual_seed(seed)
            s1, s2 = torch.randn(200, generator=gen, dtype=torch.float64), torch.randn(200, generator=gen, dtype=torch.float64)
            fam.init_parameters(torch.device("cpu"))
            t0 = fam.theta.detach().clone() if typ == "partial_statistical_parity" else torch.zeros(1)
            t1, t2 = t0 + torch.randn(t0.shape, generator=gen), t0 + torch.randn(t0.shape, generator=gen)

            def parts(s, t):
                if typ == "partial_statistical_parity":
                    fam.theta = t.clone()
                return [x.detach().double() for x in fam.dc_parts(s, data)]

            mid = parts((s1 + s2) / 2, (t1 + t2) / 2)
            a, b = parts(s1, t1), parts(s2, t2)
            for j in range(2):
                assert torch.all(mid[j] <= (a[j] + b[j]) / 2 + 1e-6)


def test_feasible_start_at_zero_scores():
    for typ in ("partial_statistical_parity", "partial_demographic_parity"):
        for surrogate in ("clipped_linear", "sigmoid"):
            fam = _family(typ, [0.05, 0.3], surrogate, tol=0.01)
            fam.init_parameters(torch.device("cpu"))
            group = torch.arange(30) % 3
            G = fam.surrogate(torch.zeros(30), FairnessData.build(torch.zeros(30), group, 3))
            assert G.max() <= 1e-6


def test_spec_validation_rejects_bad_intervals():
    with pytest.raises(ValueError):
        ConstraintSpec(type="partial_statistical_parity", tolerance=0.1, interval=[0.3, 0.1])
    with pytest.raises(ValueError):
        ConstraintSpec(type="partial_statistical_parity", tolerance=0.1, interval=[[0.0, 0.3], [0.2, 0.5]])
    ConstraintSpec(type="psp", tolerance=0.1, interval="auto", grid_size=5)

"""The attainability estimates of bench/papers/idca_attainability.py against brute force on small random problems."""
import itertools

import numpy as np
import pytest

from bench.papers.idca_attainability import band_share, correct_by_count, noise_ceiling, pdp_relaxation
from solvers.partial import partial_dp, partial_sp

INTERVAL = [0.1, 0.6]


def cut_shift(scores: np.ndarray, r: int) -> float:
    """The shift that puts exactly the r highest of ``scores`` above 0."""
    top = np.sort(scores)[::-1]
    return -(top[r - 1] - 1e-9) if r else -(top[0] + 1.0)


def test_correct_by_count_is_the_accuracy_of_each_cut():
    rng = np.random.default_rng(0)
    s, y = rng.standard_normal(40), rng.integers(0, 2, 40)
    C = correct_by_count(s, y)
    for r in range(41):
        pred = np.zeros(40, bool)
        pred[np.argsort(-s)[:r]] = True
        assert C[r] == (pred == (y == 1)).sum()


@pytest.mark.parametrize("n", [7, 20, 33])
def test_band_share_is_the_kept_rate_of_partial_dp(n):
    rng = np.random.default_rng(n)
    s = rng.standard_normal(n)
    g = np.zeros(n, np.int64)
    for r in range(n + 1):
        rate = partial_dp(s + cut_shift(s, r), g, INTERVAL, 0.0, 1)["rates"][0]
        assert band_share(np.array([r]), n, INTERVAL)[0] == pytest.approx(rate)


def test_pdp_relaxation_bounds_every_pair_of_group_thresholds():
    """Brute force over every (r0, r1): the relaxation's value equals the best accuracy among the cuts whose
    pDP fairness reaches f, and no cut whose pSP fairness reaches f does better (pSP ≥ pDP)."""
    rng = np.random.default_rng(1)
    n0, n1 = 15, 9
    g = np.r_[np.zeros(n0, np.int64), np.ones(n1, np.int64)]
    s, y = rng.standard_normal(n0 + n1), rng.integers(0, 2, n0 + n1)
    C0, C1 = correct_by_count(s[:n0], y[:n0]), correct_by_count(s[n0:], y[n0:])
    targets = [0.3, 0.6, 0.9]
    bound = pdp_relaxation(C0, C1, INTERVAL, targets)
    for f, b in zip(targets, bound):
        best_pdp = best_psp = 0.0
        for r0, r1 in itertools.product(range(n0 + 1), range(n1 + 1)):
            h = s + np.r_[np.full(n0, cut_shift(s[:n0], r0)), np.full(n1, cut_shift(s[n0:], r1))]
            acc = ((h > 0) == (y == 1)).mean()
            if 1.0 - partial_dp(h, g, INTERVAL, 0.0, 2)["value"] >= f - 1e-12:
                best_pdp = max(best_pdp, acc)
            if 1.0 - partial_sp(h, g, INTERVAL, 2)["value"] >= f - 1e-12:
                best_psp = max(best_psp, acc)
        assert b == pytest.approx(best_pdp)
        assert best_psp <= b + 1e-12


def test_noise_ceiling_falls_with_the_band_size():
    rng = np.random.default_rng(2)
    small = noise_ceiling(np.r_[np.zeros(40, np.int64), np.ones(400, np.int64)], INTERVAL, rng)
    large = noise_ceiling(np.r_[np.zeros(4000, np.int64), np.ones(4000, np.int64)], INTERVAL, rng)
    assert small["mean"] < large["mean"] < 1.0
    assert small["mean"] <= small["p95"] <= small["max"]

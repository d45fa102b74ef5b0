"""bench.quality.linear_oracle: the test-set oracle of two group thresholds (group_thresholds' deterministic rule fitted
on the scored rows) against brute force on small problems."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from bench.quality.linear_oracle import oracle


def _brute(score, y, group, eps):
    """Every pair of thresholds at the scores (and above them all): the best accuracy with exact DP ≤ eps."""
    best = -1.0
    cuts = [np.append(np.unique(score[group == g]), np.inf) for g in (0, 1)]
    for t0, t1 in itertools.product(*cuts):      # test set-up: exhaustive search over a small grid
        pred = np.where(group == 0, score >= t0, score >= t1)
        rates = [pred[group == g].mean() for g in (0, 1)]
        if abs(rates[0] - rates[1]) <= eps + 1e-12:
            best = max(best, float((pred == y).mean()))
    return best


@pytest.mark.parametrize("seed,eps", [(0, 0.0), (1, 0.05), (2, 0.2)])
def test_oracle_matches_brute_force(seed, eps):
    rng = np.random.default_rng(seed)
    n = 40
    group = rng.integers(0, 2, n)
    y = (rng.random(n) < 0.3 + 0.3 * group).astype(np.int64)
    score = rng.normal(size=n) + y + 0.5 * group          # distinct scores: a count is a threshold
    found = oracle(score, y, group, eps)
    assert found["test_accuracy"] == pytest.approx(_brute(score, y, group, eps))
    assert found["test_gap"] <= eps + 1e-12

"""The attainable-keep-rate bench (bench.quality.attainable): its thresholds select the asked share of each group,
and its vectorised metrics equal the protocol's exact population metrics."""
from __future__ import annotations

import numpy as np
import pytest

from bench.quality.attainable import rule_metrics, thresholds
from bench.quality.population import population_metrics


def test_thresholds_select_the_asked_share_of_each_group():
    rng = np.random.default_rng(0)
    g = rng.integers(0, 3, 5000)
    s = rng.normal(size=5000)
    shares = np.array([0.0, 0.1, 0.37, 1.0])
    t = thresholds(s, g, 3, shares)
    for i, share in enumerate(shares):
        for group in range(3):
            m = int((g == group).sum())
            assert int((s[g == group] > t[i, group]).sum()) == int(np.ceil(share * m))


def test_rule_metrics_are_the_protocols_population_metrics():
    rng = np.random.default_rng(1)
    K, n = 4, 3000
    g = rng.integers(0, K, n)
    y = (rng.random(n) < 0.3).astype(np.float64)
    decisions = (rng.random((5, n)) < 0.4).astype(np.float64)
    ours = rule_metrics(decisions, y, np.eye(K)[g])
    for i in range(5):
        exact = population_metrics(decisions[i], y, g, K)
        for name in ("accuracy", "demographic_parity", "equal_opportunity"):
            assert ours[name][i] == pytest.approx(exact[name], abs=1e-12)

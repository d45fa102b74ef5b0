"""Shared fixtures: small generated data (no files)."""
import numpy as np
import pytest


def planted_problem_data(n: int = 4000, seed: int = 0):
    """Two groups a/b; feature x0 is shifted by +1 in group b and drives the label,
    so the unconstrained classifier selects group b far more often (DP gap ≈ 0.33)."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 4))
    X[:, 0] += 1.0 * s
    logit = 2.0 * (2.0 * X[:, 0] + X[:, 1] - 0.5 * X[:, 2]) - 1.0
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    X = np.column_stack([X, s])
    X = (X - X.mean(0)) / X.std(0)
    return X.astype(np.float32), y, s


@pytest.fixture(scope="session")
def planted():
    return planted_problem_data()

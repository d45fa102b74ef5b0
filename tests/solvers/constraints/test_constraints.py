import numpy as np
import torch

from solvers import CONSTRAINTS
from solvers.constraints import FairnessData


def test_surrogates_are_max_minus_min_over_groups():
    rng = np.random.default_rng(0)
    n, k = 300, 4
    group = rng.integers(0, k, n)
    y = rng.integers(0, 2, n)
    f = rng.normal(size=n)
    data = FairnessData.build(torch.tensor(y, dtype=torch.float32), torch.tensor(group), k)
    s = 1 / (1 + np.exp(-f))
    dp = CONSTRAINTS.get("demographic_parity")(0.1)
    rates = np.array([s[group == g].mean() for g in range(k)])
    got = dp.surrogate(torch.tensor(f, dtype=torch.float32), data)
    assert got.shape == (1,) and abs(got.item() - (rates.max() - rates.min() - 0.1)) < 1e-5
    eo = CONSTRAINTS.get("equalized_odds")(0.0, {"aggregate": "separate"})
    gaps = []
    for label in (1, 0):
        r = np.array([s[(group == g) & (y == label)].mean() for g in range(k)])
        gaps.append(r.max() - r.min())
    np.testing.assert_allclose(eo.surrogate(torch.tensor(f, dtype=torch.float32), data).numpy(), gaps, atol=1e-5)
    eo_max = CONSTRAINTS.get("equalized_odds")(0.0)
    assert abs(eo_max.surrogate(torch.tensor(f, dtype=torch.float32), data).item() - max(gaps)) < 1e-5


def test_empty_group_is_ignored():
    data = FairnessData.build(torch.tensor([0.0, 1.0, 1.0]), torch.tensor([0, 0, 2]), 3)  # group 1 empty
    f = torch.tensor([0.0, 0.0, 10.0], requires_grad=True)
    g = CONSTRAINTS.get("dp")(0.0).surrogate(f, data)
    assert torch.isfinite(g).all() and abs(g.item() - (torch.sigmoid(torch.tensor(10.0)).item() - 0.5)) < 1e-6
    g.sum().backward()
    assert torch.isfinite(f.grad).all()

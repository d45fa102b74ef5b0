import numpy as np
import pytest

from solvers import split_indices


def _strata(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    group = rng.choice(3, size=n, p=[0.6, 0.3, 0.1])
    y = (rng.random(n) < np.array([0.2, 0.5, 0.8])[group]).astype(int)
    return 2 * group + y


def test_disjoint_covering_and_sizes():
    strata = _strata()
    tr, va, te = split_indices(strata, test=0.2, validation=0.2, seed=1)
    joined = np.concatenate([tr, va, te])
    assert len(joined) == len(strata) and len(np.unique(joined)) == len(strata)
    assert abs(len(te) - 600) <= 3 and abs(len(va) - 600) <= 3


def test_stratified_by_group_and_label():
    strata = _strata()
    full = np.bincount(strata, minlength=6) / len(strata)
    for idx in split_indices(strata, 0.2, 0.2, seed=3):
        np.testing.assert_allclose(np.bincount(strata[idx], minlength=6) / len(idx), full, atol=0.01)


def test_deterministic_under_seed():
    strata = _strata()
    a, b, c = split_indices(strata, 0.25, 0.1, seed=7), split_indices(strata, 0.25, 0.1, seed=7), \
        split_indices(strata, 0.25, 0.1, seed=8)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[2], c[2])


def test_tiny_strata_fall_back_and_no_validation():
    strata = np.array([0] * 20 + [1] * 20 + [2])  # stratum 2 has one sample
    tr, va, te = split_indices(strata, test=0.3, validation=0.0, seed=0)
    assert va.size == 0
    assert sorted(np.concatenate([tr, te]).tolist()) == list(range(41))


def test_the_stratified_split_draws_as_scikit_learns_train_test_split():
    """``_stratified`` is ``train_test_split(..., stratify=...)`` with each part sorted: on random strata (few and many
    classes, sizes, seeds, fractions, subsets of rows) the same rows, and a ValueError where scikit-learn raises one."""
    from sklearn.model_selection import train_test_split

    from solvers.data.splitting import _stratified

    rng = np.random.default_rng(11)
    raised = 0
    for _ in range(600):
        n = int(rng.integers(2, 300))
        indices = np.sort(rng.choice(n * 2, n, replace=False))
        stratify = rng.integers(0, int(rng.integers(1, 20)), n) * int(rng.choice([1, 3]))
        fraction, seed = float(rng.choice([0.1, 0.2, 0.25, 0.5])), int(rng.integers(0, 10_000))
        try:
            keep, take = train_test_split(indices, test_size=fraction, random_state=seed, shuffle=True,
                                          stratify=stratify)
        except ValueError:
            raised += 1
            with pytest.raises(ValueError):
                _stratified(indices, stratify, fraction, seed)
            continue
        ours = _stratified(indices, stratify, fraction, seed)
        np.testing.assert_array_equal(ours[0], np.sort(keep))
        np.testing.assert_array_equal(ours[1], np.sort(take))
    assert 30 < raised < 570


def test_too_few_rows_are_refused_by_name():
    for n in (0, 1, 2):
        with pytest.raises(ValueError, match="cannot split: too few rows"):
            split_indices(np.zeros(n, dtype=np.int64))

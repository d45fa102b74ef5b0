"""The C&C bench's group grid, split and chance floor (bench/papers/communities_crime.py) on synthetic tables."""
import numpy as np
import pandas as pd
import pytest

from bench.papers.communities_crime import GROUP_COLUMNS, QUANTILES, baseline_split, grid_count, noise_floor, threshold_groups


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.beta(0.6, 2.0, size=(n, 3)), columns=GROUP_COLUMNS)


def test_baseline_split_is_50_25_25_disjoint_and_fixed():
    train, val, test = baseline_split(400)
    assert (len(train), len(val), len(test)) == (200, 100, 100)
    assert len(np.unique(np.concatenate([train, val, test]))) == 400
    again = baseline_split(400)
    assert all(np.array_equal(a, b) for a, b in zip((train, val, test), again))


def test_kept_groups_are_the_strict_grid_counted_two_ways():
    """The membership path (cuts moved one float up, x ≥ cut) and the dense count (x > quantile) agree, and every
    kept group holds more than 1 % of each split."""
    table = _table(600)
    splits = baseline_split(len(table))
    kept, cuts, info = threshold_groups(table, splits, 0.01)
    values = table[GROUP_COLUMNS].to_numpy()
    assert all(len(c) == len(QUANTILES) for c in cuts.values())  # continuous values: no repeated quantile
    assert kept.n_groups == grid_count(values, splits[0], QUANTILES, True, splits, 0.01)
    assert kept.n_groups == next(iter(info["group_count_variants"].values()))
    assert 0 < kept.n_groups < len(QUANTILES) ** 3
    for rows in splits:
        assert (kept.take(rows).counts > 0.01 * len(rows)).all()
    # strictness: each cut is its quantile moved one float up, so x ≥ cut ⇔ x > quantile
    on_cut = cuts[GROUP_COLUMNS[0]][0]
    assert np.nextafter(on_cut, -np.inf) == pytest.approx(np.quantile(values[splits[0], 0], QUANTILES[0]), abs=0)


def test_noise_floor_is_minus_epsilon_without_errors_and_grows_with_them():
    from solvers.constraints.intersectional import Intersectional
    from solvers.membership import threshold_membership
    from solvers.problem import Problem

    table = _table(300, seed=1)
    membership = threshold_membership(table, {"thresholds": {c: [0.05, 0.2] for c in GROUP_COLUMNS}})
    problem = Problem(np.zeros((300, 1)), np.zeros(300), None, membership.names, device="cpu",
                      constraints=[Intersectional(0.01, {"min_group_fraction": 0.0})], membership=membership)
    none = noise_floor(problem, 0.0, 0.01, 50, seed=0)
    assert none["max_median"] == pytest.approx(-0.01) and none["violated_median"] == 0.0
    some = noise_floor(problem, 0.3, 0.01, 50, seed=0)
    assert some["max_median"] > 0.0 and some["max_p90"] >= some["max_median"] >= some["p99_median"]

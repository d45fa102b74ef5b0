"""Good–Turing's repeat share (:mod:`solvers.data.repeats`): what it estimates, by simulation."""
import numpy as np
import pytest

from solvers.data.repeats import mixed_scores, repeat_share


def test_rows_that_never_repeat_give_zero_and_identical_rows_give_one():
    rng = np.random.default_rng(0)
    assert repeat_share(rng.normal(size=(5000, 4))) == 0.0
    assert repeat_share(np.ones((100, 3))) == 1.0
    assert repeat_share(np.empty((0, 3))) == 0.0


@pytest.mark.parametrize("n,N", [(20_000, 48_842), (6_000, 6_172), (20_000, 200_000)])
def test_a_bootstrap_sample_estimates_the_share_of_the_table_it_holds(n, N):
    """n rows drawn with replacement from a table of N distinct rows: on average over samples ρ̂ is within 0.005 of
    the share of the table's rows the sample holds (how often a row of the table repeats a fitting row) and of
    1 − e^{−n/N}; each sample's within 0.03."""
    rng = np.random.default_rng(n + N)
    table = rng.normal(size=(N, 3))
    estimated, held = [], []
    for _ in range(8):
        idx = rng.integers(0, N, n)
        estimated.append(repeat_share(table[idx]))
        held.append(len(np.unique(idx)) / N)
    assert np.mean(estimated) == pytest.approx(np.mean(held), abs=0.005)
    assert np.mean(estimated) == pytest.approx(1 - np.exp(-n / N), abs=0.005)
    assert np.max(np.abs(np.subtract(estimated, held))) < 0.03


def test_on_a_skewed_discrete_population_it_estimates_the_mass_of_the_seen_feature_rows():
    """Features from a Zipf-like law over 30,000 types (some frequent, most rare): ρ̂ of n draws is, on average over
    samples, the population probability of the types the sample holds (Good–Turing's missing mass), within 0.01;
    the naive share of distinct rows among the draws is far off."""
    rng = np.random.default_rng(7)
    types = 30_000
    p = 1.0 / np.arange(1, types + 1) ** 1.1
    p /= p.sum()
    codes = np.arange(types, dtype=np.float64)[:, None] * np.array([[1.0, -2.0]])   # a feature row per type
    estimated, truth = [], []
    for _ in range(20):
        drawn = rng.choice(types, size=5_000, p=p)
        estimated.append(repeat_share(codes[drawn]))
        truth.append(p[np.unique(drawn)].sum())
    assert np.mean(estimated) == pytest.approx(np.mean(truth), abs=0.01)
    assert abs(np.mean(truth) - (1 - len(np.unique(drawn)) / 5_000)) > 0.05


def test_mixed_scores_take_the_in_sample_score_with_the_share_asked():
    rng = np.random.default_rng(1)
    oof, ins = rng.normal(size=20_000), rng.normal(size=20_000) + 10
    assert mixed_scores(oof, ins, 0.0, 0) is oof
    np.testing.assert_array_equal(mixed_scores(oof, ins, 1.0, 0), ins)
    mixed = mixed_scores(oof, ins, 0.3, 0)
    assert np.isin(mixed, oof).sum() + np.isin(mixed, ins).sum() == len(mixed)
    assert (mixed > 5).mean() == pytest.approx(0.3, abs=0.01)
    np.testing.assert_array_equal(mixed, mixed_scores(oof, ins, 0.3, 0))   # seeded


@pytest.mark.parametrize("dtype,columns", [(np.float64, 105), (np.float32, 7), (np.int16, 3), (np.int8, 5)])
def test_row_counts_are_exact_whatever_the_row_width(dtype, columns):
    """The hashed count of each row's copies equals a count by sorting the rows' bytes, on rows with many repeats,
    for 8-, 4-, 2- and 1-byte words."""
    from solvers.data.repeats import _sorted_counts, row_counts

    rng = np.random.default_rng(columns)
    types = rng.integers(0, 50, size=(2000, columns)).astype(dtype)
    X = types[rng.integers(0, 2000, 1500)]
    counts = row_counts(X)
    np.testing.assert_array_equal(counts, _sorted_counts(X.view(np.uint8)))
    assert counts.max() > 1 and (counts == 1).any()


def test_rows_whose_hashes_collide_are_still_counted_exactly(monkeypatch):
    """Multipliers of 0 give every row the same hash: the word-for-word check finds the distinct rows and the count
    falls back to the sort of the rows' bytes."""
    from solvers.data import repeats

    rng = np.random.default_rng(3)
    X = rng.integers(0, 2, size=(400, 4)).astype(np.float64)
    exact = repeats._sorted_counts(X.view(np.uint8))
    monkeypatch.setattr(repeats, "_MULTIPLIERS", np.zeros(4096, dtype=np.uint64))
    np.testing.assert_array_equal(repeats.row_counts(X), exact)
    assert repeats.repeat_share(X) == 1.0 - np.count_nonzero(exact == 1) / len(X)

import numpy as np
import pandas as pd
import pytest

from solvers import GroupRule, TableEncoder, build_groups, encode_labels
from solvers.encoding import MISSING


def test_standardisation_uses_train_statistics_only():
    train = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    test = pd.DataFrame({"x": [100.0, 2.0]})
    enc = TableEncoder(["x"]).fit(train)
    out = enc.transform(test)
    mean, std = 2.0, np.std([1.0, 2.0, 3.0])
    np.testing.assert_allclose(out[:, 0], [(100.0 - mean) / std, 0.0], rtol=1e-6)
    assert enc.feature_names == ["x"]


def test_constant_column_std_one_and_binary_int_kept():
    df = pd.DataFrame({"c": [5.0, 5.0, 5.0], "b": [0, 1, 1]})
    enc = TableEncoder(["c", "b"]).fit(df)
    out = enc.transform(pd.DataFrame({"c": [6.0], "b": [1]}))
    np.testing.assert_allclose(out, [[1.0, 1.0]])


def test_one_hot_fitted_on_train_unseen_category_all_zero():
    train = pd.DataFrame({"color": ["red", " blue", "red"]})
    test = pd.DataFrame({"color": ["green", "blue ", "red"]})
    enc = TableEncoder(["color"]).fit(train)
    assert enc.feature_names == ["color=blue", "color=red"]
    np.testing.assert_array_equal(enc.transform(test), [[0, 0], [1, 0], [0, 1]])


def test_missing_value_policy():
    train = pd.DataFrame({"x": [1.0, np.nan, 3.0, 10.0], "cat": ["a", None, "b", "a"]})
    enc = TableEncoder(["x", "cat"]).fit(train)
    assert enc.feature_names == ["x", "x__missing", "cat=__missing__", "cat=a", "cat=b"]
    out = enc.transform(train)
    filled = np.array([1.0, 3.0, 3.0, 10.0])  # NaN -> train median of observed (1, 3, 10) = 3
    np.testing.assert_allclose(out[:, 0], (filled - filled.mean()) / filled.std(), rtol=1e-6)
    np.testing.assert_array_equal(out[:, 1], [0, 1, 0, 0])
    np.testing.assert_array_equal(out[1, 2:], [1, 0, 0])
    # column without NaN in train gets no indicator; NaN at transform time -> median
    enc2 = TableEncoder(["x"]).fit(pd.DataFrame({"x": [1.0, 2.0, 4.0]}))
    assert enc2.feature_names == ["x"]
    z = enc2.transform(pd.DataFrame({"x": [np.nan]}))[0, 0]
    assert z == pytest.approx((2.0 - 7 / 3) / np.std([1.0, 2.0, 4.0]), rel=1e-5)


def test_encoder_round_trips_through_dict():
    df = pd.DataFrame({"x": [1.0, np.nan, 3.0], "c": ["u", "v", "u"]})
    enc = TableEncoder(["x", "c"]).fit(df)
    np.testing.assert_array_equal(TableEncoder.from_dict(enc.to_dict()).transform(df), enc.transform(df))


def test_group_rule_values_with_other():
    df = pd.DataFrame({"race": [" White", "Black", "Asian", None, "White"]})
    rule = GroupRule(values={"White": ["White"], "Black": ["Black"]}, other="Other")
    codes, names = build_groups(df, ["race"], {"race": rule})
    assert [names[c] for c in codes] == ["White", "Black", "Other", "Other", "White"]


def test_group_rule_ranges_with_other():
    df = pd.DataFrame({"age": [18, 25, 59.5, 60, np.nan]})
    rule = GroupRule(ranges={"<25": (None, 25), "25-60": (25, 60)}, other="60+")
    codes, names = build_groups(df, ["age"], {"age": rule})
    assert [names[c] for c in codes] == ["<25", "25-60", "25-60", "60+", "60+"]


def test_group_rule_needs_exactly_one_of_values_ranges():
    with pytest.raises(ValueError):
        GroupRule()
    with pytest.raises(ValueError):
        GroupRule(values={"a": [1]}, ranges={"b": (0, 1)})


def test_intersections_of_two_columns():
    df = pd.DataFrame({"sex": ["F", "M", "F", "M", "F"], "age": [20, 30, 40, 50, 30]})
    rule = GroupRule(ranges={"young": (None, 35)}, other="old")
    codes, names = build_groups(df, ["sex", "age"], {"age": rule})
    assert [names[c] for c in codes] == ["F & young", "M & young", "F & old", "M & old", "F & young"]
    assert len(names) == 4


def test_label_encoding_strips_and_matches_numbers():
    assert encode_labels(pd.Series([" >50K", "<=50K", ">50K"]), ">50K").tolist() == [1, 0, 1]
    assert encode_labels(pd.Series([1, 0, 1]), "1").tolist() == [1, 0, 1]
    assert encode_labels(pd.Series([1.0, 0.0, np.nan]), 1).tolist() == [1, 0, 0]
    assert encode_labels(pd.Series([True, False]), True).tolist() == [1, 0]
    assert MISSING == "__missing__"


def test_build_groups_counts_few_combinations_as_np_unique_sorts_them():
    """Few column-value combinations take a bincount instead of np.unique's sort: the same index and names,
    intersections unobserved left out, in either case (many combinations: the sort)."""
    rng = np.random.default_rng(0)
    for n, levels in ((5000, 4), (300, 50)):  # 4³ ≤ n: bincount; 50³ > n and > 2¹⁶: np.unique
        table = pd.DataFrame({c: rng.integers(0, levels, n) for c in "abc"})
        table.loc[table.a == 1, "b"] = 2  # some intersections never occur
        index, names = build_groups(table, ["a", "b", "c"])
        keys = table.a * levels * levels + table.b * levels + table.c
        observed, expected = np.unique(keys, return_inverse=True)
        assert np.array_equal(index, expected.reshape(-1))
        assert names == [f"{k // levels // levels} & {k // levels % levels} & {k % levels}" for k in observed]

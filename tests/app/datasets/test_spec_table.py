"""A job spec checked against the upload profile's distinct values answers exactly as against the table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from app.datasets import storage
from contextlib import contextmanager
from types import SimpleNamespace
from unittest import mock

from app.datasets import spec_table as st
from app.datasets.spec_table import distinct_value_table
from app.datasets.table_profile import VALUES_CAP, TableProfile
from solvers import ProblemSpec, SpecError, check_spec_against_table
from solvers.spec import value_counts
from bench.common.datagen import planted_table

BASE = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"],
        "constraints": [{"type": "demographic_parity", "tolerance": 0.05}]}
CASES = [
    {},
    {"target": "nope"},
    {"positive_label": "yes"},
    {"target": "constant"},
    {"target": "flag", "positive_label": True},
    {"target": "flag", "positive_label": "True"},
    {"target": "score", "positive_label": 1},
    {"target": "score", "positive_label": 1.0},
    {"target": "score", "positive_label": 1, "binarize": True},  # three values: refused unless binarize (issue 30 #3)
    {"target": "age", "positive_label": 40},
    {"target": "age", "positive_label": 40, "binarize": True},
    {"sensitive": ["sex", "nope"]},
    {"sensitive": ["constant"]},
    {"sensitive": ["workclass"]},  # missing values are a group of their own
    {"sensitive": ["race", "sex"]},
    {"sensitive": ["age"], "group_rules": {"age": {"ranges": {"young": [None, 30], "old": [30, None]}}}},
    {"sensitive": ["age"], "group_rules": {"age": {"ranges": {"ancient": [200, None]}}}},
    {"sensitive": ["sex"], "group_rules": {"sex": {"ranges": {"a": [0, 1]}}}},
    {"sensitive": ["race"], "group_rules": {"race": {"values": {"w": ["White"]}}}},
    {"sensitive": ["race"], "group_rules": {"race": {"values": {"x": ["Martian"]}}}},
    {"sensitive": ["score"]},
    {"sensitive": ["mixed"]},  # numbers in early chunks, text in a later one
    {"sensitive": ["mixed"], "group_rules": {"mixed": {"ranges": {"a": [0, 1]}}}},
    {"sensitive": ["mixed"], "group_rules": {"mixed": {"values": {"one": [1], "x": ["x"]}}}},
    {"features": ["hours-per-week", "income"]},
    {"sensitive": ["sex", "income"]},  # the target as a sensitive column
]


def outcome(spec: ProblemSpec, table: pd.DataFrame, counts=None) -> tuple | None:
    try:
        check_spec_against_table(spec, table, counts)
    except SpecError as exc:
        return exc.loc, exc.msg
    return None


@contextmanager
def mock_path(path):
    """The stored file of a dataset stub is ``path`` (the routers' dataset_path needs settings and storage)."""
    with mock.patch.object(st, "dataset_path", lambda settings, dataset: path), \
            mock.patch.object(storage, "CHUNK_ROWS", 400):  # counted over several chunks
        yield


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A table written as CSV and profiled in several chunks, and the table the worker reads back."""
    frame = planted_table(1500, seed=3)
    rng = np.random.default_rng(3)
    frame["constant"] = "c"
    frame["flag"] = rng.random(len(frame)) < 0.3
    frame["score"] = rng.integers(0, 3, len(frame)).astype(float)
    frame.loc[::97, "score"] = np.nan
    frame["mixed"] = (np.arange(len(frame)) % 4).astype(object)
    frame.loc[len(frame) - 5:, "mixed"] = "x"
    path = tmp_path_factory.mktemp("spec") / "t.csv"
    frame.to_csv(path, index=False)
    storage_chunk, storage.CHUNK_ROWS = storage.CHUNK_ROWS, 400
    try:
        fmt, options, profile = storage.profile_upload(path)
        return profile.schema(), storage.read_table(path, fmt, options)
    finally:
        storage.CHUNK_ROWS = storage_chunk


@pytest.mark.parametrize("change", CASES, ids=[str(c) or "valid" for c in CASES])
def test_stand_in_table_gives_the_tables_answer(stored, change):
    columns, table = stored
    spec = ProblemSpec(**{**BASE, **change})
    stand_in = distinct_value_table(columns, [spec.target, *spec.sensitive])
    assert stand_in is not None and len(stand_in) <= 63  # age: 62 distinct values, not 1,500 rows
    assert outcome(spec, stand_in, lambda column: value_counts(table[column])) == outcome(spec, table)


def test_a_target_of_more_than_two_values_needs_binarize(stored, tmp_path):
    """Issue 30 item 3: ``target: "age", positive_label: 40`` was trained as "is 40" without a word."""
    columns, table = stored
    spec = ProblemSpec(**{**BASE, "target": "age", "positive_label": 40})
    stand_in = distinct_value_table(columns, [spec.target, *spec.sensitive])
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    dataset = SimpleNamespace(format="csv", read_options={}, stored_name="t.csv")
    counts = st.counts_of(SimpleNamespace(), dataset)
    with mock_path(path):
        assert counts("age").equals(value_counts(table["age"]))  # chunk by chunk = the whole column's
        with pytest.raises(SpecError) as err:
            check_spec_against_table(spec, stand_in, counts)
    top = table["age"].value_counts()
    assert err.value.loc == ("positive_label",)
    assert f"{len(top)} distinct values, not 2" in err.value.msg and '"binarize": true' in err.value.msg
    assert f"{top.index[0]}: {top.iloc[0]}" in err.value.msg  # the most frequent value with its count
    check_spec_against_table(spec.model_copy(update={"binarize": True}), stand_in, counts)


def test_values_are_kept_only_when_few_and_exact():
    frame = pd.DataFrame({"many": np.arange(VALUES_CAP + 1), "few": np.arange(VALUES_CAP + 1) % 3,
                          "nul": ["a\x00b"] + ["c"] * VALUES_CAP, "long": ["x" * 2000] + ["c"] * VALUES_CAP})
    columns = {c["name"]: c for c in TableProfile.of(frame).schema()}
    assert sorted(columns["few"]["values"]) == [0, 1, 2]
    assert all("values" not in columns[name] for name in ("many", "nul", "long"))
    assert distinct_value_table(list(columns.values()), ["few", "many"]) is None  # read from the table instead
    assert distinct_value_table(list(columns.values()), ["few", "nope"]) is not None


def test_stand_in_tables_are_kept_per_dataset_and_columns(stored):
    from types import SimpleNamespace

    from app.datasets import spec_table as st

    columns, _ = stored
    one, two = (SimpleNamespace(id=i, sha256="s", columns=columns) for i in ("one", "two"))
    spec = ProblemSpec(**BASE)
    first = st.spec_table(None, one, spec)
    assert st.spec_table(None, one, spec) is first  # built once
    assert st.spec_table(None, two, spec) is not first  # another dataset: its own table
    other = st.spec_table(None, one, ProblemSpec(**{**BASE, "sensitive": ["race"]}))
    assert other is not first and "race" in other and other["race"].notna().all()
    for i in range(st.CACHED + 1):
        st.spec_table(None, SimpleNamespace(id=f"d{i}", sha256="s", columns=columns), spec)
    assert st.spec_table(None, one, spec) is not first  # evicted: the cache is bounded

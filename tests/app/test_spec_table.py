"""A job spec checked against the upload profile's distinct values answers exactly as against the table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from app import storage
from app.spec_table import distinct_value_table
from app.table_profile import VALUES_CAP, TableProfile
from solvers import ProblemSpec, SpecError, check_spec_against_table
from tests.datagen import planted_table

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


def outcome(spec: ProblemSpec, table: pd.DataFrame) -> tuple | None:
    try:
        check_spec_against_table(spec, table)
    except SpecError as exc:
        return exc.loc, exc.msg
    return None


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
    assert outcome(spec, stand_in) == outcome(spec, table)


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

    from app import spec_table as st

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

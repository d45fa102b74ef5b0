"""Upload onboarding: a first line that looks like data is read as data and flagged, ``header: false`` /
``column_names`` read the file, missing-value markers are configurable and counted in the profile.
On the raw published UCI Adult file (no header, ``?`` for missing) and on generated files."""
from __future__ import annotations

import pandas as pd
import pytest

from app.datasets.header_check import first_row_verdict
from app.datasets.read_options import DEFAULT_MISSING, OptionError, upload_options
from app.datasets.storage import DatasetError, load_table, profile_upload
from bench.common.datasets import ADULT_COLUMNS, data_dir

ADULT = data_dir() / "adult.data"
needs_adult = pytest.mark.skipif(not ADULT.exists(), reason="the shared UCI Adult file is not there")


def profile(path, **asked):
    fmt, options, prof = profile_upload(path, asked=upload_options(**asked))
    return options, prof


@needs_adult
def test_adult_as_published_is_read_as_data_then_with_header_false_and_names():
    options, prof = profile(ADULT)
    assert prof.n_rows == 32_561 and list(prof.columns)[:2] == ["column_1", "column_2"]  # no row eaten (issue 30)
    [warning] = options["warnings"]
    assert warning["field"] == "header" and "'39' is a number like the values below it" in warning["message"]
    assert options["header"] is False and "read as the first data row" in warning["message"]
    assert warning["suggestion"] == {"header": False, "column_names": [f"column_{j}" for j in range(1, 16)]}

    options, prof = profile(ADULT, header="false", column_names=",".join(ADULT_COLUMNS))
    assert "warnings" not in options and options["column_names"] == ADULT_COLUMNS
    assert prof.n_rows == 32_561 and list(prof.columns) == ADULT_COLUMNS
    schema = {c["name"]: c for c in prof.schema()}
    assert schema["workclass"]["n_missing"] == 1836 and schema["occupation"]["n_missing"] == 1843
    assert schema["native-country"]["n_missing"] == 583 and schema["age"]["dtype"] == "integer"
    table = load_table(ADULT, "csv", options, "adult")
    assert table.shape == (32_561, 15) and table["workclass"].isna().sum() == 1836
    assert set(table["income"]) == {"<=50K", ">50K"}


@needs_adult
def test_adult_markers_are_configurable():
    options, prof = profile(ADULT, header="false", missing_values="[]")
    assert options["missing_values"] == [] and list(prof.columns) == [f"column_{j}" for j in range(1, 16)]
    assert {c["name"]: c for c in prof.schema()}["column_2"]["n_missing"] == 0  # '?' is a value now


def test_a_real_header_is_not_flagged(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame({"age": [39, 50, 38], "workclass": ["State-gov", "?", "Private"], "hours": [40, 13, 40]}
                 ).to_csv(path, index=False)
    options, prof = profile(path)
    assert "warnings" not in options and options["missing_values"] == list(DEFAULT_MISSING)
    assert {c["name"]: c for c in prof.schema()}["workclass"]["n_missing"] == 1


@pytest.mark.parametrize("rows, flagged", [
    ([["a", "b"], ["1", "x"], ["2", "y"]], False),
    ([["1", "x"], ["1", "y"], ["2", "z"]], True),            # a number over numbers
    ([["red", "x"], ["red", "x"], ["blue", "y"]], True),     # every name is one of its column's values
    ([["id", "x"], ["?", "y"], ["3", "z"]], False),          # markers do not count as values
])
def test_first_row_rule(rows, flagged):
    assert (first_row_verdict(rows, {"?"}) is not None) == flagged


def test_bad_options_name_the_field(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("1,2,3\n4,5,6\n")
    with pytest.raises(DatasetError, match=r"^column_names: 2 names; the file has 3 columns"):
        profile(path, header="false", column_names='["a", "b"]')
    for kwargs, field in (({"column_names": '["a", "a", "b"]'}, "column_names"), ({"header": "maybe"}, "header"),
                          ({"missing_values": '["?", 3]'}, "missing_values"), ({"column_names": "[1"}, "column_names"),
                          ({"missing_values": ",".join(["x"] * 51)}, "missing_values")):
        with pytest.raises(OptionError) as err:
            upload_options(**kwargs)
        assert err.value.field == field


def test_parquet_text_markers(tmp_path):
    path = tmp_path / "t.parquet"
    pd.DataFrame({"job": ["a", "?", " N/A", "b"], "x": [1.0, 2.0, None, 4.0]}).to_parquet(path)
    options, prof = profile(path)
    schema = {c["name"]: c for c in prof.schema()}
    assert schema["job"]["n_missing"] == 2 and schema["x"]["n_missing"] == 1


@pytest.mark.skipif(not (data_dir() / "compas-scores-two-years.csv").exists(), reason="no shared COMPAS file")
def test_compas_duplicate_names_are_renamed_with_column_names():
    path = data_dir() / "compas-scores-two-years.csv"
    options, prof = profile(path)  # renamed by the service (issue 30), or by the caller:
    assert "decile_score.1" in prof.columns and options["warnings"][0]["field"] == "column_names"
    header = path.read_text().splitlines()[0].split(",")
    names = [f"{n}_{i}" if header.count(n) > 1 else n for i, n in enumerate(header)]
    options, prof = profile(path, column_names=names)
    assert prof.n_rows == 7214 and list(prof.columns) == names

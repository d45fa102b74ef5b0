"""Raw files (issue 30, item 9): a first line that looks like data is read as data with generated names, repeated
header names are renamed (``decile_score``, ``decile_score.1``), each with a warning; ``fairsolve audit run`` takes
the upload's header, names, markers and separator options."""
from __future__ import annotations

import pytest

from app.cli import main
from app.datasets.header_check import deduplicated
from app.datasets.read_options import OptionError, upload_options
from app.datasets.storage import DatasetError, load_table, profile_upload
from bench.common.datasets import data_dir
from bench.common.datagen import planted_table

COMPAS = data_dir() / "compas-scores-two-years.csv"


def profile(path, **asked):
    return profile_upload(path, asked=upload_options(**asked))


def test_a_first_line_of_data_is_read_as_data_with_generated_names(tmp_path):
    path = tmp_path / "raw.csv"
    path.write_text("39, State-gov, 77516, <=50K\n50, Self-emp, 83311, <=50K\n38, Private, 215646, >50K\n"
                    "53, Private, 234721, <=50K\n")
    fmt, options, prof = profile(path)
    assert prof.n_rows == 4  # the first row is not eaten as a header
    assert list(prof.columns) == ["column_1", "column_2", "column_3", "column_4"]
    [warning] = options["warnings"]
    assert warning["field"] == "header" and warning["read_as"] == "data" and "column_1 … column_4" in warning["message"]
    table = load_table(path, fmt, options, "raw")
    assert table.shape == (4, 4) and table["column_1"].tolist() == [39, 50, 38, 53]

    fmt, options, prof = profile(path, header="true")  # asked for: the first line names the columns
    assert prof.n_rows == 3 and "warnings" not in options


def test_repeated_header_names_are_renamed_with_a_warning(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("id,decile_score,x,decile_score,decile_score.1\n1,2,3,4,5\n2,3,4,5,6\n")
    fmt, options, prof = profile(path)
    assert list(prof.columns) == ["id", "decile_score", "x", "decile_score.2", "decile_score.1"]
    [warning] = options["warnings"]
    assert warning["field"] == "column_names" and warning["renamed"] == {"4": "decile_score.2"}
    assert load_table(path, fmt, options, "dup")["decile_score.2"].tolist() == [4, 5]
    with pytest.raises(DatasetError, match="no name"):  # an empty name is still refused
        path.write_text("a,,a\n1,2,3\n")
        profile(path)
    assert deduplicated(["a", "a", "a"]) == ["a", "a.1", "a.2"]


@pytest.mark.skipif(not COMPAS.exists(), reason="no shared COMPAS file")
def test_raw_compas_is_accepted_with_its_two_repeats_renamed():
    fmt, options, prof = profile(COMPAS)
    assert prof.n_rows == 7214 and prof.n_columns == 53
    assert {"decile_score", "decile_score.1", "priors_count", "priors_count.1"} <= set(prof.columns)
    assert options["warnings"][0]["renamed"] == {"40": "decile_score.1", "49": "priors_count.1"}


def test_the_separator_option_is_checked():
    assert upload_options(delimiter="\\t")["delimiter"] == "\t" and upload_options(delimiter=";")["delimiter"] == ";"
    for bad in ("ab", "a", '"', "\n"):
        with pytest.raises(OptionError) as err:
            upload_options(delimiter=bad)
        assert err.value.field == "delimiter"


def test_the_cli_takes_the_uploads_reading_options(files, tmp_path, capsys):  # noqa: F811
    frame = planted_table(300, seed=1)
    raw = tmp_path / "raw.csv"
    frame.to_csv(raw, index=False, header=False, sep=";")
    args = ["audit", "run", "--model", str(files / "model.safetensors"), "--metrics",
            '[{"type": "accuracy", "threshold": 0.0}]', "--format", "json"]
    names = ",".join(frame.columns)
    assert main([*args, "--data", str(raw), "--header", "false", "--column-names", names, "--sep", ";"]) == 0
    assert '"n_rows": 300' in capsys.readouterr().out
    # without --header: the first line looks like data, so it is read as data, with generated names (said so)
    assert main([*args, "--data", str(raw), "--sep", ";"]) == 2
    err = capsys.readouterr().err
    assert "read as the first data row" in err and "income" in err  # then the model's missing column is named
    assert main([*args, "--data", str(raw), "--sep", "ab"]) == 2
    assert capsys.readouterr().err.startswith("--sep: must be one character")

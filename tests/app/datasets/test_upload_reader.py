"""Uploads read by Arrow on all cores (issue 33, item 2): the profile equals the line-by-line + pandas one, and a
file Arrow would read differently (or not at all) is checked line by line, its errors naming the line as before."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from app.datasets import storage
from app.datasets.read_options import upload_options
from app.datasets.storage import DatasetError, TableLimits, profile_upload
from bench.common.datagen import planted_table


def planted_csv(sep: str = ",", **to_csv) -> str:
    frame = planted_table(30_000)
    frame["visits"] = np.where(np.arange(len(frame)) % 9 == 0, np.nan, np.arange(len(frame)) % 17)  # ints, missing
    frame["flag"] = np.arange(len(frame)) % 3 == 0
    return frame.to_csv(index=False, sep=sep, **to_csv)


FILES = {
    "planted": planted_csv(),
    "tab-separated": planted_csv("\t"),
    "markers": "age,group,score\n41,a,?\n?,b,2.5\n37,NA,N/A\n29,a,1e3\n",
    "booleans with a missing one": "a,b\nTrue,1\nFalse,?\n,3\n",
    "quoted newline": 'a,b,y\n"x\ny",1,NA\nz,2,?\n',
    "every text quoted (R, UCI bank)": planted_csv(";", quoting=csv.QUOTE_NONNUMERIC),
    "every field quoted": planted_csv(quoting=csv.QUOTE_ALL),
    "every text quoted, crlf": planted_csv(";", quoting=csv.QUOTE_NONNUMERIC, lineterminator="\r\n"),
    "doubled quotes, delimiters and line ends in quotes": 'a,b,y\n"say ""hi"", then\nleave",1,"NA"\n"",2,"?"\n'
                                                          'plain,3,"x"\n',
    "uci spacing": "age, sex, y\n39, Male, 1\n50, Female, 0\n",
    "dates": "d,v\n2020-01-01,1\n2020-01-02,?\n",
}


def profiled(path, arrow: bool, monkeypatch) -> str:
    if not arrow:
        monkeypatch.setattr(storage, "arrow_csv_profile", lambda *a, **k: None)
    fmt, options, profile = profile_upload(path, TableLimits(), upload_options())
    monkeypatch.undo()
    return json.dumps([fmt, options, profile.n_rows, profile.schema(), profile.summary()], default=str, sort_keys=True)


@pytest.mark.parametrize("name", FILES)
def test_the_arrow_profile_equals_the_line_by_line_one(name, tmp_path, monkeypatch):
    path = tmp_path / "table.csv"
    path.write_text(FILES[name])
    assert profiled(path, True, monkeypatch) == profiled(path, False, monkeypatch)


@pytest.mark.parametrize("name,arrow", [("planted", True), ("tab-separated", True), ("markers", True),
                                        ("every text quoted (R, UCI bank)", True), ("every field quoted", True),
                                        ("every text quoted, crlf", True),
                                        ("doubled quotes, delimiters and line ends in quotes", True),
                                        ("uci spacing", False), ("dates", False)])
def test_arrow_reads_the_files_it_reads_as_pandas_does_and_declines_the_others(name, arrow, tmp_path):
    path = tmp_path / "table.csv"
    path.write_text(FILES[name])
    _, options = storage.check_upload(path, TableLimits(), upload_options(), header_only=True)
    assert (storage.arrow_csv_profile(path, options, TableLimits()) is not None) is arrow


@pytest.mark.parametrize("body,message", [
    (b"a,b\n1,2\n3\n", "ragged CSV: line 3 has 1 fields, the header has 2"),
    (b"a,b\n1,2\n3,\xff\n", "not UTF-8 text at line 3"),
    (b"a,b\n1,2\n3,x\x00y\n", "NUL byte at line 3"),
    (b"a,b\n1,2\n3,4\n5,6\n", "more than the limit of 2 rows (line 4)"),
    (b'a,b\n1,"x"y\n', "malformed CSV at line 2"),
    (b'a,b\n1,"xy\n', "malformed CSV at line 2"),
    (b"a,b\n1," + b"x" * 200_000 + b"\n", "malformed CSV at line 2: field larger than field limit"),
])
def test_a_file_arrow_declines_is_refused_naming_its_line(body, message, tmp_path):
    path = tmp_path / "table.csv"
    path.write_bytes(body)
    with pytest.raises(DatasetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        profile_upload(path, TableLimits(max_rows=2), upload_options())


def test_a_line_end_quoted_in_the_header_is_left_to_the_line_by_line_check(tmp_path):
    """Arrow skips the header as a line, not as a row: a header whose quoted name holds a line end is read line by
    line, which refuses the name."""
    path = tmp_path / "table.csv"
    path.write_text('"a\nb",c\n1,2\n3,"x"\n')
    _, options = storage.check_upload(path, TableLimits(), upload_options(), header_only=True)
    assert storage.arrow_csv_profile(path, options, TableLimits()) is None
    with pytest.raises(DatasetError, match="U\\+000A"):
        profile_upload(path, TableLimits(), upload_options())


def test_many_small_blocks_profile_as_one_read_and_types_come_from_the_first_bytes(tmp_path, monkeypatch):
    """Arrow reads small blocks (its read-ahead holds about 40 of them) and the profile takes them in batches: with
    blocks of 4 KiB, batches of 16 KiB and types inferred from the first 64 KiB, the 1.3 MB planted file (hundreds of
    blocks) profiles exactly as the line-by-line reading does; a column that turns float after those first bytes is
    declined by Arrow (its type was inferred there) and profiled line by line, as pandas reads it."""
    monkeypatch.setattr(storage, "ARROW_BLOCK_BYTES", 4 << 10)
    monkeypatch.setattr(storage, "ARROW_BATCH_BYTES", 16 << 10)
    monkeypatch.setattr(storage, "ARROW_INFER_BYTES", 64 << 10)
    path = tmp_path / "table.csv"
    path.write_text(FILES["planted"])
    _, options = storage.check_upload(path, TableLimits(), upload_options(), header_only=True)
    assert storage.arrow_csv_profile(path, options, TableLimits()) is not None
    small = profiled(path, True, monkeypatch)
    assert small == profiled(path, False, monkeypatch)
    late = tmp_path / "late.csv"
    late.write_text("a,b\n" + "".join(f"{i},x\n" for i in range(30_000)) + "2.5,y\n")
    monkeypatch.setattr(storage, "ARROW_BLOCK_BYTES", 4 << 10)
    monkeypatch.setattr(storage, "ARROW_BATCH_BYTES", 16 << 10)
    monkeypatch.setattr(storage, "ARROW_INFER_BYTES", 64 << 10)
    _, options = storage.check_upload(late, TableLimits(), upload_options(), header_only=True)
    assert storage.arrow_csv_profile(late, options, TableLimits()) is None
    _, _, profile = profile_upload(late, TableLimits(), upload_options())
    assert profile.n_rows == 30_001 and profile.schema()[0]["dtype"] == "float"


def parquet_tables(rng: np.random.Generator, n: int) -> dict[str, object]:
    import pandas as pd

    words = rng.choice(["a", "b", " NA", "null ", "?", "dé", "", "x y"], n)
    frame = pd.DataFrame({"ints": rng.integers(-5, 50, n), "floats": np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n)),
                          "words": np.where(rng.random(n) < 0.05, None, words), "flags": rng.random(n) < 0.3,
                          "sparse": pd.array(np.where(rng.random(n) < 0.2, None, rng.integers(0, 9, n)), dtype="Int64")})
    return {"plain": frame, "with an index": frame.set_index("ints"), "every text a marker": frame.assign(words="NA"),
            "dates (pandas profiles them)": frame.assign(when=pd.date_range("2020-01-01", periods=n, freq="h"))}


@pytest.mark.parametrize("name", ["plain", "with an index", "every text a marker", "dates (pandas profiles them)"])
def test_the_arrow_parquet_profile_equals_the_pandas_one(name, tmp_path, monkeypatch):
    """Parquet profiled on Arrow's arrays (markers matched on the distinct texts) equals the pandas chunks' profile,
    over several chunks; a table with dates is left to pandas."""
    monkeypatch.setattr(storage, "CHUNK_ROWS", 700)
    frame = parquet_tables(np.random.default_rng(3), 3000)[name]
    path = tmp_path / "table.parquet"
    frame.to_parquet(path)
    with_arrow = profiled(path, True, monkeypatch)
    monkeypatch.setattr(storage, "CHUNK_ROWS", 700)
    monkeypatch.setattr(storage, "arrow_parquet_profile", lambda *a, **k: None)
    fmt, options, profile = profile_upload(path, TableLimits(), upload_options())
    assert with_arrow == json.dumps([fmt, options, profile.n_rows, profile.schema(), profile.summary()], default=str,
                                    sort_keys=True)
    monkeypatch.undo()
    _, options = storage.check_upload(path, TableLimits(), upload_options(), header_only=True)
    assert (storage.arrow_parquet_profile(path, options, TableLimits()) is not None) is ("dates" not in name)


def test_random_quoted_files_profile_alike_both_ways(tmp_path, monkeypatch):
    """Random tables whose text holds delimiters, quotes, line ends, markers and blanks, written by the csv module
    with each quoting: wherever Arrow takes the file, its profile equals the line-by-line one (and it takes most)."""
    rng = np.random.default_rng(21)
    pieces = np.array(["a", "b c", "x,y", 'say "hi"', "two\nlines", "NA", "?", "", "dé", "7", "1.5"])
    taken = 0
    for i in range(40):
        n = int(rng.integers(2, 60))
        rows = [[str(rng.integers(0, 9)), "".join(rng.choice(pieces, int(rng.integers(1, 3)))),
                 f"{rng.normal():.3f}" if rng.random() < 0.9 else ""] for _ in range(n)]
        quoting = [csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC][i % 3]
        path = tmp_path / f"t{i}.csv"
        with open(path, "w", newline="") as fh:
            writer = csv.writer(fh, quoting=quoting, lineterminator="\r\n" if i % 4 == 0 else "\n")
            writer.writerow(["k", "text", "v"])
            writer.writerows(rows)
        _, options = storage.check_upload(path, TableLimits(), upload_options(), header_only=True)
        if storage.arrow_csv_profile(path, options, TableLimits()) is None:
            continue
        taken += 1
        assert profiled(path, True, monkeypatch) == profiled(path, False, monkeypatch), path.read_text()[:300]
    assert taken >= 30, taken

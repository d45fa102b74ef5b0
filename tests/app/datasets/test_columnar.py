"""The columnar copy of a table as the worker reads it (app.datasets.columnar): the next read maps the copy and
gives the frame the file gives; tables Arrow cannot carry exactly are parsed each time; a deleted dataset's
copies go."""
from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from app.core.settings import Settings
from app.datasets import columnar, storage
from app.datasets.storage import load_table, profile_upload


@pytest.fixture
def settings(tmp_path, monkeypatch):
    s = Settings(FAIRSOLVE_HOME=str(tmp_path / "home"))
    monkeypatch.setattr(columnar, "get_settings", lambda: s)
    storage.forget_frames()
    yield s
    storage.forget_frames()


def _table(tmp_path, text: str, name: str = "t.csv"):
    path = tmp_path / name
    path.write_text(text)
    fmt, options, _ = profile_upload(path)
    return path, fmt, options, hashlib.sha256(path.read_bytes()).hexdigest()


def _csv(rows: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"x": rng.normal(size=rows).round(4), "n": rng.integers(0, 9, rows),
                          "gap": np.where(rng.random(rows) < 0.2, np.nan, rng.integers(0, 5, rows)),
                          "word": rng.choice(["red", "green", "?", ""], rows), "flag": rng.choice([True, False], rows),
                          "y": rng.choice(["<=50K", ">50K"], rows)})
    return frame.to_csv(index=False)


def test_the_second_read_maps_the_copy_and_equals_the_parsed_frame(tmp_path, settings, monkeypatch):
    path, fmt, options, sha = _table(tmp_path, _csv(120_000, 0))   # more than one parser chunk
    parsed = load_table(path, fmt, options, sha, text_as_categories=True)
    [copy] = list((settings.storage_dir / columnar.FOLDER).glob(f"{sha}-*.arrow"))
    storage.forget_frames()                     # a new process: only the copy on disk is shared

    def no_parse(*args, **kwargs):
        raise AssertionError("the file was parsed again")

    monkeypatch.setattr(storage, "read_table", no_parse)
    again = load_table(path, fmt, options, sha, text_as_categories=True)
    pd.testing.assert_frame_equal(again, parsed)
    assert copy.exists() and again is not parsed and isinstance(again["y"].dtype, pd.CategoricalDtype)


def test_an_audits_read_parses_and_leaves_no_copy(tmp_path, settings):
    """Audit runs read text as text (``text_as_categories`` False) under an address-space cap: never a copy."""
    path, fmt, options, sha = _table(tmp_path, _csv(1000, 1))
    assert load_table(path, fmt, options, sha)["y"].dtype == "str"
    assert not list((settings.storage_dir / columnar.FOLDER).glob("*"))


def test_columns_of_python_objects_are_parsed_each_time(tmp_path, settings):
    """Booleans with missing cells are objects in pandas: Arrow would give None for NaN, so no copy is made."""
    path, fmt, options, sha = _table(tmp_path, "a,b,y\nTrue,1,x\n,2,y\nFalse,3,x\n")
    frame = load_table(path, fmt, options, sha, text_as_categories=True)
    assert frame["a"].dtype == object and not columnar.copyable(frame)
    assert not list((settings.storage_dir / columnar.FOLDER).glob("*.arrow"))


def test_other_reading_options_and_names_that_are_not_hashes_get_no_shared_copy(tmp_path, settings):
    path, fmt, options, sha = _table(tmp_path, "a;b\n1;x\n2;y\n", "semi.csv")
    first = load_table(path, fmt, options, sha, text_as_categories=True)
    named = load_table(path, fmt, {**options, "missing_values": ["x"]}, sha, text_as_categories=True)
    assert first["b"].notna().all() and named["b"].isna().sum() == 1       # not the other options' copy
    assert len(list((settings.storage_dir / columnar.FOLDER).glob(f"{sha}-*"))) == 2
    load_table(path, fmt, options, "not-a-hash", text_as_categories=True)
    assert not list((settings.storage_dir / columnar.FOLDER).glob("not-a-hash*"))
    columnar.forget(sha, settings)
    assert not list((settings.storage_dir / columnar.FOLDER).glob("*"))


def test_a_zero_bound_keeps_no_copy(tmp_path, monkeypatch):
    s = Settings(FAIRSOLVE_HOME=str(tmp_path / "home"), FAIRSOLVE_COLUMNAR_CACHE_BYTES=0)
    monkeypatch.setattr(columnar, "get_settings", lambda: s)
    storage.forget_frames()
    path, fmt, options, sha = _table(tmp_path, "a,b\n1,2\n")
    assert load_table(path, fmt, options, sha, text_as_categories=True)["a"].tolist() == [1]
    assert columnar.cache(s) is None and not (s.storage_dir / columnar.FOLDER).exists()
    storage.forget_frames()


def test_a_copy_that_cannot_be_written_or_read_leaves_the_parse(tmp_path, settings, monkeypatch):
    """The copy is an optimisation: a failed write (a full disk) or an unreadable entry falls back to the file."""
    path, fmt, options, sha = _table(tmp_path, "a,b\n1,x\n2,y\n")
    name = columnar.entry_name(path, "any", True)
    frame = load_table(path, fmt, options, "no-copy-here", text_as_categories=True)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("pyarrow.feather.write_feather", full)
    assert not columnar.write_copy(frame, sha, name, settings)
    assert not list((settings.storage_dir / columnar.FOLDER).glob(f"{sha}-{name}*"))
    bad = settings.storage_dir / columnar.FOLDER / f"{sha}-{name}"
    bad.write_bytes(b"not arrow")
    assert columnar.read_copy(sha, name, settings) is None and not bad.exists()


def test_the_frames_kept_in_a_process_are_bounded_in_bytes(tmp_path, settings, monkeypatch):
    """``FAIRSOLVE_TABLE_CACHE_BYTES``: a frame within the bound is kept (the next read is the same object); one
    over it is read again each time (from its columnar copy), and nothing kept exceeds the bound."""
    path, fmt, options, sha = _table(tmp_path, _csv(20_000, 3))
    first = load_table(path, fmt, options, sha, text_as_categories=True)
    assert load_table(path, fmt, options, sha, text_as_categories=True) is first
    bound = int(first.memory_usage(index=True, deep=False).sum()) // 4   # under the parsed and the mapped frame
    monkeypatch.setattr(storage, "_frames", None)
    monkeypatch.setattr(storage, "get_settings", lambda: Settings(FAIRSOLVE_HOME=str(tmp_path / "home"),
                                                                  FAIRSOLVE_TABLE_CACHE_BYTES=bound))
    again = load_table(path, fmt, options, sha, text_as_categories=True)
    assert load_table(path, fmt, options, sha, text_as_categories=True) is not again
    pd.testing.assert_frame_equal(again, first)
    assert storage._frame_cache().nbytes == 0 and storage._frame_cache().max_bytes == bound

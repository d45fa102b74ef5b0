"""The dataset page's group statistics from a chunked pass over the stored file: equal to pandas on the whole
table (sizes, positives, label rates, quintile bins of a numeric column), and the page reads no table."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app import storage
from app.auth import Caller
from app.auth.sessions import SESSION_COOKIE
from app.api.dashboard import install, pages, stats
from app.api.dashboard.pages import page_caller
from app.api.deps import app_settings, get_db
from app.models import Dataset
from app.core.settings import Settings
from app.datasets.table_profile import TableProfile
from bench.common.datagen import planted_table


def whole_table_groups(frame: pd.DataFrame, sensitive: str, label: str, positive: str) -> pd.DataFrame:
    """The oracle: pandas on the whole table (qcut for a numeric column with many values)."""
    col = frame[sensitive]
    if pd.api.types.is_numeric_dtype(col) and col.nunique() > stats.BIN_ABOVE:
        col = pd.qcut(col, q=5, duplicates="drop")
    groups = col.astype("string").fillna(stats.MISSING)
    y = (frame[label].astype("string") == positive).fillna(False).astype("int64")
    out = y.groupby(groups).agg(["size", "sum"])
    return out.rename(columns={"sum": "positives"}).sort_index()


@pytest.mark.parametrize("sensitive", ["sex", "workclass", "age", "hours-per-week"])
def test_chunked_counts_equal_pandas_on_the_whole_table(sensitive):
    frame = planted_table(3000, seed=7)
    frame.loc[frame.index[::37], "income"] = None
    frame.loc[frame.index[::53], "age"] = np.nan
    chunks = [frame.iloc[a:b] for a, b in ((0, 700), (700, 701), (701, 2500), (2500, 3000))]
    counts = stats.pair_counts(chunks, sensitive, "income")
    assert stats.label_values(counts) == [">50K", "<=50K"] or stats.label_values(counts) == ["<=50K", ">50K"]
    table = stats.group_table(counts, ">50K")
    got = pd.DataFrame(table["rows"]).set_index("group")[["size", "positives"]].sort_index()
    want = whole_table_groups(frame, sensitive, "income", ">50K")
    assert table["binned"] == (sensitive in ("age", "hours-per-week"))
    assert got.index.tolist() == want.index.tolist()
    np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())
    assert table["overall_rate"] == pytest.approx((frame["income"] == ">50K").mean())


def test_too_many_pairs_is_a_message_not_a_table():
    frame = pd.DataFrame({"id": np.arange(50), "y": np.arange(50) % 2})
    stats_max, stats.MAX_PAIRS = stats.MAX_PAIRS, 10
    try:
        with pytest.raises(stats.TooManyValues):
            stats.pair_counts([frame], "id", "y")
    finally:
        stats.MAX_PAIRS = stats_max


class OneRow:
    def __init__(self, row):
        self.row = row

    def get(self, model, key, **options):  # with_for_update: a lock the fake has no use for
        return self.row


def test_the_dataset_page_reads_no_table(tmp_path, monkeypatch):
    settings = Settings(FAIRSOLVE_HOME=str(tmp_path))
    settings.ensure_dirs()
    frame = planted_table(500, seed=2)
    path = settings.storage_dir / "datasets" / "d1.csv"
    frame.to_csv(path, index=False)
    profile = TableProfile.of(frame)
    row = Dataset(id="d1", owner="alice", name="adult", format="csv", read_options={}, stored_name="d1.csv",
                  n_rows=500, n_columns=6, size_bytes=path.stat().st_size, columns=profile.schema(),
                  summary=profile.summary(), sha256=hashlib.sha256(path.read_bytes()).hexdigest())

    def no_table(*args, **kwargs):
        raise AssertionError("the dataset page read the whole table")

    for module in (storage, pages, stats):
        for name in ("load_table", "read_table"):
            monkeypatch.setattr(module, name, no_table, raising=False)
    app = FastAPI()
    install(app)
    app.dependency_overrides[get_db] = lambda: OneRow(row)
    app.dependency_overrides[app_settings] = lambda: settings
    app.dependency_overrides[page_caller] = lambda: Caller(owner="alice", key_id="k", admin=False)
    client = TestClient(app, follow_redirects=False, cookies={SESSION_COOKIE: "fss_test"})
    page = client.get("/datasets/d1", params={"sensitive": "sex", "label": "income", "positive": ">50K"})
    assert page.status_code == 200, page.text
    males = int((frame["sex"] == "Male").sum())
    assert f"<td>Male</td><td>{males:,}</td>" in page.text
    assert "quintile" in client.get("/datasets/d1", params={"sensitive": "age", "label": "income"}).text

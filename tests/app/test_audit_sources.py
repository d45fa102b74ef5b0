"""Audit sources: the allow-list of directories and URL prefixes, and cron schedules."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from app.audits.schedule import next_run
from app.audits.sources import SourceError, check_source, read_source
from app.storage import TableLimits


def test_paths_must_resolve_inside_an_allowed_directory(tmp_path):
    allowed, other = tmp_path / "exports", tmp_path / "secret"
    allowed.mkdir(), other.mkdir()
    (allowed / "t.csv").write_text("a,b\n1,2\n3,4\n")
    (other / "s.csv").write_text("a,b\n1,2\n")
    (allowed / "link.csv").symlink_to(other / "s.csv")
    allow = [str(allowed)]
    assert check_source(str(allowed / "t.csv"), allow)
    for bad in (str(allowed / ".." / "secret" / "s.csv"), str(allowed / "link.csv"), "t.csv", "ftp://x/t.csv"):
        with pytest.raises(SourceError):
            check_source(bad, allow)
    with pytest.raises(SourceError, match="disabled"):
        check_source(str(allowed / "t.csv"), [])
    data = read_source(str(allowed / "t.csv"), allow, tmp_path, 1 << 20, TableLimits())
    assert data.n_rows == 2 and len(data.sha256) == 64


def test_urls_need_an_allowed_prefix():
    allow = ["https://data.example.com/exports"]
    assert check_source("https://data.example.com/exports/today.csv", allow)
    for bad in ("https://data.example.com/exports-evil/x.csv", "http://data.example.com/exports/x.csv",
                "https://data.example.com.evil.net/exports/x.csv", "https://u:p@data.example.com/exports/x.csv"):
        with pytest.raises(SourceError):
            check_source(bad, allow)


def test_cron_next_run_and_errors():
    t = datetime(2026, 1, 1, 0, 0, 30, tzinfo=timezone.utc)
    assert next_run("* * * * *", t) == datetime(2026, 1, 1, 0, 1, tzinfo=timezone.utc)
    assert next_run("0 3 * * 1", t) == datetime(2026, 1, 5, 3, 0, tzinfo=timezone.utc)
    with pytest.raises(ValueError, match="invalid cron"):
        next_run("every minute", t)

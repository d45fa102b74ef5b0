"""Audit sources: the allow-list of directories and URL prefixes, and cron schedules."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from app.audits.schedule import next_run
from app.audits.sources import SourceError, check_source, read_source
from app.datasets.storage import TableLimits


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


@pytest.fixture
def file_server(tmp_path):
    """A local HTTP server over ``tmp_path/www`` (``/data/t.csv`` allowed, ``/secret/x.csv`` not) that records
    the paths it was asked for."""
    import functools
    import http.server
    import threading

    root = tmp_path / "www"
    (root / "data").mkdir(parents=True), (root / "secret").mkdir()
    (root / "data" / "t.csv").write_text("a,b\n1,2\n3,4\n")
    (root / "secret" / "x.csv").write_text("a,b\n9,9\n")
    asked: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, fmt, *args):
            asked.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}", asked
    server.shutdown()
    server.server_close()


BYPASSES = ["http://{h}/data/../secret/x.csv", "http://{h}/data/./../secret/x.csv", "http://{h}/data/%2e%2e/secret/x.csv",
            "http://{h}/data/%2E%2E/secret/x.csv", "http://{h}/data/.%2e/secret/x.csv", "http://{h}/data/..%2fsecret/x.csv",
            "HTTP://{h}/data/../secret/x.csv", "http://{h}/data/%252e%252e/secret/x.csv", "http://{h}/data\\..\\secret/x.csv",
            "http://{h}/data/..\\secret/x.csv", "http://{h}/DATA/t.csv", "http://{h}/data-evil/x.csv",
            "http://user@{h}/data/t.csv"]


@pytest.mark.parametrize("template", BYPASSES)
def test_url_bypasses_are_normalised_before_the_prefix_check(file_server, tmp_path, template):
    host, asked = file_server
    allow = [f"http://{host}/data"]
    with pytest.raises(SourceError):
        read_source(template.format(h=host), allow, tmp_path, 1 << 20, TableLimits())
    assert asked == []  # refused before anything was fetched


@pytest.mark.parametrize("source, prefix", [
    ("http://{h}/data/./t.csv", "http://{h}/data"), ("HTTP://{h}/data/x/../t.csv", "http://{h}/data/"),
    ("http://{h}/data/%2e/t.csv", "HTTP://{h}/data"), ("http://{h}/data/t.csv", "http://{h}"),
])
def test_a_url_is_fetched_exactly_as_checked(file_server, tmp_path, source, prefix):
    host, asked = file_server
    data = read_source(source.format(h=host), [prefix.format(h=host)], tmp_path, 1 << 20, TableLimits())
    assert data.n_rows == 2 and asked == ["/data/t.csv"]


def test_canonical_urls_compare_scheme_host_and_port_case_blind():
    allow = ["HTTPS://Data.Example.com:443/exports/"]
    assert check_source("https://data.example.com./exports/a/../b.csv", allow) == "https://data.example.com/exports/b.csv"
    # a dot segment above the root stays at the root (RFC 3986), and the normalised URL is the one fetched
    assert check_source("https://data.example.com/%2e%2e/exports/b.csv", allow) == "https://data.example.com/exports/b.csv"
    for bad in ("https://data.example.com:8443/exports/b.csv", "https://data.example.com/exports/../b.csv",
                "http://data.example.com/exports/b.csv"):
        with pytest.raises(SourceError):
            check_source(bad, allow)


def test_file_path_bypasses(tmp_path):
    allowed, other = tmp_path / "exports", tmp_path / "secret"
    allowed.mkdir(), other.mkdir()
    (other / "s.csv").write_text("a,b\n1,2\n")
    (allowed / "t.csv").write_text("a,b\n1,2\n3,4\n")
    allow = [str(allowed) + "/./"]
    for bad in (f"{allowed}/./../secret/s.csv", f"{allowed}/sub/../../secret/s.csv", f"{allowed}/../secret/s.csv",
                "./exports/t.csv", f"{allowed}/t.csv\x00", f"FILE://{allowed}/t.csv", f"{allowed}-evil/t.csv"):
        with pytest.raises(SourceError):
            check_source(bad, allow)
    assert check_source(f"{allowed}/./sub/../t.csv", allow) == str(allowed / "t.csv")

"""Where an audit's data comes from: one of the owner's datasets, or a server path / URL on the
allow-list ``FAIRSOLVE_AUDIT_SOURCES`` (comma-separated directories and URL prefixes; empty by
default, which refuses every source). A source is re-read at each run, so fresh data is audited.

A path is allowed when its real path (symbolic links and ``..`` resolved) lies inside an allowed
directory; a URL when it has an allowed prefix's scheme and host and its path starts at a path
boundary of the prefix's path. URLs are fetched without following redirects (a redirect could leave
the allow-list) and with the upload size limit.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pandas as pd

from app.storage import DatasetError, TableLimits, read_upload, stream_to_disk


class SourceError(ValueError):
    """A source that is not allowed or cannot be read; the message says why."""


@dataclass
class Data:
    table: pd.DataFrame
    sha256: str
    n_rows: int


def _is_url(source: str) -> bool:
    return urlsplit(source).scheme in ("http", "https")


def _url_allowed(source: str, prefix: str) -> bool:
    s, p = urlsplit(source), urlsplit(prefix)
    if (s.scheme, s.netloc.lower()) != (p.scheme, p.netloc.lower()) or s.username or s.password:
        return False
    base = p.path if p.path.endswith("/") else p.path + "/"
    return s.path == p.path or s.path.startswith(base) or (p.path in ("", "/"))


def check_source(source: str, allow: list[str]) -> str:
    """``source`` if the allow-list admits it, else :class:`SourceError` saying why."""
    if not allow:
        raise SourceError("sources are disabled on this server (FAIRSOLVE_AUDIT_SOURCES is empty); use dataset_id")
    if _is_url(source):
        if any(_is_url(p) and _url_allowed(source, p) for p in allow):
            return source
        raise SourceError("the URL is not under an allowed prefix of FAIRSOLVE_AUDIT_SOURCES")
    if "://" in source:
        raise SourceError("only http(s) URLs and server file paths are supported")
    path = Path(source)
    if not path.is_absolute():
        raise SourceError("a file path must be absolute")
    real = path.resolve()
    if any(real.is_relative_to(Path(p).resolve()) for p in allow if not _is_url(p)):
        return source
    raise SourceError("the path is not inside an allowed directory of FAIRSOLVE_AUDIT_SOURCES")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def read_source(source: str, allow: list[str], tmp_dir: Path, max_bytes: int, limits: TableLimits) -> Data:
    """Check ``source`` against the allow-list (again: it may have changed) and read it as CSV / Parquet."""
    check_source(source, allow)
    tmp = None
    try:
        if _is_url(source):
            tmp = tmp_dir / f"audit-{hashlib.sha256(source.encode()).hexdigest()[:16]}-{id(source)}"
            with httpx.stream("GET", source, timeout=60, follow_redirects=False) as response:
                if response.status_code != 200:
                    raise SourceError(f"GET {source} answered {response.status_code}")
                stored = stream_to_disk(_Chunks(response.iter_bytes()), tmp, max_bytes)
            path, digest = tmp, stored.sha256
        else:
            path = Path(source).resolve()
            if not path.is_file():
                raise SourceError(f"no file at {source}")
            if path.stat().st_size > max_bytes:
                raise SourceError(f"the file is larger than the limit of {max_bytes} bytes")
            digest = _sha256(path)
        frame = read_upload(path, limits)
    except DatasetError as exc:
        raise SourceError(str(exc).removeprefix("file: ")) from exc
    except httpx.HTTPError as exc:
        raise SourceError(f"GET {source} failed: {exc}") from exc
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    return Data(frame, digest, len(frame))


class _Chunks:
    """A ``read(n)`` file-like view of an iterator of byte chunks (for :func:`stream_to_disk`)."""

    def __init__(self, chunks) -> None:
        self._chunks = iter(chunks)

    def read(self, _n: int = -1) -> bytes:
        return next(self._chunks, b"")

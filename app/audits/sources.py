"""Where an audit's data comes from: one of the owner's datasets, or a server path / URL on the
allow-list ``FAIRSOLVE_AUDIT_SOURCES`` (comma-separated directories and URL prefixes; empty by
default, which refuses every source). A source is re-read at each run, so fresh data is audited.

Both the source and the allow-list entries are normalised exactly as the source will be read before
they are compared, and the normalised form is what is read: a path is allowed when its real path
(symbolic links, ``.`` and ``..`` resolved) lies inside an allowed directory; a URL when, with scheme
and host lower-cased, the default port made explicit and its path percent-decoded with its dot
segments resolved (``/data/../secret``, ``/data/./x``, ``/data/%2e%2e/secret``), it has an allowed
prefix's scheme, host and port and its path starts at a path boundary of the prefix's path. URLs are fetched without following redirects (a redirect could leave
the allow-list) and with the upload size limit.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

import httpx
import pandas as pd

from app.datasets.storage import DatasetError, TableLimits, read_upload, stream_to_disk


class SourceError(ValueError):
    """A source that is not allowed or cannot be read; the message says why."""


@dataclass
class Data:
    table: pd.DataFrame
    sha256: str
    n_rows: int


def _is_url(source: str) -> bool:
    return urlsplit(source.strip()).scheme.lower() in ("http", "https")


@dataclass(frozen=True)
class _Url:
    """A URL as it will be fetched: scheme and host lower-case (no trailing dot), the port explicit, the path
    percent-decoded with its dot segments (``.``, ``..``, ``%2e%2e``) resolved."""

    scheme: str
    host: str
    port: int
    path: str
    query: str

    def __str__(self) -> str:
        default = {"http": 80, "https": 443}[self.scheme]
        port = "" if self.port == default else f":{self.port}"
        return f"{self.scheme}://{self.host}{port}{quote(self.path, safe='/')}" + (f"?{self.query}" if self.query else "")

    def under(self, prefix: _Url) -> bool:
        """Same scheme, host and port, and the path at or below the prefix's path, at a segment boundary."""
        if (self.scheme, self.host, self.port) != (prefix.scheme, prefix.host, prefix.port):
            return False
        base = prefix.path.rstrip("/") + "/"
        return self.path == prefix.path or self.path.startswith(base)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4 on a decoded path: ``a/./b`` -> ``a/b``, ``a/x/../b`` -> ``a/b``, never above ``/``."""
    out: list[str] = []
    for segment in path.split("/")[1:]:
        if segment == "..":
            out = out[:-1]
        elif segment != ".":
            out.append(segment)
    trailing = path.endswith(("/.", "/..")) and out and out[-1] != ""
    return "/" + "/".join(out) + ("/" if trailing else "")


def canonical_url(source: str) -> _Url:
    """``source`` parsed and normalised as it will be fetched; :class:`SourceError` for what cannot be."""
    try:
        url = httpx.URL(source.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise SourceError(f"not a valid URL: {exc}") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise SourceError("only http(s) URLs with a host are supported")
    if url.userinfo:
        raise SourceError("a URL may not carry a user name or password")
    path = url.path or "/"  # percent-decoded: %2e%2e is '..', %2f is '/'
    if any(c in path for c in ("\\", "%", "\x00")):
        raise SourceError("the URL's path may not contain a backslash, a NUL or a doubly encoded character")
    host = url.host.lower().rstrip(".")
    port = url.port or {"http": 80, "https": 443}[url.scheme]
    return _Url(url.scheme, host, port, _remove_dot_segments(path), url.query.decode("ascii"))


def canonical_path(source: str) -> Path:
    """The real path a server file ``source`` names (symbolic links, ``.`` and ``..`` resolved)."""
    if "\x00" in source:
        raise SourceError("a file path may not contain a NUL character")
    path = Path(source)
    if not path.is_absolute():
        raise SourceError("a file path must be absolute")
    return path.resolve()


def check_source(source: str, allow: list[str]) -> str:
    """``source`` normalised exactly as it will be read (:func:`canonical_url` / :func:`canonical_path`) if that
    lies under an allow-list entry normalised alike, else :class:`SourceError` saying why. The caller reads
    the returned form, never ``source`` itself."""
    if not allow:
        raise SourceError("sources are disabled on this server (FAIRSOLVE_AUDIT_SOURCES is empty); use dataset_id")
    if _is_url(source):
        url = canonical_url(source)
        if any(_is_url(p) and url.under(canonical_url(p)) for p in allow):
            return str(url)
        raise SourceError("the URL is not under an allowed prefix of FAIRSOLVE_AUDIT_SOURCES")
    if "://" in source:
        raise SourceError("only http(s) URLs and server file paths are supported")
    real = canonical_path(source)
    if any(real.is_relative_to(Path(p).resolve()) for p in allow if not _is_url(p)):
        return str(real)
    raise SourceError("the path is not inside an allowed directory of FAIRSOLVE_AUDIT_SOURCES")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def read_source(source: str, allow: list[str], tmp_dir: Path, max_bytes: int, limits: TableLimits) -> Data:
    """Check ``source`` against the allow-list (again: it may have changed) and read it as CSV / Parquet."""
    source = check_source(source, allow)  # the normalised form, read as checked
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
            path = Path(source)
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

"""The storage interface every process uses for datasets, artifacts, checkpoints and audit models.

An object is a file named by a key (``datasets/<id>.csv``, ``artifacts/<job>/<start>/model.safetensors``,
``checkpoints/<job>.<start>.safetensors``, ``models/<id>.safetensors``). A writer asks :meth:`BlobStore.staging`
where to write a new object's file, writes it there, then :meth:`BlobStore.put`\\ s it under its key; a
reader asks :meth:`BlobStore.fetch` for a local file holding the object (checked against its SHA-256 when
the object came from another machine). Two backends: :class:`~app.core.blobstore.local.LocalStore` (a directory,
the embedded default) and :class:`~app.core.blobstore.s3.S3Store` (S3-compatible object storage with a bounded
local read-through cache).
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from pathlib import Path

BLOCK = 1 << 20  # bytes read or written at once when hashing, uploading and downloading


class BlobError(OSError):
    """An object is missing, or its bytes do not match its checksum."""


class ChecksumMismatch(BlobError):
    """The bytes read do not hash to the object's SHA-256: never handed to a reader."""


def sha256_file(path: Path) -> str:
    """SHA-256 of a file, read a block at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


class BlobStore(ABC):
    """Files by key. Keys are relative POSIX paths chosen by the server, never by a client."""

    @abstractmethod
    def staging(self, key: str) -> Path:
        """A local path (its folder made) where the file of a new object ``key`` is written before :meth:`put`."""

    @abstractmethod
    def put(self, key: str, path: Path, sha256: str | None = None) -> None:
        """Store the file at ``path`` (from :meth:`staging`) as ``key``, replacing any object of that key; the file
        is moved, not copied: ``path`` is gone afterwards unless it is the object's own place (local backend)."""

    @abstractmethod
    def fetch(self, key: str, sha256: str | None = None) -> Path:
        """A local file holding object ``key``: checked against ``sha256`` (else the SHA-256 stored with the
        object) when it comes from another machine. Callers read it and never change it."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove object ``key`` (nothing if absent)."""

    @abstractmethod
    def delete_prefix(self, prefix: str) -> None:
        """Remove every object whose key starts with ``prefix`` (``artifacts/<job>/<start>/``,
        ``checkpoints/<job>.``)."""

    def prepare(self) -> None:
        """Make the store usable (the API calls it once at start)."""

"""The embedded default: objects are files under one directory (``FAIRSOLVE_HOME/storage``), as they always were."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from app.core.blobstore.base import BlobStore


class LocalStore(BlobStore):
    """Keys are paths under ``root``; :meth:`staging` is the object's own place, so writing it is storing it.
    Reads are not re-hashed: the file never left this machine (datasets are hashed once, at upload)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / key

    def staging(self, key: str) -> Path:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def put(self, key: str, path: Path, sha256: str | None = None) -> None:
        final = self.staging(key)
        if Path(path) != final:
            os.replace(path, final)

    def fetch(self, key: str, sha256: str | None = None) -> Path:
        return self._path(key)

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def delete_prefix(self, prefix: str) -> None:
        if prefix.endswith("/"):
            shutil.rmtree(self._path(prefix), ignore_errors=True)
            return
        folder, _, start = prefix.rpartition("/")
        for path in (self.root / folder).glob(f"{start}*"):
            if path.is_file():
                path.unlink(missing_ok=True)
            else:
                shutil.rmtree(path, ignore_errors=True)

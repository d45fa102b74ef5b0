"""A bounded local read-through cache of objects, by content: least recently used files go first.

An entry is a file ``<sha256>-<name>`` (content addressed: a key rewritten with new bytes, a checkpoint, is a
new entry and the old one ages out). Its modification time is its last use. After every addition the folder
is trimmed, oldest first, to ``max_bytes``; the entry just added or read is always kept, so an object larger
than the bound is still usable (alone). Several processes of one host share the folder: files appear by an
atomic rename, and a file removed while another process has it open stays readable to that process.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

PARTIAL = ".part"
PARTIAL_STALE_S = 3600.0  # a partial download this old was left by a process that died mid-read


class ReadCache:
    def __init__(self, folder: Path, max_bytes: int) -> None:
        self.folder, self.max_bytes = folder, max_bytes
        folder.mkdir(parents=True, exist_ok=True)

    def entry(self, sha256: str, name: str) -> Path:
        return self.folder / f"{sha256}-{name}"

    def get(self, sha256: str, name: str) -> Path | None:
        """The cached file, marked as used now; None when absent."""
        path = self.entry(sha256, name)
        try:
            os.utime(path)
        except FileNotFoundError:
            return None
        return path

    def partial(self, sha256: str, name: str) -> Path:
        """A file to download into (unique to this process and thread), renamed in place by :meth:`adopt`."""
        return self.folder / f"{sha256}-{name}.{os.getpid()}.{time.monotonic_ns()}{PARTIAL}"

    def adopt(self, path: Path, sha256: str, name: str) -> Path:
        """Move a complete, verified file into the cache, then trim the cache; the entry's path."""
        final = self.entry(sha256, name)
        os.replace(path, final)
        self.trim(keep=final)
        return final

    def trim(self, keep: Path | None = None) -> None:
        """Remove least recently used entries until the cache holds at most ``max_bytes`` (``keep`` stays)."""
        entries, stale = [], time.time() - PARTIAL_STALE_S
        with os.scandir(self.folder) as it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if not e.name.endswith(PARTIAL):
                    entries.append((st.st_mtime, st.st_size, e.path))
                elif st.st_mtime < stale:
                    Path(e.path).unlink(missing_ok=True)
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            if keep is not None and path == str(keep):
                continue
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            total -= size

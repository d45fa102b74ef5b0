"""Files of a process's own folders (upload and spool temporaries)."""

from __future__ import annotations

import os
import time
from pathlib import Path

def clear_stale(folder: Path, older_than_s: float, now: float | None = None) -> list[str]:
    """Delete the plain files of ``folder`` (not its subfolders) last modified more than ``older_than_s``
    seconds before ``now``; their names. The temporary folder of uploads and audit sources: a process
    that crashed mid-upload leaves its partial file there, while a live upload keeps its file's mtime
    recent (each chunk is written as it arrives), so an API starting beside a busy one spares it."""
    cutoff = (time.time() if now is None else now) - older_than_s
    removed = []
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)
                    removed.append(entry.name)
            except FileNotFoundError:  # removed meanwhile (renamed into place, or by another process)
                pass
    return sorted(removed)

"""A stored table's columnar copy, as a job reads it: the frame of :func:`app.datasets.storage.read_table` (text as
categories) written once as an Arrow IPC file (Feather v2, uncompressed) in a bounded local cache, so that the next
job on the same table, in any worker process of the host, maps it instead of parsing the upload again.

**Jobs only.** An audit run reads its table in a child process whose address space is capped
(``FAIRSOLVE_AUDIT_MEMORY_BYTES``, :mod:`app.core.sandbox`): a mapped copy counts there in whole, and so, by my
reading, do the segments Arrow's allocator (mimalloc) reserves; with copies for audits too, the slow graph of
``tests/integration/test_audit_limits.py`` failed on that memory limit (an allocation of 128 MiB refused, 300,000
rows, 768 MiB) instead of reaching its time limit. Audits parse the file as before.

**A copy of the frame, not of the file.** pandas' CSV reader (the reading rules of :mod:`app.datasets.storage`)
infers each chunk's dtypes and the concatenation unites them; the copy holds that result, so reading it gives
the frame the file gives. Only frames whose every column survives the Arrow round trip exactly are copied
(:func:`copyable`: numpy floats, integers and booleans, pandas' text dtype, categoricals of text, datetimes);
a column of Python objects (text mixed with numbers, booleans with missing cells) is left to the parser, and the
table is read from its file each time as before. A test compares both reads on such tables.

**The cache.** Entries ``<sha256>-<key>.arrow`` (:class:`~app.core.blobstore.cache.ReadCache`: least recently
used first, bounded by ``FAIRSOLVE_COLUMNAR_CACHE_BYTES``, written under a temporary name and renamed, so a
reader never sees half a file and several worker processes share the folder), ``key`` a digest of the reading
options, the frame's flavour (text as categories or not) and the file's size. Deleting a dataset removes the
copies of its SHA-256 (:func:`forget`); a table whose identity is not a SHA-256 (a test's or a bench's name) is
never copied.

The copy is mapped (``memory_map``) and converted to pandas; its arrays are read-only, as every caller of
:func:`~app.datasets.storage.load_table` already takes them. Measured (``python -m bench.system.table_reads``,
``bench/system/results/table_reads.md``, in process, medians of 3): the generated table of 2M rows (161 MiB of
CSV) parsed in 2.01 s, its copy written once in 0.19 s and read in 0.054 s (Polars' ``read_csv`` of the CSV
0.67 s); 10M rows (807 MiB) 13.80 s, 1.50 s and 1.46 s (Polars 3.58 s). The copy takes about 1.2 times the
CSV's bytes (eight bytes a number, uncompressed: what makes it mappable).
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa

from app.core.blobstore.cache import ReadCache
from app.core.settings import Settings, get_settings

SHA256 = re.compile(r"^[0-9a-f]{64}$")
FOLDER = "columnar"


def cache(settings: Settings | None = None) -> ReadCache | None:
    """The cache of copies under ``settings``' storage folder, None when its bound is 0."""
    s = settings or get_settings()
    return ReadCache(s.storage_dir / FOLDER, s.columnar_cache_bytes) if s.columnar_cache_bytes > 0 else None


def entry_name(path: Path, options_key: str, text_as_categories: bool) -> str:
    """The part of an entry's name after its SHA-256 (module docstring)."""
    flavour = "categories" if text_as_categories else "text"
    digest = hashlib.sha256(f"{options_key}|{flavour}|{os.path.getsize(path)}".encode()).hexdigest()[:24]
    return f"{digest}.arrow"


def copyable(frame: pd.DataFrame) -> bool:
    """Whether every column of ``frame`` comes back from Arrow unchanged (module docstring)."""
    for dtype in frame.dtypes:
        if isinstance(dtype, pd.CategoricalDtype):
            if not isinstance(dtype.categories.dtype, pd.StringDtype):
                return False
        elif not (isinstance(dtype, pd.StringDtype) or pd.api.types.is_datetime64_dtype(dtype)
                  or (dtype.kind in "fiub" and not isinstance(dtype, pd.api.extensions.ExtensionDtype))):
            return False
    return all(isinstance(name, str) for name in frame.columns)


def read_copy(sha256: str, name: str, settings: Settings | None = None) -> pd.DataFrame | None:
    """The copy's frame, or None when there is none."""
    store = cache(settings)
    path = store.get(sha256, name) if store is not None and SHA256.match(sha256) else None
    if path is None:
        return None
    import pyarrow.feather as feather

    try:
        return feather.read_table(path, memory_map=True).to_pandas()
    except FileNotFoundError:   # trimmed by another process between the lookup and the read
        return None
    except (OSError, pa.ArrowException):   # unreadable (copies are renamed in whole, so not ours): parse instead
        path.unlink(missing_ok=True)
        return None


def write_copy(frame: pd.DataFrame, sha256: str, name: str, settings: Settings | None = None) -> bool:
    """Store ``frame`` as the copy (when :func:`copyable`); whether it was stored. A copy is an optimisation: a
    full disk or a frame Arrow refuses leaves none, and the job goes on."""
    store = cache(settings)
    if store is None or not SHA256.match(sha256) or not copyable(frame):
        return False
    import pyarrow.feather as feather

    partial = store.partial(sha256, name)
    try:
        feather.write_feather(frame, partial, compression="uncompressed")
        store.adopt(partial, sha256, name)
    except (OSError, pa.ArrowException):
        return False
    finally:
        partial.unlink(missing_ok=True)
    return True


def forget(sha256: str, settings: Settings | None = None) -> None:
    """Remove every copy of the table with this SHA-256."""
    store = cache(settings)
    if store is None or not SHA256.match(sha256):
        return
    for path in store.folder.glob(f"{sha256}-*"):
        path.unlink(missing_ok=True)

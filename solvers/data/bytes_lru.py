"""A least-recently-used map bounded by the bytes of its values, shared by threads.

The caches of a worker process that hold whole tables (:mod:`solvers.data.prepared_cache`'s prepared tables,
:func:`app.datasets.storage.load_table`'s frames) keep at most ``max_bytes`` in all, the size of each value given by
its caller: once a new value's size brings the total over the bound, the least recently used values leave first; a
value larger than the bound alone is not kept (its caller still uses it, once).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any


class BytesLRU:
    """key → value, at most ``max_bytes`` of values (module docstring)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = int(max_bytes)
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return sum(size for _, size in self._entries.values())

    def get(self, key: Hashable) -> Any | None:
        """The value kept under ``key`` (now the most recently used), or None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: Hashable, value: Any, size: int) -> None:
        """Keep ``value`` (``size`` bytes) unless it alone is over the bound; the least recently used leave."""
        if size > self.max_bytes:
            return
        with self._lock:
            self._entries[key] = (value, int(size))
            self._entries.move_to_end(key)
            while self.nbytes > self.max_bytes:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

"""The C heap policy of a pool process: large blocks are mapped and unmapped, never kept in the heap.

glibc's malloc serves a request of at least ``M_MMAP_THRESHOLD`` bytes with its own ``mmap`` (returned to the
system by ``free``), but by default it raises that threshold to the size of every such block freed (up to 32 MiB):
after the first 16 MiB activation buffer of an MLP is freed, the next ones come from the heap, where the small
allocations made between them keep the freed space from being reused or returned. Scored by row blocks
(:func:`solvers.models.factory.scores_in_blocks`), one pass of a 64-64 MLP over 2M rows left a process 530 MiB larger
(about n · 64 · 4 bytes; at 10M rows the worker's MLP job peaked 1.6 GiB above the linear job's); with the threshold
fixed at :data:`MMAP_THRESHOLD_BYTES` (which also turns the raising off) the same passes left it where it was.
Other C libraries (musl) have no ``mallopt``: nothing is changed there.
"""
from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3             # glibc's mallopt parameter number (malloc.h)
MMAP_THRESHOLD_BYTES = 1 << 20    # blocks of 1 MiB and more are mapped: an MLP block's activations are 16 MiB


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes for this process (and those it forks); False when the
    C library has no ``mallopt`` or refuses."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, int(threshold)))
    except (OSError, AttributeError):
        return False

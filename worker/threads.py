"""Torch threads of one solve.

A worker pool process computes with cores / concurrency torch threads (``worker.celery_app``). A ``gbdt`` job's
torch work is per-round bookkeeping over n-vectors (objective, constraint values, exact traces, the final
evaluation), where a second thread buys nothing and, on a machine shared with other work, costs its wake-ups
(docs/architecture.md, "Measured choices": torch threads of a gbdt job). A gbdt job therefore runs torch, and
NumPy's BLAS (``threadpoolctl``), on LightGBM's own thread count (``FAIRSOLVE_GBDT_THREADS``, default 1): its
cross-fitting already boosts on every core (:func:`solvers.models.gbdt.model.parallel_fits`), and idle BLAS and
OpenMP threads spinning beside those fits cost a default Adult job (20,000 rows) about a tenth of its CPU time.
Other models keep the process's threads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from solvers import ProblemSpec


@contextmanager
def solve_threads(spec: ProblemSpec) -> Iterator[None]:
    """Within: torch and BLAS on ``FAIRSOLVE_GBDT_THREADS`` threads for a gbdt spec; the process's counts are
    restored after."""
    if spec.model.type != "gbdt":
        yield
        return
    from threadpoolctl import threadpool_limits

    from solvers.models.gbdt.model import num_threads

    before = torch.get_num_threads()
    torch.set_num_threads(num_threads())
    try:
        with threadpool_limits(limits=num_threads(), user_api="blas"):
            yield
    finally:
        torch.set_num_threads(before)

"""Torch threads of one solve.

A worker pool process computes with cores / concurrency torch threads (``worker.celery_app``). A ``gbdt`` job's
torch work is per-round bookkeeping over n-vectors (objective, constraint values, exact traces, the final
evaluation), where a second thread buys nothing and, on a machine shared with other work, costs its wake-ups:
Adult (sex) gbdt ``erm`` in one process, 2-core machine under load ~3 from other work, medians of 3 alternated
runs (``python -m bench.system.torch_threads --reps 3``): 1.82 s with 2 torch threads against 0.77 s with 1
(``group_thresholds`` 4.72 s against 3.80 s). A gbdt job therefore runs torch on LightGBM's own thread count
(``FAIRSOLVE_GBDT_THREADS``, default 1); other models keep the process's threads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from solvers import ProblemSpec


@contextmanager
def solve_threads(spec: ProblemSpec) -> Iterator[None]:
    """Within: torch on ``FAIRSOLVE_GBDT_THREADS`` threads for a gbdt spec; the process's count is restored after."""
    if spec.model.type != "gbdt":
        yield
        return
    from solvers.gbdt.model import num_threads

    before = torch.get_num_threads()
    torch.set_num_threads(num_threads())
    try:
        yield
    finally:
        torch.set_num_threads(before)

"""Torch threads of a gbdt solve (``worker.threads``): the same gbdt jobs in one process, :func:`solvers.run` on
Adult (sex), DP ≤ 0.02, seed 0 (:func:`bench.frontier.spec_for`), alternating torch's intra-op threads between the
worker's former count (cores / concurrency: 2 on a 2-core machine with one pool process) and 1, ``--reps`` times;
the prepared table is kept between runs (:mod:`solvers.prepared_cache`), as a warm worker keeps it. LightGBM runs
on ``FAIRSOLVE_GBDT_THREADS`` threads (default 1) throughout. Prints each run's wall and solver seconds and the
medians per (method, threads)::

    python -m bench.torch_threads --reps 3
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from bench.frontier import DATASETS, spec_for


def main() -> None:
    from solvers import ProblemSpec, run
    from solvers.prepared_cache import PreparedCache

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", nargs="+", type=int, default=[2, 1])
    parser.add_argument("--methods", nargs="+", default=["gbdt erm", "gbdt group_thresholds"])
    args = parser.parse_args()
    table, cache = DATASETS["adult_sex"][0](), PreparedCache(1 << 30)
    walls: dict[tuple[str, int], list[float]] = {}
    for method in args.methods:
        spec = ProblemSpec.model_validate(spec_for("adult_sex", "demographic_parity", 0, method))
        run(table, spec, prepare_with=lambda t, s: cache.prepared("adult", t, s))  # warm: imports, the kept table
        for _ in range(args.reps):
            for threads in args.threads:
                torch.set_num_threads(threads)
                started = time.perf_counter()
                out = run(table, spec, prepare_with=lambda t, s: cache.prepared("adult", t, s))
                wall = time.perf_counter() - started
                walls.setdefault((method, threads), []).append(wall)
                print(f"{method}, {threads} torch threads: {wall:.3f} s wall, solver {out.solver_time_s:.3f} s",
                      flush=True)
    for (method, threads), values in walls.items():
        print(f"median {method}, {threads} torch threads: {statistics.median(values):.3f} s "
              f"({min(values):.3f}-{max(values):.3f})")


if __name__ == "__main__":
    main()

"""Torch threads of a solve (``worker.threads``): the same jobs in one process, :func:`solvers.run` on
Adult (sex) — or the tables of ``--datasets`` — DP ≤ 0.02, seed 0 (:func:`bench.quality.frontier.spec_for`), alternating torch's intra-op threads between the
worker's former count (cores / concurrency: 2 on a 2-core machine with one pool process) and 1, ``--reps`` times;
the prepared table is kept between runs (:mod:`solvers.prepared_cache`), as a warm worker keeps it. LightGBM runs
on ``FAIRSOLVE_GBDT_THREADS`` threads (default 1) throughout. Prints each run's wall and solver seconds and the
medians per (method, threads)::

    python -m bench.system.torch_threads --reps 3
    python -m bench.system.torch_threads --reps 3 --methods "linear erm" "linear auto" "mlp erm" \
        --datasets adult_sex compas_race bank_age
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from bench.quality.frontier import DATASETS, spec_for

#: methods beyond bench.quality.frontier's: label -> (model, solver) of the spec
EXTRA = {"linear erm": ({"type": "linear"}, {"name": "erm"}), "mlp erm": ({"type": "mlp", "hidden": [64, 64]},
                                                                           {"name": "erm"})}


def spec_of(dataset: str, method: str) -> dict:
    spec = spec_for(dataset, "demographic_parity", 0, method)
    if method in EXTRA:
        spec["model"], spec["solver"] = EXTRA[method]
    return spec


def main() -> None:
    from solvers import ProblemSpec, run
    from solvers.prepared_cache import PreparedCache

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", nargs="+", type=int, default=[2, 1])
    parser.add_argument("--methods", nargs="+", default=["gbdt erm", "gbdt group_thresholds"])
    parser.add_argument("--datasets", nargs="+", default=["adult_sex"], choices=list(DATASETS))
    args = parser.parse_args()
    cache = PreparedCache(1 << 30)
    walls: dict[tuple[str, str, int], list[float]] = {}
    for dataset in args.datasets:
        table = DATASETS[dataset][0]()

        def prepared(t, s):
            return cache.prepared(dataset, t, s)

        for method in args.methods:
            spec = ProblemSpec.model_validate(spec_of(dataset, method))
            run(table, spec, prepare_with=prepared)  # warm: imports, the kept table
            for _ in range(args.reps):
                for threads in args.threads:
                    torch.set_num_threads(threads)
                    started = time.perf_counter()
                    out = run(table, spec, prepare_with=prepared)
                    wall = time.perf_counter() - started
                    walls.setdefault((dataset, method, threads), []).append(wall)
                    print(f"{dataset}, {method}, {threads} torch threads: {wall:.3f} s wall, solver "
                          f"{out.solver_time_s:.3f} s", flush=True)
    for (dataset, method, threads), values in walls.items():
        print(f"median {dataset}, {method}, {threads} torch threads: {statistics.median(values):.3f} s "
              f"({min(values):.3f}-{max(values):.3f})")


if __name__ == "__main__":
    main()

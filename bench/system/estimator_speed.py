"""FairClassifier in-process against the service's solve of the same rows (issue 30 item 10).

Adult (sex), DP ≤ 0.02, SSG, linear, seed 0: the service's run (:func:`solvers.run`, what a worker executes, on
the torch threads a worker pool process gets: cores / concurrency, ``--concurrency``) gives ``solver_time_s``;
then :class:`fairsolve.FairClassifier` fits the job's train split (the same rows, spec and seed: the same model)
with its default threads (``n_jobs=None``: 1) and with every core (``n_jobs=-1``: torch's own default before).
Runs alternate, ``--reps`` times; prints each run and the medians, and writes ``--out`` (Markdown)::

    python -m bench.system.estimator_speed --reps 3 --out bench/system/results/estimator_speed.md
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np
import torch

SPEC = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"], "device": "cpu", "seed": 0,
        "constraints": [{"type": "demographic_parity", "tolerance": 0.02}], "solver": {"name": "ssg"},
        "max_iterations": 2000, "split": {"test": 0.2, "validation": 0.05, "seed": 0}}


def main() -> None:
    from bench.common.datasets import adult
    from fairsolve import FairClassifier
    from solvers import ProblemSpec, run
    from solvers.encoding import build_groups, encode_labels
    from solvers.splitting import split_indices

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1,
                        help="the worker's pool size (celery's default: the cores)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    table = adult()
    spec = ProblemSpec.model_validate(SPEC)
    group, _ = build_groups(table, spec.sensitive)
    y = encode_labels(table[spec.target], spec.positive_label)
    train, _, _ = split_indices(2 * group + y, spec.split.test, spec.split.validation, spec.split.seed)
    X, labels, sex = table.drop(columns=[spec.target]).iloc[train], y[train], table["sex"].iloc[train]
    worker_threads = max(1, (os.cpu_count() or 1) // args.concurrency)
    default_threads = torch.get_num_threads()
    times: dict[str, list[float]] = {}

    def record(label: str, seconds: float) -> None:
        times.setdefault(label, []).append(seconds)
        print(f"{label:<40} {seconds:8.2f} s", flush=True)

    for _ in range(args.reps):
        torch.set_num_threads(worker_threads)
        out = run(table, spec)
        torch.set_num_threads(default_threads)
        record(f"service solve ({worker_threads} thread(s))", out.solver_time_s)
        for n_jobs in (None, -1):
            clf = FairClassifier(constraints=SPEC["constraints"], solver="ssg", max_iter=spec.max_iterations,
                                 random_state=0, n_jobs=n_jobs)
            began = time.perf_counter()
            clf.fit(X, labels, sensitive_features=sex)
            record(f"FairClassifier.fit n_jobs={n_jobs} (wall)", time.perf_counter() - began)
            record(f"FairClassifier.fit n_jobs={n_jobs} (solve)", clf.solver_time_s_)
    medians = {k: statistics.median(v) for k, v in times.items()}
    service = medians[f"service solve ({worker_threads} thread(s))"]
    lines = [f"Adult (sex), {len(train):,} training rows, SSG, DP ≤ 0.02, 2,000 iterations, seed 0; {args.reps} "
             f"alternated reps, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end.", "",
             "| run | median s | / service solve |", "|---|---:|---:|"]
    lines += [f"| {k} | {v:.2f} | {v / service:.2f} |" for k, v in medians.items()]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("# FairClassifier against the service's solve\n\n" + "\n".join(lines) + "\n\n"
                            "`python -m bench.system.estimator_speed --reps 3 --out bench/system/results/estimator_speed.md`\n")
    assert np.isfinite(service)


if __name__ == "__main__":
    main()

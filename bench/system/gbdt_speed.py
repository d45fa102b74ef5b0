"""gbdt jobs through the real job queue, this checkout against another one (e.g. ``main`` before a speed-up), side by
side on the same machine state: one stack (uvicorn API + one Celery worker, PostgreSQL + Redis,
:func:`bench.common.stack.start_stack`) from each checkout, each warmed by one small job, then every (dataset, method) job
submitted to both, alternating which goes first, ``--reps`` times. Per job: wall seconds (POST → ``succeeded`` seen
by the client, :func:`bench.quality.frontier.queued`: the API's long-poll, or 0.2 s polling against a checkout without it) and
CPU seconds of the API's and the worker's processes; the test accuracy and gap of both sides must be equal (the speed-up changes no result).

    python -m bench.system.gbdt_speed --base ../main-checkout            # Adult (sex) and COMPAS, erm / group_thresholds / fair_boosting
    python -m bench.system.gbdt_speed --base ../main-checkout --reps 1 --methods "gbdt reductions" --datasets compas_race

Results: ``bench/system/results/gbdt_speed.json`` (every job; ``--out`` elsewhere) and the medians printed. The other checkout runs on this
checkout's virtual environment (its editable install imports the tree it runs from).
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.quality.frontier import DATASETS, RESULTS, queued, spec_for

OUT = RESULTS / "gbdt_speed.json"
METHODS = ("gbdt erm", "gbdt group_thresholds", "gbdt fair_boosting")


def medians(rows: list[dict[str, Any]], datasets: list[str], methods: list[str]) -> list[dict[str, Any]]:
    """Per (dataset, method): median wall and CPU seconds of each side, their ratios (this / base), and whether
    every job of both sides has the same test accuracy and gap."""
    out = []
    for dataset in datasets:
        for method in methods:
            side = {k: [r for r in rows if (r["dataset"], r["method"], r["side"]) == (dataset, method, k)]
                    for k in ("base", "this")}
            if not side["base"] or not side["this"] or any(r.get("error") for r in side["base"] + side["this"]):
                out.append({"dataset": dataset, "method": method, "error": True})
                continue
            entry = {"dataset": dataset, "method": method, "error": False}
            for f in ("wall_s", "cpu_s"):
                base, this = (statistics.median(r[f] for r in side[k]) for k in ("base", "this"))
                entry.update({f"base_{f}": base, f"this_{f}": this, f"{f}_ratio": this / base})
            entry["same_results"] = len({(r["test_accuracy"], r["test_gap"]) for r in side["base"] + side["this"]}) == 1
            out.append(entry)
    return out


def main() -> None:
    import redis

    import bench.common.stack as stack_module
    from bench.system.sweep_throughput import upload
    from solvers import ProblemSpec, prepare

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, type=Path, help="the other checkout's root")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--datasets", nargs="+", default=["adult_sex", "compas_race"], choices=list(DATASETS))
    parser.add_argument("--out", type=Path, default=OUT, help="where the jobs and medians are written")
    args = parser.parse_args()
    kind, seed = "demographic_parity", 0
    tables = {d: DATASETS[d][0]() for d in args.datasets}
    n_test = {d: len(prepare(tables[d], ProblemSpec.model_validate(spec_for(d, kind, seed, "gbdt erm"))).splits["test"])
              for d in args.datasets}
    redis.Redis.from_url(stack_module.REDIS_URL).flushdb()
    ours, stacks, drops, homes, rows = stack_module.ROOT, {}, [], [], []
    try:
        for name, root in (("base", args.base.resolve()), ("this", ours)):
            stack_module.ROOT = root  # the processes run from (and so import) that checkout
            url, drop = stack_module.pg_database()
            drops.append(drop)
            homes.append(tempfile.TemporaryDirectory())
            stacks[name] = stack_module.start_stack(f"speed-{name}", Path(homes[-1].name), url,
                                                    stack_module.REDIS_URL, workers=1)
        stack_module.ROOT = ours
        clients = {k: s.client() for k, s in stacks.items()}
        ids = {k: {d: upload(clients[k], tables[d], d) for d in args.datasets} for k in stacks}
        for k in stacks:  # warm: imports and the table loaded, as on a running service
            for d in args.datasets:
                warm = {**spec_for(d, kind, seed, "gbdt erm"), "model": {"type": "gbdt", "n_estimators": 5}}
                queued(stacks[k], clients[k], ids[k][d], warm, n_test[d])
        for rep in range(args.reps):
            for d in args.datasets:
                for m in args.methods:
                    for k in (("base", "this") if rep % 2 == 0 else ("this", "base")):
                        job = queued(stacks[k], clients[k], ids[k][d], spec_for(d, kind, seed, m), n_test[d])
                        rows.append({"side": k, "dataset": d, "method": m, "rep": rep,
                                     **{f: job.get(f) for f in ("wall_s", "cpu_s", "test_accuracy", "test_gap",
                                                                "solver_time_s", "error")}})
                        print(json.dumps(rows[-1]), flush=True)
    finally:
        stack_module.ROOT = ours
        for s in stacks.values():
            stack_module.stop_stack(s)
        for drop in drops:
            drop()
    summary = medians(rows, args.datasets, args.methods)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"jobs": rows, "medians": summary}, indent=1) + "\n")
    for e in summary:
        if e["error"]:
            print(f"{e['dataset']} {e['method']}: errors (see {args.out.name})")
            continue
        print(f"{e['dataset']} {e['method']}: wall {e['base_wall_s']:.2f} -> {e['this_wall_s']:.2f} s "
              f"({e['wall_s_ratio']:.2f}x), CPU {e['base_cpu_s']:.2f} -> {e['this_cpu_s']:.2f} s "
              f"({e['cpu_s_ratio']:.2f}x), same results: {e['same_results']}")


if __name__ == "__main__":
    main()

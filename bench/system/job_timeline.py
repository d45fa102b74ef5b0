"""Where a default gbdt job's wall goes through the service (issue 29, item 5; issue 33: time what the user waits for).

The population protocol's stack (:class:`bench.quality.population.Context`: API and one Celery worker on PostgreSQL and
Redis) runs the protocol's default job (``auto`` over gbdt, ε = 0.05) on bootstrap samples of a table, each
uploaded as a new dataset, with an idle pause before each POST (so that no earlier job's baseline is still on the
worker). Per job, on one clock: the POST's own answer (spec checks, the feature screen of a new dataset, the
insert and the enqueue), POST sent → started (the worker's ``started_at``; the POST's answer included), started → finished (``finished_at``) against
the solve's own seconds (``solver_time_s``: the rest is the table's read, ``prepare``, the metrics and the stored
result), finished → the client's answer (the long-poll), and the wall from POST to that answer. The first job (the
worker's first) is left out of the medians.

    python -m bench.system.job_timeline [--table adult_sex] [--kind demographic_parity] [--jobs 7]

Writes ``bench/system/results/job_timeline.json`` and ``.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
PARTS = ("post_s", "to_started_s", "started_to_finished_s", "solver_s", "finished_to_answer_s", "wall_s")
IDLE_S = 2.0


def _instant(text: str) -> float:
    stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)).timestamp()


def timeline(table: str, kind: str, jobs: int) -> list[dict[str, float]]:
    """One row of :data:`PARTS` per job (module docstring)."""
    from bench.quality.population import POPULATIONS, Context, bootstrap_rows, spec_for

    context = Context()
    context.start()
    try:
        client, population = context.client, context.population(table)["table"]
        rows = []
        for seed in range(jobs):
            sample = population.iloc[bootstrap_rows(len(population), POPULATIONS[table].sample_rows, seed)]
            answer = client.post("/api/v1/datasets", files={"file": ("sample.csv", sample.to_csv(index=False),
                                                                     "text/csv")})
            answer.raise_for_status()
            spec = {**spec_for(table, "gbdt", kind, 0.05, "default", seed), "dataset_id": answer.json()["id"]}
            time.sleep(IDLE_S)
            sent, started = time.time(), time.perf_counter()
            posted = client.post("/api/v1/jobs", json=spec)
            posted.raise_for_status()
            answered = time.perf_counter()
            job = context.stack.wait_job(client, posted.json()["id"], {"succeeded", "failed"}, timeout=300,
                                         wait_s=25.0)
            wall = time.perf_counter() - started
            if job["status"] != "succeeded":
                raise RuntimeError(f"job {job['id']}: {job.get('error')}")
            begun, ended = _instant(job["started_at"]), _instant(job["finished_at"])
            rows.append({"post_s": answered - started, "to_started_s": begun - sent,
                         "started_to_finished_s": ended - begun, "solver_s": job["result"]["solver_time_s"],
                         "finished_to_answer_s": sent + wall - ended, "wall_s": wall})
            print(seed, {k: round(v, 3) for k, v in rows[-1].items()}, flush=True)
        return rows
    finally:
        context.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", default="adult_sex")
    parser.add_argument("--kind", default="demographic_parity")
    parser.add_argument("--jobs", type=int, default=7)
    parser.add_argument("--output", default="job_timeline")
    args = parser.parse_args(argv)
    rows = timeline(args.table, args.kind, max(args.jobs, 2))
    median = {part: statistics.median(r[part] for r in rows[1:]) for part in PARTS}
    load = os.getloadavg()[0]
    result = {"table": args.table, "kind": args.kind, "jobs": rows, "median": median, "load": load,
              "written": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.output}.json").write_text(json.dumps(result, indent=2))
    ms = {part: f"{1000 * value:.0f}" for part, value in median.items()}
    md = [f"# Where a default gbdt job's wall goes (`python -m bench.system.job_timeline --table {args.table} "
          f"--kind {args.kind} --jobs {len(rows)}`)", "",
          f"{result['written']}; load average {load:.2f}; medians over jobs 2–{len(rows)}, milliseconds "
          "(module docstring: each job a new dataset, an idle pause before its POST).", "",
          "| POST answered | POST sent → started | started → finished | of which the solve | finished → answer | wall |",
          "|---|---|---|---|---|---|",
          f"| {ms['post_s']} | {ms['to_started_s']} | {ms['started_to_finished_s']} | {ms['solver_s']} | "
          f"{ms['finished_to_answer_s']} | {ms['wall_s']} |", ""]
    (RESULTS / f"{args.output}.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()

"""PLADA on Adult (label income, sensitive sex, linear model, DP ≤ 0.02), the spine's figures.

1. Library: solver wall time with a no-op observer vs with the worker's batched
   PostgreSQL trajectory persistence (median of ``--repeats`` runs each): the overhead.
2. Service: a real stack (uvicorn + Celery worker on PostgreSQL + Redis): upload,
   ``POST /jobs`` → ``running`` (worker's started_at − API's created_at) and the job's
   wall time, test accuracy and test DP gap.

Writes ``bench/papers/results/adult_plada.json`` and ``.md``. Run: ``make bench``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from bench.common.datasets import adult

RESULTS = Path(__file__).resolve().parent / "results"
SPEC = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"], "model": {"type": "linear"},
        "objective": "logistic", "constraints": [{"type": "demographic_parity", "tolerance": 0.02}],
        "solver": {"name": "plada", "params": {}}, "split": {"test": 0.2, "validation": 0.2, "seed": 0},
        "max_iterations": 2000, "time_limit_s": 600, "device": "cpu"}


def library_overhead(repeats: int) -> dict:
    """Same solve, twice per repeat: plain observer vs batched persistence into a fresh PostgreSQL DB."""
    from sqlalchemy.orm import sessionmaker

    from app.core.db import make_engine
    from app.models import Dataset, Job
    from solvers import Observer, ProblemSpec, run
    from bench.common.stack import ROOT, pg_database
    from worker.persistence import PersistingObserver

    table = adult()
    spec = ProblemSpec.model_validate(SPEC)
    url, drop = pg_database()
    try:
        subprocess.run([sys.executable, "-m", "alembic", "-x", f"url={url}", "upgrade", "head"], cwd=ROOT,
                       check=True, capture_output=True)
        sessions = sessionmaker(bind=make_engine(url))
        with sessions() as s, s.begin():
            s.add(Dataset(id="d", owner="bench", name="adult", format="csv", stored_name="-", size_bytes=0, sha256="-",
                          n_rows=len(table), n_columns=table.shape[1], columns=[]))
        run(table, spec.model_copy(update={"max_iterations": 20}), Observer())  # warm-up
        plain, persisted, busy, out = [], [], [], None
        for r in range(repeats):
            job_id = f"job{r}"
            with sessions() as s, s.begin():
                s.add(Job(id=job_id, owner="bench", dataset_id="d", spec=SPEC, progress={}))
            observer = PersistingObserver(job_id, sessions)
            pair = [lambda: run(table, spec, Observer()), lambda: run(table, spec, observer)]
            order = (0, 1) if r % 2 == 0 else (1, 0)  # alternate, so drift does not favour one side
            for which in order:
                out = pair[which]()
                (plain if which == 0 else persisted).append(out.solver_time_s)
            busy.append(observer.busy_s / persisted[-1])
            observer.close()
        t_plain, t_persist = statistics.median(plain), statistics.median(persisted)
        return {"solver_time_s_no_persistence": t_plain, "solver_time_s_with_persistence": t_persist,
                "persistence_overhead_pct": 100 * statistics.median(p / q - 1 for p, q in zip(persisted, plain)),
                "time_in_persistence_pct": 100 * statistics.median(busy),
                "runs": {"plain": plain, "persisted": persisted}, "iterations": out.iterations,
                "test_accuracy": out.metrics["test"]["accuracy"],
                "test_demographic_parity": out.metrics["test"]["demographic_parity"],
                "train_demographic_parity": out.metrics["train"]["demographic_parity"]}
    finally:
        drop()


def solver_comparison() -> list[dict]:
    """One run per solver setting on the same split: what the paper default buys against alternatives."""
    from solvers import ProblemSpec, run

    table, rows = adult(), []
    for name, params in (("erm", {}), ("plada", {}), ("plada", {"eta": 0.5}), ("penalty", {"penalty": 2.0})):
        spec = ProblemSpec.model_validate({**SPEC, "solver": {"name": name, "params": params}})
        out = run(table, spec)
        rows.append({"solver": name, "params": params, "iterations": out.iterations,
                     "solver_time_s": out.solver_time_s, "test_accuracy": out.metrics["test"]["accuracy"],
                     "test_demographic_parity": out.metrics["test"]["demographic_parity"],
                     "train_demographic_parity": out.metrics["train"]["demographic_parity"]})
    return rows


def service_run() -> dict:
    """Upload Adult and run the PLADA job through a real API + worker on PostgreSQL and Redis."""
    import redis

    from bench.common.stack import REDIS_URL, pg_database, start_stack, stop_stack

    redis.Redis.from_url(REDIS_URL).flushdb()
    url, drop = pg_database()
    with tempfile.TemporaryDirectory() as home:
        stack = start_stack("bench", Path(home), url, REDIS_URL)
        try:
            with stack.client() as client:
                csv = adult().to_csv(index=False)
                ds = client.post("/api/v1/datasets", files={"file": ("adult.csv", csv, "text/csv")}).json()
                # warm-up job: the worker's first task pays for importing torch
                warm = client.post("/api/v1/jobs", json={**SPEC, "dataset_id": ds["id"], "max_iterations": 5})
                stack.wait_job(client, warm.json()["id"], {"succeeded", "failed"})
                t0 = time.perf_counter()
                job_id = client.post("/api/v1/jobs", json={**SPEC, "dataset_id": ds["id"]}).json()["id"]
                job = stack.wait_job(client, job_id, {"succeeded", "failed"}, timeout=900)
                wall = time.perf_counter() - t0
        finally:
            stop_stack(stack)
            drop()
    assert job["status"] == "succeeded", job["error"]
    created, started = (datetime.fromisoformat(job[k]) for k in ("created_at", "started_at"))
    return {"job_wall_s_submit_to_succeeded": wall, "submit_to_running_s": (started - created).total_seconds(),
            "solver_time_s": job["result"]["solver_time_s"], "iterations": job["result"]["iterations"],
            "test_accuracy": job["metrics"]["test"]["accuracy"],
            "test_demographic_parity": job["metrics"]["test"]["demographic_parity"],
            "test_demographic_parity_by_group": job["metrics"]["test"]["demographic_parity_by_group"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    result = {"spec": SPEC, "library": library_overhead(args.repeats), "service": service_run(),
              "comparison": solver_comparison()}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "adult_plada.json").write_text(json.dumps(result, indent=2))
    lib, svc = result["library"], result["service"]
    md = [
        "# PLADA on Adult (sex, linear, DP ≤ 0.02, paper defaults, 2000 iterations)", "",
        "| figure | value |", "|---|---|",
        f"| solver wall time, no persistence (median of {args.repeats}) | {lib['solver_time_s_no_persistence']:.3f} s |",
        f"| solver wall time, batched PostgreSQL persistence | {lib['solver_time_s_with_persistence']:.3f} s |",
        f"| persistence overhead, median of the paired wall-time ratios − 1 (noisy on a shared 2-core machine) | "
        f"{lib['persistence_overhead_pct']:+.2f} % |",
        f"| persistence overhead, solver time spent inside the persisting observer (rows are written by a thread) | "
        f"{lib['time_in_persistence_pct']:.2f} % |",
        f"| test accuracy | {svc['test_accuracy']:.4f} |",
        f"| test DP gap | {svc['test_demographic_parity']:.4f} |",
        f"| train DP gap | {lib['train_demographic_parity']:.4f} |",
        f"| `POST /jobs` → `running` (PostgreSQL + Redis) | {svc['submit_to_running_s'] * 1000:.0f} ms |",
        f"| `POST /jobs` → `succeeded` (client wall time) | {svc['job_wall_s_submit_to_succeeded']:.2f} s |",
        "", "## Same problem, other settings (library, one run each)", "",
        "| solver | params | iterations | solver time | test accuracy | test DP | train DP |",
        "|---|---|---|---|---|---|---|",
    ]
    md += [f"| {r['solver']} | `{json.dumps(r['params'])}` | {r['iterations']} | {r['solver_time_s']:.2f} s | "
           f"{r['test_accuracy']:.4f} | {r['test_demographic_parity']:.4f} | {r['train_demographic_parity']:.4f} |"
           for r in result["comparison"]]
    (RESULTS / "adult_plada.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()

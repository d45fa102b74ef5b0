"""Scale in rows: Adult resampled with noise to 1M … 10M rows (Parquet, written one chunk at a time), uploaded
to a real API on PostgreSQL + Redis with one Celery worker, profiled, then a linear demographic-parity job with
mini-batches and an MLP job, each in a fresh stack so that every peak belongs to one size.

Figures per size: file size, upload wall time (client's streamed POST to its 201, the profile included), the
API's resident memory before and its peak during the upload (``VmHWM``, reset by writing 5 to
``/proc/<pid>/clear_refs``), the worker's peak resident memory through each job (its Celery pool process,
``VmHWM`` reset before the job, read when it ends; the job's unconstrained baseline, which the worker runs
next, is waited for before the next job), the job's wall time (set-up included), the solver's time and the time per epoch (solver time / (iterations · batch size /
training rows)), test accuracy and demographic parity.

The MLP job is given a number of SGD steps (``--mlp-iterations``, default 1,000 of 4,096 rows), not a share of an
epoch: a 64-64 MLP under SSG's switching steps needs a few hundred steps to leave the constant model whatever the
table's size (on this resampled Adult: constant after 146 steps, balanced accuracy 0.73 after 293 to 586 at 1M rows),
so the 0.05–0.25 epoch of the earlier runs (15 to 73 steps) ended constant at every size. Each size also reports
the test balanced accuracy, whether the exact test DP keeps the tolerance, how exact enforcement ended, and the
worker's peak through the job's unconstrained baseline (``erm``, run next on the same worker).

The MLP job runs the code a ``gpu``-queue worker runs (``worker.tasks.run_job``; the queue only routes it)
with ``device: "cpu"`` when this machine has no GPU (a ``cuda`` job on a host without one fails by design),
and with ``device: "cuda"`` otherwise.

    python -m bench.system.scale_rows [--rows 1000000 10000000] [--batch-size 4096] [--epochs 1] [--mlp-iterations 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import redis

from bench.common.jobs import job_settled
from bench.common.datasets import adult
from bench.system.scale_upload import memory_kib, reset_peak
from bench.common.stack import REDIS_URL, descendants, pg_database, start_stack, stop_stack

RESULTS = Path(__file__).resolve().parent / "results"
NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
WRITE_ROWS = 500_000  # rows generated and written at once


def write_resampled_adult(path: Path, rows: int, seed: int = 0) -> int:
    """``rows`` Adult rows drawn with replacement, numeric columns with ±5% multiplicative noise, written to a
    Parquet file :data:`WRITE_ROWS` rows at a time (never the whole table in memory); the file's size."""
    rng = np.random.default_rng(seed)
    base = adult().reset_index(drop=True)
    writer = None
    try:
        for start in range(0, rows, WRITE_ROWS):
            n = min(WRITE_ROWS, rows - start)
            frame = base.iloc[rng.integers(0, len(base), n)].reset_index(drop=True)
            for col in NUMERIC:
                frame[col] = np.round(frame[col].to_numpy(float) * rng.uniform(0.95, 1.05, n)).astype(np.int64)
            table = pa.Table.from_pandas(frame, preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    return path.stat().st_size


def pool_pids(worker_pid: int) -> list[int]:
    """The Celery worker's pool processes (prefork children: the jobs run there)."""
    return sorted(descendants(worker_pid))


def machine() -> dict:
    """The load average and the memory available now (the machine is shared)."""
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return {"load_average": [round(v, 2) for v in os.getloadavg()],
            "mem_available_gib": round(int(meminfo["MemAvailable"].split()[0]) / 2**20, 1)}


def run_job(stack, client, spec: dict, worker_pid: int, wait_baseline: bool = True) -> dict:
    pids = pool_pids(worker_pid)
    for pid in pids:
        reset_peak(pid)
    at_start = machine()
    t0 = time.perf_counter()
    job = client.post("/api/v1/jobs", json=spec)
    assert job.status_code == 202, job.text
    job_id = job.json()["id"]
    deadline = time.monotonic() + 3600
    job = job_settled(client, job_id, 3600, baseline=False, interval=0.5)
    wall = time.perf_counter() - t0
    peak = max(memory_kib(pid)["VmHWM"] for pid in pool_pids(worker_pid) or pids) / 1024
    t1 = time.perf_counter()
    if wait_baseline:  # the job's unconstrained baseline runs next on the same worker: the next job waits for it
        job = {**job_settled(client, job_id, max(0.0, deadline - time.monotonic()), interval=0.5), "status": job["status"]}
    baseline = job.get("baseline") or {}
    with_baseline = max(memory_kib(pid)["VmHWM"] for pid in pool_pids(worker_pid) or pids) / 1024
    result = job.get("result") or {}
    test = (job.get("metrics") or {}).get("test") or {}
    fairness = (result.get("fairness") or [{}])[0]
    enforcement = result.get("enforcement") or {}
    base_test = ((baseline.get("result") or {}).get("metrics") or {}).get("test") or {}  # its scalars, no DP
    return {"status": job["status"], "error": job.get("error"), "wall_s": wall,
            "iterations": result.get("iterations"), "solver_time_s": result.get("solver_time_s"),
            "stop_reason": result.get("stop_reason"), "worker_peak_mib": peak,
            "worker_peak_with_baseline_mib": with_baseline if wait_baseline else None,
            "baseline": {"status": baseline.get("status"), "wait_s": time.perf_counter() - t1,
                         "test_accuracy": base_test.get("accuracy")} if wait_baseline else None,
            "enforcement": enforcement.get("method"), "enforcement_undone": enforcement.get("undone"),
            "test_accuracy": test.get("accuracy"), "test_balanced_accuracy": test.get("balanced_accuracy"),
            "test_dp": test.get("demographic_parity"), "tolerance": fairness.get("tolerance"),
            "test_dp_kept": fairness.get("kept_on_test"), "warnings": result.get("warnings"),
            "machine_at_start": at_start, "machine_at_end": machine()}


def measure(rows: int, args, home: Path, mlp: bool) -> dict:
    path = home / f"adult_{rows}.parquet"
    t0 = time.perf_counter()
    size = write_resampled_adult(path, rows)
    generate_s = time.perf_counter() - t0
    url, drop = pg_database()
    stack_home = home / f"stack_{rows}"
    stack_home.mkdir()
    stack = start_stack("scale-rows", stack_home, url, REDIS_URL,
                        extra_env={"FAIRSOLVE_MAX_UPLOAD_BYTES": str(4 << 30)})
    out: dict = {"rows": rows, "file_mib": size / 2**20, "generate_s": generate_s}
    try:
        api_pid, worker_pid = stack.procs["api"].pid, stack.procs["worker"].pid
        with stack.client() as client:
            client.timeout = 3600
            client.get("/api/v1/solvers")
            before = memory_kib(api_pid)
            out["api_peak_reset"] = reset_peak(api_pid)
            t0 = time.perf_counter()
            with open(path, "rb") as fh:  # httpx streams a file object's multipart body
                resp = client.post("/api/v1/datasets", files={"file": (path.name, fh, "application/octet-stream")})
            out["upload_s"] = time.perf_counter() - t0
            assert resp.status_code == 201, resp.text
            out["api_rss_before_mib"] = before["VmRSS"] / 1024
            out["api_peak_mib"] = memory_kib(api_pid)["VmHWM"] / 1024
            dataset = resp.json()
            n_train = round(rows * 0.6)
            common = {"dataset_id": dataset["id"], "target": "income", "positive_label": ">50K", "sensitive": ["sex"],
                      "objective": "logistic", "constraints": [{"type": "demographic_parity", "tolerance": 0.02}],
                      "split": {"test": 0.2, "validation": 0.2, "seed": 0}, "time_limit_s": 3600}
            if args.upload_only:
                return out
            iterations = max(1, round(args.epochs * n_train / args.batch_size))
            if not args.no_linear:
                out["linear"] = run_job(stack, client, {
                    **common, "model": {"type": "linear"}, "device": "cpu", "max_iterations": iterations,
                    "solver": {"name": "ssg", "params": {"batch_size": args.batch_size}}}, worker_pid)
                out["linear"]["batch_size"] = args.batch_size
            if mlp:
                device = "cuda" if args.cuda else "cpu"
                out["mlp"] = run_job(stack, client, {
                    **common, "model": {"type": "mlp", "hidden": [64, 64]}, "device": device,
                    "max_iterations": args.mlp_iterations,
                    "solver": {"name": "ssg", "params": {"batch_size": args.batch_size}}}, worker_pid)
                out["mlp"].update(batch_size=args.batch_size, device=device)
    finally:
        stop_stack(stack)
        drop()
        path.unlink(missing_ok=True)
        shutil.rmtree(stack_home, ignore_errors=True)  # the stored copy of the dataset
    for kind in ("linear", "mlp"):
        job = out.get(kind)
        if job and job["solver_time_s"] and job["iterations"]:
            epochs = job["iterations"] * job["batch_size"] / n_train
            job["epochs"] = epochs
            job["s_per_epoch"] = job["solver_time_s"] / epochs
    return out


def markdown(results: list[dict], load: tuple[float, float, float], command: str) -> str:
    fmt = lambda v, f: "—" if v is None else format(v, f)  # noqa: E731
    lines = ["# Scale in rows: upload, profile, linear DP and MLP jobs with mini-batches (PostgreSQL + Redis, "
             "1 worker)", "", f"`{command}`", "",
             f"Machine: 2 cores shared with other sessions; load average at the start {load[0]:.1f} / {load[1]:.1f} / "
             f"{load[2]:.1f} (each job's own in the JSON): the times measure contention as well as the service. Memory "
             "figures do not depend on it.",
             "Job wall s: submission to the end, set-up (reading the table, encoding, splitting) included; solver s: "
             "the iterations (exact-enforcement continuation included); epochs = iterations · batch size / training "
             "rows; worker peak: the job's, then through its unconstrained baseline (run next on the same worker).",
             "", "| rows | file MiB | upload s | API before / peak MiB | job | worker peak MiB (+ baseline) | job wall s "
             "| solver s | epochs | s / epoch | test acc | test bal. acc | test DP (≤ tol?) | enforcement |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for kind in ("linear", "mlp"):
            job = r.get(kind)
            if not job:
                continue
            kept = {True: "yes", False: "no", None: "—"}[job.get("test_dp_kept")]
            enforcement = (job.get("enforcement") or "—") + (f" ({job['enforcement_undone']} round undone)"
                                                             if job.get("enforcement_undone") else "")
            lines.append(
                f"| {r['rows']:,} | {r['file_mib']:.0f} | {r['upload_s']:.1f} | {r['api_rss_before_mib']:.0f} / "
                f"{r['api_peak_mib']:.0f} | {kind} ({job['status']}) | {job['worker_peak_mib']:,.0f} "
                f"({fmt(job.get('worker_peak_with_baseline_mib'), ',.0f')}) | "
                f"{job['wall_s']:.1f} | {fmt(job['solver_time_s'], '.1f')} | {fmt(job.get('epochs'), '.2f')} | "
                f"{fmt(job.get('s_per_epoch'), '.1f')} | {fmt(job['test_accuracy'], '.4f')} | "
                f"{fmt(job.get('test_balanced_accuracy'), '.4f')} | {fmt(job['test_dp'], '.4f')} ({kept}) | "
                f"{enforcement} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--mlp-iterations", type=int, default=1000, help="SGD steps of the MLP job (whatever the "
                        "table's size: see the module docstring)")
    parser.add_argument("--mlp-rows", type=int, nargs="*", default=None, help="sizes that also run the MLP job "
                        "(default: every size)")
    parser.add_argument("--cuda", action="store_true", help="the MLP job asks for device cuda (a GPU worker)")
    parser.add_argument("--no-linear", action="store_true", help="no linear job (the MLP job only)")
    parser.add_argument("--upload-only", action="store_true", help="upload and profile, no jobs")
    parser.add_argument("--output", default="scale_rows")
    args = parser.parse_args()
    redis.Redis.from_url(REDIS_URL).flushdb()
    load = os.getloadavg()
    results = []
    with tempfile.TemporaryDirectory() as home:
        for rows in args.rows:
            mlp = args.mlp_rows is None or rows in args.mlp_rows
            results.append(measure(rows, args, Path(home), mlp))
            print(json.dumps(results[-1]), flush=True)
    command = "python -m bench.system.scale_rows " + " ".join(sys.argv[1:])
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.output}.json").write_text(json.dumps({"command": command, "load_average": load,
                                                             "results": results}, indent=2))
    (RESULTS / f"{args.output}.md").write_text(markdown(results, load, command))
    print(markdown(results, load, command))


if __name__ == "__main__":
    main()

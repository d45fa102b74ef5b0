"""The CUDA path through the service (issue 33, item 5): linear, MLP and the stochastic-benchmark solvers on a
1M-row and a 10M-row table, each job once with ``device: "cuda"`` (the ``gpu`` queue) and once with
``device: "cpu"``, seconds per iteration side by side.

The stack is ``make run``'s launcher on its embedded defaults (SQLite database, SQLite broker: the device machine
has no other software), one job worker of ``--concurrency`` processes (default 2: a job and its unconstrained
baseline; each gets cores / 2 torch threads, so the CPU side is not starved). Per size: a generated table (an
Adult-like planted disparity, 12 numeric columns of 2 decimals and 3 text columns, written to Parquet a million rows at a time)
is uploaded once; then each method's job is submitted and waited for, one job at a time, CUDA first.

Per job: status, the ``device`` the result reports, iterations, the solver's seconds (the iterations, exact
enforcement included) and per iteration, the job's wall time (POST → the answer that says it ended: queue, set-up
on 0.6 of the rows, evaluation and artifacts included), test accuracy and demographic parity. Ratio = CPU seconds
per iteration / CUDA's. A failed job keeps its error in the table: that is what this bench is for.

Methods (DP ≤ 0.02; MLP 64-64): ``linear`` (SSG, full batch: the paper's deterministic setting), ``mlp`` (SSG,
full batch), and on the MLP with mini-batches of ``--batch-size`` rows: ``ssl_alm``, ``alm``, ``ghost``, ``ssw``.

    python -m bench.system.gpu_paths [--rows 1000000 10000000] [--iterations 100] [--batch-size 4096]
                                     [--methods linear mlp ssl_alm alm ghost ssw] [--cpu-methods ...]

On the lent GPU machine (Python 3.12 and torch there; the service's own packages carried as wheels):
``bench/gpu/session.sh`` runs it, see ``docs/architecture.md``, "The CUDA path". Results go to
``bench/system/results/gpu_paths.{json,md}`` and, where ``$OUT`` is set, to ``$OUT`` as well.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.system.dispatch import Launched, wait_end

RESULTS = Path(__file__).resolve().parent / "results"
CHUNK = 1_000_000
METHODS = ("linear", "mlp", "ssl_alm", "alm", "ghost", "ssw")
STOCHASTIC = ("ssl_alm", "alm", "ghost", "ssw")


def write_table(path: Path, rows: int, seed: int = 0) -> int:
    """``rows`` rows of a planted disparity (the label depends on ``sex``), a million at a time; the file's size."""
    rng = np.random.default_rng(seed)
    writer = None
    try:
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            male = rng.random(n) < 0.6
            x = rng.normal(0, 1, (n, 12)).round(2)  # measurements to 2 decimals: ~800 distinct values a column
            work = rng.integers(0, 4, n)
            region = rng.integers(0, 8, n)
            logit = -1.0 + 1.2 * male + x[:, :6] @ np.linspace(0.8, -0.4, 6) + 0.3 * (work == 1)
            label = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), ">50K", "<=50K")
            table = pa.table({**{f"x{i}": x[:, i] for i in range(12)},
                              "work": pa.array(np.array(["private", "self", "gov", "none"])[work]),
                              "region": pa.array(np.char.add("r", region.astype(str))),
                              "sex": pa.array(np.where(male, "Male", "Female")), "income": pa.array(label)})
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    return path.stat().st_size


def spec(method: str, dataset_id: str, device: str, iterations: int, batch_size: int) -> dict:
    """The job of ``method`` on ``device``: DP ≤ 0.02 by sex, split 0.2 / 0.2, exact enforcement bounded to a
    tenth of the iterations (so that seconds per iteration are mostly the method's)."""
    mlp = {"type": "mlp", "hidden": [64, 64]}
    model, solver = {
        "linear": ({"type": "linear"}, {"name": "ssg", "params": {}}),
        "mlp": (mlp, {"name": "ssg", "params": {}}),
    }.get(method, (mlp, {"name": method, "params": {"batch_size": batch_size}}))
    return {"dataset_id": dataset_id, "target": "income", "positive_label": ">50K", "sensitive": ["sex"],
            "model": model, "solver": solver, "constraints": [{"type": "demographic_parity", "tolerance": 0.02}],
            "split": {"test": 0.2, "validation": 0.2, "seed": 0}, "max_iterations": iterations,
            "enforcement_iterations": max(1, iterations // 10), "time_limit_s": 1800, "device": device}


def run_job(client, body: dict) -> dict:
    t0 = time.perf_counter()
    resp = client.post("/api/v1/jobs", json=body)
    if resp.status_code not in (201, 202):
        return {"status": f"refused {resp.status_code}", "error": resp.text[:500]}
    job = wait_end(client, resp.json()["id"], timeout=1800)
    wall = time.perf_counter() - t0
    result = job.get("result") or {}
    test = (job.get("metrics") or {}).get("test") or {}
    iterations, solver_s = result.get("iterations"), result.get("solver_time_s")
    return {"status": job["status"], "error": (job.get("error") or "")[:800] or None, "device": job.get("device"),
            "wall_s": wall, "iterations": iterations, "solver_time_s": solver_s,
            "s_per_iteration": solver_s / iterations if solver_s and iterations else None,
            "stop_reason": result.get("stop_reason"), "test_accuracy": test.get("accuracy"),
            "test_dp": test.get("demographic_parity"), "load": os.getloadavg()[0]}


def measure(out: dict, args, home: Path, emit) -> None:
    """Fills ``out`` (``rows`` given) as the jobs end; ``emit()`` after each."""
    rows = out["rows"]
    path = home / f"table_{rows}.parquet"
    t0 = time.perf_counter()
    size = write_table(path, rows)
    out.update(file_mib=size / 2**20, generate_s=time.perf_counter() - t0, jobs=[])
    stack_home = home / f"stack_{rows}"
    stack_home.mkdir()
    os.environ["FAIRSOLVE_MAX_UPLOAD_BYTES"] = str(8 << 30)
    stack = Launched(stack_home, None, args.concurrency)
    try:
        stack.wait_ready()
        with stack.client() as client:
            client.timeout = 1800
            t0 = time.perf_counter()
            with open(path, "rb") as fh:
                resp = client.post("/api/v1/datasets", files={"file": (path.name, fh, "application/octet-stream")})
            out["upload_s"] = time.perf_counter() - t0
            if resp.status_code != 201:
                out["upload_error"] = resp.text[:800]
                return
            dataset_id = resp.json()["id"]
            for method in args.methods:
                for device in [d for d in args.devices if d == "cuda" or method in args.cpu_methods]:
                    job = {"method": method, "asked": device,
                           **run_job(client, spec(method, dataset_id, device, args.iterations, args.batch_size))}
                    out["jobs"].append(job)
                    emit(rows, job)
            emit(rows, None)
    finally:
        stack.stop()
        if args.keep_log:
            shutil.copy(stack_home / "launcher.log", Path(args.keep_log) / f"launcher_{rows}.log")
        shutil.rmtree(stack_home, ignore_errors=True)
        path.unlink(missing_ok=True)


def markdown(payload: dict) -> str:
    fmt = lambda v, f: "—" if v is None else format(v, f)  # noqa: E731
    lines = ["# The CUDA path through the service: seconds per iteration, CUDA against CPU", "",
             f"`{payload['command']}`", "", f"Machine: {payload['machine']}", "",
             "Embedded defaults (SQLite database and broker), one job worker of "
             f"{payload['concurrency']} processes; DP ≤ 0.02; solver s = the iterations, exact enforcement included; "
             "wall = POST → the answer that says it ended (queue, set-up, evaluation, artifacts).", "",
             "| rows | method | device | status | iterations | solver s | ms / iteration | CPU / CUDA | job wall s "
             "| test acc | test DP | error |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for size in payload["results"]:
        per = {(j["method"], j["asked"]): j.get("s_per_iteration") for j in size["jobs"]}
        if "file_mib" not in size:
            continue
        lines.append(f"| {size['rows']:,} | upload ({size['file_mib']:.0f} MiB Parquet) | — | "
                     f"{'failed' if size.get('upload_error') else 'stored'} | — | — | — | — | "
                     f"{fmt(size.get('upload_s'), '.1f')} | — | — | {size.get('upload_error') or ''} |")
        for j in size["jobs"]:
            cuda, cpu = per.get((j["method"], "cuda")), per.get((j["method"], "cpu"))
            ratio = cpu / cuda if j["asked"] == "cuda" and cuda and cpu else None
            ms = None if j.get("s_per_iteration") is None else 1000 * j["s_per_iteration"]
            lines.append(
                f"| {size['rows']:,} | {j['method']} | {j['asked']} → {j.get('device') or '—'} | {j['status']} | "
                f"{fmt(j.get('iterations'), 'd')} | {fmt(j.get('solver_time_s'), '.2f')} | {fmt(ms, '.2f')} | "
                f"{fmt(ratio, '.1f')} | {fmt(j.get('wall_s'), '.1f')} | {fmt(j.get('test_accuracy'), '.4f')} | "
                f"{fmt(j.get('test_dp'), '.4f')} | {(j.get('error') or '').replace('|', '/')[:160]} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--devices", nargs="+", default=["cuda", "cpu"], choices=["cuda", "cpu"])
    parser.add_argument("--cpu-methods", nargs="*", default=list(METHODS), choices=METHODS,
                        help="methods whose jobs also run on the CPU (default: every one)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--keep-log", default=os.environ.get("OUT"), help="folder for the launchers' logs")
    parser.add_argument("--output", default="gpu_paths")
    args = parser.parse_args()
    import torch

    if "cuda" in args.devices and not torch.cuda.is_available():
        print("no CUDA device here: the cuda jobs will fail by design (device 'cuda' requested)", flush=True)
    machine = (f"{os.cpu_count()} cores, torch {torch.__version__}, "
               f"{torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU'}, "
               f"Python {platform.python_version()}")
    command = "python -m bench.system.gpu_paths " + " ".join(sys.argv[1:])
    payload = {"command": command, "machine": machine, "concurrency": args.concurrency, "results": []}
    folders = [RESULTS] + ([Path(os.environ["OUT"])] if os.environ.get("OUT") else [])

    def save() -> None:
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{args.output}.json").write_text(json.dumps(payload, indent=2))
            (folder / f"{args.output}.md").write_text(markdown(payload))

    def emit(rows: int, job: dict | None) -> None:
        if job is not None:
            print(json.dumps({"rows": rows, **job}), flush=True)
        save()

    with tempfile.TemporaryDirectory() as home:
        for rows in args.rows:
            payload["results"].append({"rows": rows})
            measure(payload["results"][-1], args, Path(home), emit)
            save()
    print(markdown(payload), flush=True)


if __name__ == "__main__":
    main()

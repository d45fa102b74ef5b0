"""Prediction-log audit from cell counts beside its peers, in the same run: DP + equal opportunity + accuracy with
200-resample 95% intervals on a synthetic log (2 sensitive columns, 3 × 2 = 6 groups) stored as Parquet.

* **FairSolve, streamed** (what a worker does with a Parquet log): :func:`app.audits.log_stream.log_frames` +
  :func:`~app.audits.log_stream.tally` (cell counts and score summaries, batch by batch) +
  :func:`app.audits.report.evaluate_counts` (values, multinomial-cell CIs, noise floor); run in a child process,
  whose peak resident memory (``VmHWM``) is reported, and what it held before the run (its imports); the child
  fixes glibc's mmap threshold as a worker process does (:mod:`worker.heap`).
* **FairSolve, in memory**: the table already read (pandas), :meth:`PredictionLog.score` +
  :func:`app.audits.report.evaluate` (the same cells path), as for a table that fits.
* **numpy row bootstrap** (the issue's peer): the cell code of every row once, then 200 times draw n row indices,
  gather, ``bincount``, the three metrics; the intervals the cells replace.
* **pyarrow group-by** (point values, no intervals): the Parquet columns read, the decision computed and
  ``Table.group_by([race, sex, outcome, decision]).aggregate(count)``.

Each is repeated ``--reps`` times (the numpy loop ``--numpy-reps`` times; it is the slow one); medians are reported
with the load average before and after (the machine may be shared: wall time on a loaded machine is an upper
bound). The DP intervals of the cells and of the numpy loop are printed side by side (two Monte Carlo draws of the
same bootstrap distribution: they differ by its Monte Carlo error only). The logs are written to a temporary
directory, never to the repository. Results: ``bench/system/results/audit_cells.{json,md}``.

    python -m bench.system.audit_cells [--rows 1000000 5000000] [--reps 3] [--numpy-reps 1]
    python -m bench.system.audit_cells --rows 100000000 --reps 1 --numpy-reps 0    # streamed only where it would not fit
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

RESULTS = Path(__file__).resolve().parent / "results"
METRICS = [{"type": "demographic_parity", "threshold": 0.1}, {"type": "equal_opportunity", "threshold": 0.1},
           {"type": "accuracy", "threshold": 0.6}]
LOG = {"score_column": "score", "label_column": "outcome", "positive_label": 1, "sensitive": ["race", "sex"]}
CHUNK = 1_000_000
N_BOOT = 200


def write_log(path: Path, rows: int, seed: int = 2) -> None:
    """The synthetic log in row groups of 1M rows (bounded memory at any size): race a/b/c (60/30/10 %), sex F/M,
    outcome 30 % positive, score σ(N(1.2 y − 0.8 + 0.3 · 1{M}, 1))."""
    rng = np.random.default_rng(seed)
    race_values, sex_values = pa.array(["a", "b", "c"]), pa.array(["F", "M"])
    writer = None
    for start in range(0, rows, CHUNK):
        m = min(CHUNK, rows - start)
        race = rng.choice(3, m, p=[0.6, 0.3, 0.1]).astype(np.int8)
        sex = rng.integers(0, 2, m, dtype=np.int8)
        y = (rng.random(m) < 0.3).astype(np.int64)
        score = 1 / (1 + np.exp(-rng.normal(1.2 * y - 0.8 + 0.3 * sex, 1.0)))
        batch = pa.table({"race": pa.DictionaryArray.from_arrays(race, race_values),
                          "sex": pa.DictionaryArray.from_arrays(sex, sex_values), "outcome": y, "score": score})
        writer = writer or pq.ParquetWriter(path, batch.schema)
        writer.write_table(batch, row_group_size=CHUNK)
    writer.close()


def peak_mib() -> float:
    """This process's peak resident memory (``VmHWM``: counted from its exec, unlike ``ru_maxrss``, which keeps the
    forking parent's high-water mark)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def streamed(path: Path) -> dict:
    """FairSolve's streamed audit of the file (run in a child: its peak memory is the process's)."""
    from app.audits.log_stream import log_frames, tally
    from app.audits.logs import PredictionLog
    from app.audits.metrics import MetricSpec
    from app.audits.report import evaluate_counts

    log, specs = PredictionLog.model_validate(LOG), [MetricSpec.model_validate(m) for m in METRICS]
    before = peak_mib()
    started = time.perf_counter()
    counts = tally(log_frames(path, log.columns()), log)
    report = evaluate_counts(specs, counts.counts, counts.group_names, n_boot=N_BOOT)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "peak_rss_mib": peak_mib(),
            "rss_before_mib": before, "dp_ci": report["results"][0]["ci"],
            "values": {r["key"]: r["value"] for r in report["results"]}}


def in_memory(table) -> float:
    from app.audits.logs import PredictionLog
    from app.audits.metrics import MetricSpec
    from app.audits.report import evaluate

    log, specs = PredictionLog.model_validate(LOG), [MetricSpec.model_validate(m) for m in METRICS]
    started = time.perf_counter()
    evaluate(specs, log.score(table), n_boot=N_BOOT)
    return time.perf_counter() - started


def numpy_row_bootstrap(table) -> tuple[float, list[float]]:
    """The peer: 200 row resamples in a plain numpy loop (each: n indices, a gather, a bincount, three metrics)."""
    started = time.perf_counter()
    race = table["race"].astype("category").cat.codes.to_numpy(np.int64)
    sex = table["sex"].astype("category").cat.codes.to_numpy(np.int64)
    y = table["outcome"].to_numpy(np.int64)
    pred = (table["score"].to_numpy() > 0.5).astype(np.int64)
    code = 4 * (2 * race + sex) + 2 * y + pred
    k, n = 6, len(code)
    rng = np.random.default_rng(0)
    dps = []
    for _ in range(N_BOOT):
        c = np.bincount(code[rng.integers(0, n, n)], minlength=4 * k).reshape(k, 2, 2).astype(float)
        sr = c[:, :, 1].sum(1) / c.sum((1, 2))
        tpr = c[:, 1, 1] / c[:, 1].sum(1)
        dps.append(sr.max() - sr.min())
        _ = (tpr.max() - tpr.min(), (c[:, 0, 0] + c[:, 1, 1]).sum() / n)
    seconds = time.perf_counter() - started
    return seconds, [float(v) for v in np.quantile(dps, [0.025, 0.975])]


def arrow_group_by(path: Path) -> float:
    started = time.perf_counter()
    table = pq.read_table(path, columns=["race", "sex", "outcome", "score"])
    table = table.append_column("decision", pc.greater(table["score"], 0.5))
    table.group_by(["race", "sex", "outcome", "decision"]).aggregate([("score", "count")])
    return time.perf_counter() - started


def child(path: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.system.audit_cells", "--child", str(path)], capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    return json.loads(out.stdout.strip().splitlines()[-1])


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def measure(rows: int, reps: int, numpy_reps: int, tmp: Path) -> dict:
    import pandas as pd

    path = tmp / f"log-{rows}.parquet"
    write_log(path, rows)
    runs = [child(path) for _ in range(reps)]
    out = {"rows": rows, "file_mib": round(path.stat().st_size / 2**20, 1),
           "fairsolve_streamed_s": [round(r["seconds"], 3) for r in runs],
           "fairsolve_streamed_peak_rss_mib": round(max(r["peak_rss_mib"] for r in runs)),
           "fairsolve_child_rss_before_mib": round(runs[0]["rss_before_mib"]),
           "fairsolve_dp_ci": runs[0]["dp_ci"], "values": runs[0]["values"],
           "pyarrow_group_by_s": [round(arrow_group_by(path), 3) for _ in range(reps)]}
    if numpy_reps or rows <= 10_000_000:
        table = pd.read_parquet(path)
        table["race"], table["sex"] = table["race"].astype(str), table["sex"].astype(str)  # text, as a CSV reads
        out["fairsolve_in_memory_s"] = [round(in_memory(table), 3) for _ in range(reps)]
        loops = [numpy_row_bootstrap(table) for _ in range(numpy_reps)]
        out["numpy_row_bootstrap_s"] = [round(s, 3) for s, _ in loops]
        out["numpy_dp_ci"] = loops[0][1] if loops else None
        del table
    path.unlink()
    for key in ("fairsolve_streamed_s", "fairsolve_in_memory_s", "numpy_row_bootstrap_s", "pyarrow_group_by_s"):
        out[f"{key}_median"] = median(out.get(key, []))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--numpy-reps", type=int, default=1)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--tag", default="", help="suffix of the result files (e.g. 100m)")
    args = parser.parse_args()
    if args.child:
        from worker.heap import fix_mmap_threshold

        fix_mmap_threshold()  # as a worker process does at start (worker.celery_app)
        print(json.dumps(streamed(args.child)))
        return
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        sizes = [measure(rows, args.reps, args.numpy_reps, Path(tmp)) for rows in args.rows]
    load_after = os.getloadavg()
    out = {"metrics": [m["type"] for m in METRICS], "n_boot": N_BOOT, "reps": args.reps,
           "numpy_reps": args.numpy_reps, "cpus": os.cpu_count(),
           "load_average_before": [round(v, 2) for v in load_before],
           "load_average_after": [round(v, 2) for v in load_after], "sizes": sizes}
    RESULTS.mkdir(exist_ok=True)
    name = "audit_cells" + (f"_{args.tag}" if args.tag else "")
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=2) + "\n")
    lines = [f"# Prediction-log audit from cell counts beside its peers ({', '.join(out['metrics'])}, "
             f"{N_BOOT}-resample CIs, 6 groups)", "",
             f"`python -m bench.system.audit_cells --rows {' '.join(map(str, args.rows))} --reps {args.reps} "
             f"--numpy-reps {args.numpy_reps}`; wall seconds, medians of the repetitions (each listed). "
             f"Load average (1, 5, 15 min) {out['load_average_before']} before, {out['load_average_after']} after, "
             f"on {out['cpus']} CPUs: the machine was shared, so these are upper bounds.", "",
             "| rows | FairSolve streamed from Parquet (read + cells + CIs) | peak RSS | FairSolve in memory | "
             "numpy row bootstrap | pyarrow group-by (points only) | DP 95% CI: cells / numpy rows |",
             "|---|---|---|---|---|---|---|"]
    for s in sizes:
        def cell(key: str) -> str:
            return "—" if s.get(f"{key}_median") is None else f"{s[f'{key}_median']} s {s.get(key)}"

        ci = "—" if not s.get("numpy_dp_ci") else (f"[{s['fairsolve_dp_ci'][0]:.4f}, {s['fairsolve_dp_ci'][1]:.4f}] / "
                                                   f"[{s['numpy_dp_ci'][0]:.4f}, {s['numpy_dp_ci'][1]:.4f}]")
        lines.append(f"| {s['rows']:,} | {cell('fairsolve_streamed_s')} | {s['fairsolve_streamed_peak_rss_mib']} MiB "
                     f"(child at start: {s['fairsolve_child_rss_before_mib']}) | {cell('fairsolve_in_memory_s')} | "
                     f"{cell('numpy_row_bootstrap_s')} | {cell('pyarrow_group_by_s')} | {ci} |")
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

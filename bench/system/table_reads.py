"""A job's read of its table, in process (issue 33, item 2: "store tables in a columnar format that jobs and audits
read directly"): the upload parsed as the worker parses it (``read_table`` with text as categories), the columnar
copy written once (:mod:`app.datasets.columnar`), the copy read, and beside them Polars' ``read_csv`` of the same
file and a Parquet copy's read through the same ``read_table`` (a Parquet upload). Table: ``bench.system.gpu_paths``'
generated one (12 measurements, 3 text columns, a label), written as CSV; medians of ``--reps``.

    python -m bench.system.table_reads [--rows 2000000 10000000] [--reps 3]

Writes ``bench/system/results/table_reads.{json,md}``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from app.core.settings import Settings
from app.datasets import columnar
from app.datasets.storage import read_table
from bench.system.gpu_paths import write_table

RESULTS = Path(__file__).resolve().parent / "results"
SHA = "0" * 64   # the copy's key in the bench's own cache folder


def timed(fn, reps: int) -> tuple[list[float], object]:
    times, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def measure(rows: int, reps: int, folder: Path) -> dict:
    import polars as pl

    parquet, csv = folder / f"t{rows}.parquet", folder / f"t{rows}.csv"
    write_table(parquet, rows)
    pq.read_table(parquet).to_pandas().to_csv(csv, index=False)
    settings = Settings(FAIRSOLVE_HOME=str(folder / "home"))
    name = columnar.entry_name(csv, "bench", True)
    parse, frame = timed(lambda: read_table(csv, "csv", {"delimiter": ","}, text_as_categories=True), reps)
    write, _ = timed(lambda: columnar.write_copy(frame, SHA, name, settings), reps)
    copy, again = timed(lambda: columnar.read_copy(SHA, name, settings), reps)
    pd.testing.assert_frame_equal(again, frame)
    polars, _ = timed(lambda: pl.read_csv(csv), reps)
    from_parquet, _ = timed(lambda: read_table(parquet, "parquet", {}, text_as_categories=True), reps)
    copy_bytes = (settings.storage_dir / columnar.FOLDER / f"{SHA}-{name}").stat().st_size
    return {"rows": rows, "csv_mib": csv.stat().st_size / 2**20, "copy_mib": copy_bytes / 2**20,
            "parse_s": parse, "write_copy_s": write, "read_copy_s": copy, "polars_read_csv_s": polars,
            "parquet_read_table_s": from_parquet, "load": os.getloadavg()[0]}


def markdown(results: list[dict]) -> str:
    med = statistics.median
    lines = ["# A job's read of its table: the upload parsed, its columnar copy, Polars",
             "", "`python -m bench.system.table_reads` (in process; medians of the repetitions, seconds; load = "
             "1-minute load average at the end of the row).", "",
             "| rows | CSV MiB | parse (read_table) | write the copy (once) | read the copy | copy / parse | "
             "Polars read_csv | Parquet upload's read_table | copy MiB | load |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['rows']:,} | {r['csv_mib']:.0f} | {med(r['parse_s']):.2f} | {med(r['write_copy_s']):.2f} | "
                     f"{med(r['read_copy_s']):.3f} | {med(r['read_copy_s']) / med(r['parse_s']):.3f} | "
                     f"{med(r['polars_read_csv_s']):.2f} | {med(r['parquet_read_table_s']):.2f} | "
                     f"{r['copy_mib']:.0f} | {r['load']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[2_000_000, 10_000_000])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    results = []
    for rows in args.rows:
        with tempfile.TemporaryDirectory() as tmp:
            results.append(measure(rows, args.reps, Path(tmp)))
        print(json.dumps({k: v for k, v in results[-1].items()}), flush=True)
    (RESULTS / "table_reads.json").write_text(json.dumps(results, indent=1))
    (RESULTS / "table_reads.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()

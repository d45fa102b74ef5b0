"""Uploads at reader speed (issue 33, item 2): storing and profiling a large CSV against Polars and pandas reading
the same file, in the same run.

The file: ``tests.datagen.planted_table`` rows (integers, floats, text with missing cells; 10M rows ≈ 368 MiB).
Each repetition, interleaved:

* FairSolve: ``app.datasets.storage.profile_upload`` (what the API runs on an upload: sniffing, the header check, every row
  checked, the schema and summary statistics), the file streamed by Arrow on all cores;
* ``polars.read_csv`` then ``DataFrame.describe()`` (timed apart and together);
* ``pandas.read_csv``.

Then the same file through the API of an embedded stack (``POST /api/v1/datasets`` to 201) for a quarter of the
rows and for all of them: the API process's peak resident memory during each (``VmHWM``, reset before by writing
5 to ``/proc/<pid>/clear_refs``), to show it does not grow with the file.

    python -m bench.system.upload_speed [--rows 10000000] [--reps 3] [--quoting text --output upload_speed_quoted]

Writes ``bench/results/upload_speed.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from app.datasets.read_options import upload_options
from app.datasets.storage import TableLimits, profile_upload
from bench.system.scale_upload import memory_kib, reset_peak
from bench.common.datagen import planted_table
from bench.common.stack import start_stack, stop_stack

RESULTS = Path(__file__).resolve().parent / "results"


QUOTING = {"minimal": csv.QUOTE_MINIMAL, "text": csv.QUOTE_NONNUMERIC}  # text: every text quoted (R, UCI bank)


def write_csv(path: Path, rows: int, block: int = 1_000_000, quoting: str = "minimal") -> None:
    """``rows`` planted rows written a block at a time (seeds 0, 1, ...: the generator's memory stays bounded)."""
    with open(path, "w") as fh:
        for i, start in enumerate(range(0, rows, block)):
            planted_table(min(block, rows - start), seed=i).to_csv(fh, index=False, header=i == 0,
                                                                   quoting=QUOTING[quoting])


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def fairsolve(path: Path) -> None:
    profile_upload(path, TableLimits(max_rows=10**9, max_bytes=1 << 40), upload_options())


def polars_parts(path: Path) -> tuple[float, float]:
    import polars as pl

    t0 = time.perf_counter()
    frame = pl.read_csv(path)
    read = time.perf_counter() - t0
    frame.describe()
    return read, time.perf_counter() - t0 - read


def through_api(path: Path, home: Path) -> dict:
    stack = start_stack("upload-speed", home, None, None)
    try:
        pid = stack.procs["api"].pid
        with stack.client() as client:
            client.timeout = 1800
            client.get("/api/v1/datasets")  # imports done, caches warm
            before = memory_kib(pid)["VmRSS"] / 1024
            reset = reset_peak(pid)
            t0 = time.perf_counter()
            with open(path, "rb") as fh:
                resp = client.post("/api/v1/datasets", files={"file": (path.name, fh, "text/csv")})
            wall = time.perf_counter() - t0
            assert resp.status_code == 201, resp.text
            peak = memory_kib(pid)["VmHWM"] / 1024
    finally:
        stop_stack(stack)
    return {"rows": resp.json()["n_rows"], "file_mib": path.stat().st_size / 2**20, "post_to_201_s": wall,
            "api_rss_before_mib": before, "api_peak_mib": peak, "peak_was_reset": reset}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-api", action="store_true", help="skip the uploads through the API")
    parser.add_argument("--quoting", choices=sorted(QUOTING), default="minimal",
                        help="text: every text field quoted, as R's write.csv and the UCI bank files write them")
    parser.add_argument("--output", default="upload_speed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "planted.csv"
        write_csv(path, args.rows, quoting=args.quoting)
        rows = []
        for _ in range(args.reps):
            row = {"load": os.getloadavg()[0], "fairsolve_s": timed(lambda: fairsolve(path))}
            row["polars_read_s"], row["polars_describe_s"] = polars_parts(path)
            row["polars_s"] = row["polars_read_s"] + row["polars_describe_s"]
            row["pandas_s"] = timed(lambda: pd.read_csv(path))
            row["ratio_polars"] = row["fairsolve_s"] / row["polars_s"]
            row["ratio_pandas"] = row["fairsolve_s"] / row["pandas_s"]
            rows.append(row)
            print(json.dumps(row), flush=True)
        result = {"rows": args.rows, "file_mib": path.stat().st_size / 2**20, "reps": rows,
                  "median": {k: statistics.median(r[k] for r in rows) for k in rows[0]}, "api": []}
        if not args.no_api:
            quarter = Path(tmp) / "planted_quarter.csv"
            write_csv(quarter, args.rows // 4, quoting=args.quoting)
            for p in (quarter, path):
                home = Path(tmp) / f"home-{p.stem}"
                home.mkdir()
                result["api"].append(through_api(p, home))
                print(json.dumps(result["api"][-1]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.output}.json").write_text(json.dumps(result, indent=2))
    m = result["median"]
    md = [f"# Upload + profile of a {args.rows:,}-row CSV ({result['file_mib']:.0f} MiB) against Polars and pandas", "",
          f"`python -m bench.system.upload_speed --rows {args.rows} --reps {args.reps}"
          f"{'' if args.quoting == 'minimal' else ' --quoting ' + args.quoting}`; {os.cpu_count()} cores; medians of "
          f"{args.reps} interleaved repetitions (load = 1-minute load average).", "",
          "| FairSolve profile_upload | polars read_csv + describe | pandas read_csv | ratio to polars | "
          "ratio to pandas | load |", "|---|---|---|---|---|---|",
          f"| {m['fairsolve_s']:.2f} s | {m['polars_read_s']:.2f} + {m['polars_describe_s']:.2f} = {m['polars_s']:.2f} s | "
          f"{m['pandas_s']:.2f} s | {m['ratio_polars']:.2f}× | {m['ratio_pandas']:.2f}× | {m['load']:.2f} |"]
    if result["api"]:
        md += ["", "Through the API (embedded stack), the API process's peak resident memory:", "",
               "| rows | file | POST → 201 | API before | API peak |", "|---|---|---|---|---|"]
        md += [f"| {a['rows']:,} | {a['file_mib']:.0f} MiB | {a['post_to_201_s']:.1f} s | "
               f"{a['api_rss_before_mib']:.0f} MiB | {a['api_peak_mib']:.0f} MiB |" for a in result["api"]]
    (RESULTS / f"{args.output}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()

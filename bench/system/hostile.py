"""Hostile traffic: schemathesis in every phase (examples, coverage, fuzzing, stateful), positive and negative
data, against a real stack on PostgreSQL + Redis with a real Celery worker; counts the answers 500 (and every
5xx) and names their causes from the API's log.

The stack is seeded as tests/integration/test_fuzz.py seeds it (a dataset with a finished job, a deletable
dataset, a sweep, a revocable key); :mod:`bench.system.hostile_hooks` puts those ids into half of the requests and
records every answer. The per-key rate limit is raised for the run (the fuzzer paces itself at ``--rate``)
so that answers are the service's, not 429s. Jobs and sweeps the fuzzer submitted are cancelled at the end.

    python -m bench.system.hostile [--max-examples 40] [--workers 2] [--rate 120] [--max-time 900]

Writes ``bench/system/results/hostile.json`` and ``hostile.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.common.jobs import active_jobs, seed
from bench.common.stack import REDIS_URL, ROOT, pg_database, start_stack, stop_stack

RESULTS = Path(__file__).resolve().parent / "results"
PHASES = "examples,coverage,fuzzing,stateful"
EARLIER = {"requests": 8271, "answers_500": 65, "causes": 7, "source": "issue 19 (schemathesis, all phases, main "
           "before the round-two fixes)"}


def causes(api_log: Path, start: int) -> Counter:
    """The last line of every traceback the API logged as an unhandled error since byte ``start``."""
    found: Counter = Counter()
    with open(api_log, "rb") as fh:
        fh.seek(start)
        for raw in fh:
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            message = str(record.get("msg", ""))
            if "unhandled error" in message:
                lines = [line for line in str(record.get("exc", "")).splitlines() if line and not line.startswith(
                    (" ", "[", "Traceback", "(Background", "The above", "During handling"))]
                route = message.split(" on ", 1)[-1]
                found[f"{route}: {lines[-1][:300] if lines else '?'}"] += 1
    return found


def schemathesis_run(stack, seeds: dict, work: Path, args) -> tuple[list[dict], float, int]:
    """The CLI's run over every operation; the tally of answers, the seconds it took and its exit code."""
    (work / "seeds.json").write_text(json.dumps(seeds))
    tally = work / "tally.jsonl"
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "bench.system.hostile_hooks", "FAIRSOLVE_HOSTILE_SEEDS": str(work / "seeds.json"),
           "FAIRSOLVE_HOSTILE_TALLY": str(tally), "PYTHONPATH": str(ROOT)}
    cmd = [str(Path(sys.executable).parent / "schemathesis"), "run", f"{stack.url}/openapi.json",
           "--phases", PHASES, "--mode", "all", "--checks", "not_a_server_error",
           "--header", f"Authorization: Bearer {stack.admin_key}", "--max-examples", str(args.max_examples),
           "--workers", str(args.workers), "--rate-limit", f"{args.rate}/s", "--request-timeout", "30",
           "--max-time", str(args.max_time), "--seed", "0", "--no-shrink", "--continue-on-failure",
           "--suppress-health-check", "all", "--warnings", "off"]
    started = time.monotonic()
    with open(work / "schemathesis.log", "wb") as out:
        done = subprocess.run(cmd, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)  # its cache: in work
    elapsed = time.monotonic() - started
    lines = [json.loads(line) for line in tally.read_text().splitlines() if line.strip()]
    return lines, elapsed, done.returncode


def cli_summary(log: Path) -> dict:
    """From the CLI's output: its per-phase lines (run, skipped, passed, errors) and the operations of its
    errors (an error is the generator's or a check's own failure, not an answer of the API)."""
    text = log.read_text(errors="replace")
    phases = re.findall(r"^\s*\S+\s+(Examples|Coverage|Fuzzing|Stateful) \(in ([\d.]+)s\)\n\s*(.+)$", text, re.M)
    errors = text.split("= ERRORS =", 1)[1].split("= SUMMARY =", 1)[0] if "= ERRORS =" in text else ""
    plain = {name: " ".join(re.sub(r"[^\w\s/().,:-]", "", outcome).split()) for name, _, outcome in phases}
    return {"phases": {name: f"{plain[name]} ({seconds} s)" for name, seconds, _ in phases},
            "errors": re.findall(r"^_{3,} (.+?) _{3,}$", errors, re.M),
            "error_kinds": sorted(set(re.findall(r"^(\w[\w ]+Error|Runtime Error)$", errors, re.M)))}


def report(lines: list[dict], elapsed: float, found: Counter, n_operations: int, args) -> dict:
    statuses = Counter(line["status"] for line in lines)
    by_op = Counter(line["op"] for line in lines if line["status"] >= 500)
    return {
        "requests": len(lines), "seconds": round(elapsed, 1), "operations": n_operations, "phases": PHASES,
        "max_examples": args.max_examples, "workers": args.workers, "rate_per_s": args.rate,
        "answers_500": statuses.get(500, 0), "answers_5xx": sum(n for s, n in statuses.items() if s >= 500),
        "status_counts": {str(s): n for s, n in sorted(statuses.items())},
        "5xx_by_operation": dict(by_op.most_common()),
        "causes_in_api_log": dict(found.most_common()),
        "5xx_examples": [line["curl"] for line in lines if line["status"] >= 500][:20],
        "earlier": EARLIER,
    }


def markdown(result: dict) -> str:
    rows = "\n".join(f"| {s} | {n} |" for s, n in result["status_counts"].items())
    ops = "\n".join(f"| {op} | {n} |" for op, n in result["5xx_by_operation"].items()) or "| none | 0 |"
    found = "\n".join(f"- {n} × {cause}" for cause, n in result["causes_in_api_log"].items()) or "- none"
    earlier = result["earlier"]
    cli = result.get("schemathesis", {})
    phases = "; ".join(f"{name}: {outcome}" for name, outcome in cli.get("phases", {}).items()) or "?"
    cli_errors = (", ".join(cli.get("errors", [])) + f" ({', '.join(cli.get('error_kinds', []))})"
                  if cli.get("errors") else "none")
    return f"""# Hostile traffic: schemathesis, every phase, PostgreSQL + Redis + a Celery worker

Generated by `python -m bench.system.hostile` (see its docstring). Phases {result['phases']}, positive and negative
data, {result['max_examples']} examples per operation and phase, {result['workers']} schemathesis workers
paced at {result['rate_per_s']} requests/s, {result['operations']} operations.

**{result['requests']} requests in {result['seconds']} s: {result['answers_500']} answers 500
({result['answers_5xx']} answers 5xx).** Earlier: {earlier['requests']} requests, {earlier['answers_500']}
answers 500 from {earlier['causes']} causes ({earlier['source']}).

| status | answers |
|---|---|
{rows}

5xx by operation:

| operation | answers |
|---|---|
{ops}

Causes in the API's log (unhandled errors):

{found}

Schemathesis per phase: {phases}. Its own errors (generation or check failures, not answers of the API):
{cli_errors}.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=40, help="examples per operation and phase")
    parser.add_argument("--workers", type=int, default=2, help="schemathesis workers (threads)")
    parser.add_argument("--rate", type=int, default=120, help="requests per second, all workers together")
    parser.add_argument("--max-time", type=int, default=900, help="the run's time budget in seconds")
    args = parser.parse_args()

    database_url, drop = pg_database()
    work = Path(tempfile.mkdtemp(prefix="fairsolve-hostile-"))
    (work / "home").mkdir()
    stack = start_stack("hostile", work / "home", database_url, REDIS_URL,
                        extra_env={"FAIRSOLVE_RATE_LIMIT_PER_S": "100000", "FAIRSOLVE_RATE_LIMIT_BURST": "100000"})
    try:
        seeds = seed(stack)
        with stack.client() as client:
            keys = client.get("/api/v1/keys").json()
            seeds["protected_key_ids"] = [k["id"] for k in keys if k["id"] not in seeds["key_id"]]
            n_operations = sum(len(methods) for methods in client.get("/openapi.json").json()["paths"].values())
        before = active_jobs(stack)
        log_start = (stack.home / "api.log").stat().st_size
        lines, elapsed, code = schemathesis_run(stack, seeds, work, args)
        found = causes(stack.home / "api.log", log_start)
        with stack.client() as client:  # what the fuzzer queued would keep the worker busy
            for job_id in active_jobs(stack) - before:
                client.post(f"/api/v1/jobs/{job_id}/cancel")
    finally:
        stop_stack(stack)
        drop()
    result = report(lines, elapsed, found, n_operations, args)
    result["schemathesis"] = {"exit_code": code, **cli_summary(work / "schemathesis.log")}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "hostile.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "hostile.md").write_text(markdown(result))
    print(markdown(result))
    print(f"work folder (schemathesis.log, tally.jsonl, home/api.log): {work}")


if __name__ == "__main__":
    main()

"""The dashboard's default job on raw files, through a real stack and Chromium (issue 30, item 7).

For each raw file (UCI ``adult.data`` as published, renamed with the dataset page's one-click form; ProPublica's
``compas-scores-two-years.csv`` as is), a browser uploads it, opens "New job", submits the form as it is filled
by default, and the job is timed from the submit click to its end. Printed and written to
``bench/system/results/dashboard_default_job.{json,md}``: wall seconds, status, what the form chose (target, positive
label, sensitive, solver), auto's candidates, test accuracy and demographic parity.

    python -m bench.system.dashboard_default_job [--postgres] [--also race] [--out bench/system/results]

Needs Debian's Chromium (``FAIRSOLVE_TEST_CHROMIUM``) and the shared datasets (``FAIRSOLVE_DATA_DIR``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from pathlib import Path

from bench.common.datasets import ADULT_COLUMNS, data_dir
from bench.common.stack import BROWSER_REDIS_URL, pg_database, start_stack, stop_stack

CHROMIUM = os.environ.get("FAIRSOLVE_TEST_CHROMIUM", "/usr/bin/chromium")
FILES = {"adult": ("adult.data", ADULT_COLUMNS), "compas": ("compas-scores-two-years.csv", None)}


def default_job(page, stack, path: Path, names: list[str] | None, sensitive: str | None = None) -> dict:
    page.goto(stack.url + "/datasets")
    page.fill("#upload-name", path.name)
    page.set_input_files("#file-input", str(path))
    page.wait_for_url(re.compile(r"/datasets/[0-9a-f]{32}$"), timeout=300_000)
    dataset_id = page.url.rsplit("/", 1)[1]
    if names is not None:  # the one-click rename of the generated column_1 … names
        page.fill("#rename-columns", ", ".join(names))
        page.click("#rename-submit")
        page.locator("#rename-form").wait_for(state="detached")
    page.goto(f"{stack.url}/jobs/new?dataset_id={dataset_id}")
    page.wait_for_selector("#job-form[data-ready=true]")
    page.wait_for_selector("#f-features[data-state=ready]", timeout=120_000)
    if sensitive is not None:  # the user's choice of group instead of the default
        for box in page.locator("#f-sensitive input").all():
            box.set_checked(box.get_attribute("value") == sensitive)
        page.wait_for_selector("#f-features[data-state=ready]", timeout=120_000)
    chose = {"target": page.input_value("#f-target"), "positive_label": page.input_value("#f-positive"),
             "sensitive": page.eval_on_selector_all("#f-sensitive input:checked", "els => els.map(e => e.value)"),
             "solver": page.input_value("#f-solver")}
    began = time.monotonic()
    page.click("#submit-job")
    try:
        page.wait_for_url(re.compile(r"/jobs/[0-9a-f]{32}$"))
    except Exception:
        errors = page.eval_on_selector_all(".message.error, .field-error, .error", "els => els.map(e => e.textContent)")
        raise RuntimeError(f"the default job was not accepted: {errors}") from None
    job_id = page.url.rsplit("/", 1)[1]
    with stack.client(stack.admin_key) as client:
        job = stack.wait_job(client, job_id, {"succeeded", "failed", "cancelled"}, timeout=1200, wait_s=5)
    wall = time.monotonic() - began
    test = (job.get("metrics") or {}).get("test") or {}
    tried = (job.get("result") or {}).get("tried") or []
    return {"wall_s": round(wall, 1), "status": job["status"], **chose,
            "test_accuracy": test.get("accuracy"), "test_demographic_parity": test.get("demographic_parity"),
            "tried": [(t["solver"], t["outcome"], t["seconds"]) for t in tried]}


def sign_in(page, stack) -> None:
    page.goto(stack.url + "/signin")
    page.fill("#api_key", stack.admin_key)
    page.click("#signin-form button[type=submit]")
    page.wait_for_url(re.compile(r"/$"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL + Redis (bench.common.stack's URLs)")
    parser.add_argument("--only", choices=sorted(FILES), help="one file only")
    parser.add_argument("--also", metavar="COLUMN", help="then the same job with this sensitive column ticked "
                        "instead (race: 5 groups on Adult, 6 on COMPAS)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    home = Path(tempfile.mkdtemp(prefix="fairsolve-default-job-"))
    database_url, drop = pg_database() if args.postgres else (None, None)
    stack = start_stack("default-job", home, database_url, BROWSER_REDIS_URL if args.postgres else None,
                        workers=1)
    rows = {}
    try:
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--headless=new", "--no-sandbox", "--disable-gpu"])
            for name, (filename, names) in FILES.items():
                if args.only and name != args.only:
                    continue
                for label, sensitive in ((name, None), *(((f"{name}, {args.also} ticked", args.also),)
                                                         if args.also else ())):
                    context = browser.new_context(viewport={"width": 1400, "height": 1000})  # no remembered choice
                    page = context.new_page()
                    page.set_default_timeout(120_000)
                    sign_in(page, stack)
                    rows[label] = default_job(page, stack, data_dir() / filename, names, sensitive)
                    print(label, json.dumps(rows[label]), flush=True)
                    context.close()
            browser.close()
    finally:
        stop_stack(stack)
        if drop:
            drop()
    load = os.getloadavg()
    result = {"rows": rows, "cpus": os.cpu_count(), "load_average_1_5_15": [round(v, 2) for v in load],
              "stack": "postgres+redis" if args.postgres else "embedded (SQLite)"}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "dashboard_default_job.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# The dashboard's default job on raw files", "",
             f"`python -m bench.system.dashboard_default_job{' --postgres' if args.postgres else ''}"
             f"{' --also ' + args.also if args.also else ''}`; {result['stack']}, "
             f"{result['cpus']} CPUs, load average after the run {result['load_average_1_5_15']} (other work shared "
             "the machine).", "",
             "| file | wall s (submit → end) | status | target = positive | sensitive | solver | test accuracy | "
             "test DP | auto's candidates (solver, outcome, s) |", "|---|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['wall_s']} | {r['status']} | {r['target']} = {r['positive_label']} | "
                     f"{', '.join(r['sensitive'])} | {r['solver']} | {r['test_accuracy']} | "
                     f"{r['test_demographic_parity']} | {r['tried']} |")
    (args.out / "dashboard_default_job.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

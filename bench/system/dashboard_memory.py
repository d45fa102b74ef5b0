"""API memory of the dataset page and the audit-model export on a ~50 MiB CSV (issue 19, item 12).

Starts an embedded stack (API + one worker) from the current checkout, uploads a 1.6-million-row planted
table, signs in to the dashboard, views the dataset page for three sensitive columns, trains a 3-iteration
job and downloads its audit model, printing the API process tree's resident memory (VmRSS) after each
step. Run from the repository root: ``python -m bench.system.dashboard_memory``.
"""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path

import httpx

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec
from bench.common.stack import start_stack, stop_stack


def rss_mib(pid: int) -> int:
    """Resident memory of ``pid`` and its descendants, in MiB."""
    def tree(p: int) -> list[int]:
        kids = [int(k) for t in Path(f"/proc/{p}/task").iterdir() for k in (t / "children").read_text().split()]
        return [p] + [q for k in kids for q in tree(k)]
    kib = sum(int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{p}/status").read_text()).group(1)) for p in tree(pid))
    return round(kib / 1024)


def main() -> None:
    home = Path(tempfile.mkdtemp())
    csv = home / "big.csv"
    planted_table(1_600_000, seed=0).to_csv(csv, index=False)
    print(f"CSV: {csv.stat().st_size / 2**20:.1f} MiB")
    stack = start_stack("memory", home / "stack", None, None)
    try:
        api = stack.procs["api"].pid
        with stack.client() as client, httpx.Client(base_url=stack.url, timeout=600) as browser:
            with open(csv, "rb") as fh:
                dataset = client.post("/api/v1/datasets", files={"file": ("big.csv", fh, "text/csv")}, timeout=600).json()
            after_upload = rss_mib(api)
            signed_in = browser.post("/signin", data={"api_key": stack.admin_key, "next": "/"},
                                     headers={"origin": stack.url})
            assert signed_in.status_code == 303, signed_in.text
            started = time.monotonic()
            for sensitive in ("sex", "race", "age"):
                page = browser.get(f"/datasets/{dataset['id']}", params={"sensitive": sensitive, "label": "income"})
                assert page.status_code == 200, page.text[:300]
            pages_s, after_pages = time.monotonic() - started, rss_mib(api)
            job = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=3)).json()
            stack.wait_job(client, job["id"], {"succeeded", "failed"}, timeout=600)
            before_export = rss_mib(api)
            exported = client.get(f"/api/v1/jobs/{job['id']}/audit-model", timeout=600)
            assert exported.status_code == 200, exported.text[:300]
            after_export = rss_mib(api)
        print(f"API RSS MiB: after upload {after_upload}, after 3 dataset pages {after_pages} "
              f"(+{after_pages - after_upload}, {pages_s:.1f} s), before export {before_export}, "
              f"after export {after_export} (+{after_export - before_export})")
    finally:
        stop_stack(stack)


if __name__ == "__main__":
    main()

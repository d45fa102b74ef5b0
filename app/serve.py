"""``python -m app.serve``: the API server, ``FAIRSOLVE_API_WORKERS`` uvicorn processes on ``HOST``:``PORT``.

One Python process answers requests on one core (the GIL), so a machine with spare cores serves
more, and with shorter queues, from several. Request counts and latencies then live in each
process; they are kept in Prometheus' multi-process files (``PROMETHEUS_MULTIPROC_DIR``, emptied
at each start) so that ``/metrics``, whichever process answers it, reports them all.
"""

from __future__ import annotations

import os
import shutil

import uvicorn

from app.auth.keys import bootstrap_key_problem
from app.core.settings import get_settings

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# uvicorn kills (and replaces) a server process that leaves its supervisor's ping unanswered this long, dropping
# its connections. At its default of 5 s, a 60 s saturation run on a loaded 2-core machine lost 72 requests to
# connection resets and timeouts (none at 30 s in the runs since); a busy process is not a hung one.
HEALTHCHECK_S = 30


def main() -> None:
    settings = get_settings()
    if (problem := bootstrap_key_problem(settings.bootstrap_api_key, settings.database_url_env is None)) is not None:
        raise SystemExit(f"refusing to start: {problem}")  # before any server process is forked
    if settings.api_workers > 1:
        folder = settings.home / "prometheus"
        shutil.rmtree(folder, ignore_errors=True)  # counts of an earlier run's processes
        folder.mkdir(parents=True)
        os.environ[MULTIPROC_ENV] = str(folder)  # read by prometheus_client when each process imports it
    uvicorn.run("app.main:app", host=settings.host, port=settings.port, workers=settings.api_workers,
                timeout_worker_healthcheck=HEALTHCHECK_S)


if __name__ == "__main__":
    main()

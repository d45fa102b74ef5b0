"""``make run``: migrate the database, then run the API, a Celery worker, an audits worker (audit runs and their
webhooks), a housekeeping worker (beat's periodic tasks) and Celery beat together.

Ctrl-C (SIGINT) or SIGTERM stops every process started here; if one of them dies,
the others are stopped too and the launcher exits non-zero.

Unless ``FAIRSOLVE_BOOTSTRAP_API_KEY`` is set, an admin key is made on the first run, kept in
``$FAIRSOLVE_HOME/admin.key`` (mode 0600) and printed, so the embedded service can be used at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from alembic import command
from alembic.config import Config

from app.auth.keys import bootstrap_key_problem, new_key
from app.core.settings import get_settings

ROOT = Path(__file__).resolve().parent.parent


def migrate() -> None:
    command.upgrade(Config(str(ROOT / "alembic.ini")), "head")


MEMORY_PER_PROCESS = 1 << 30  # a job process: torch and the solvers (~0.4 GiB) and a job's tables


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: a container's cpuset), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def available_memory() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes (None where there is none)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def worker_concurrency() -> int:
    """Job processes of the embedded worker: ``FAIRSOLVE_WORKER_CONCURRENCY``, else one per usable core, at most
    one per :data:`MEMORY_PER_PROCESS` of available memory, and at least 2, so one long job never holds the
    queue (a second job starts beside it)."""
    if (given := os.environ.get("FAIRSOLVE_WORKER_CONCURRENCY")) is not None:
        return max(1, int(given))
    memory = available_memory()
    by_memory = usable_cores() if memory is None else memory // MEMORY_PER_PROCESS
    return max(2, min(usable_cores(), by_memory))


def commands(host: str, port: int, concurrency: int, home: Path) -> dict[str, list[str]]:
    py = sys.executable
    return {
        "api": [py, "-m", "app.serve"],  # on HOST:PORT, FAIRSOLVE_API_WORKERS processes
        "worker": [py, "-m", "celery", "-A", "worker.celery_app", "worker", "-Q", "cpu,gpu",
                   "-c", str(concurrency), "-n", f"fairsolve-{os.getpid()}@%h", "--loglevel", "INFO"],
        # audit runs and their webhooks on a queue of their own: an audit never holds a job's slot
        "audits": [py, "-m", "celery", "-A", "worker.celery_app", "worker", "-Q", "audits", "-c", "1",
                   "-n", f"audits-{os.getpid()}@%h", "--loglevel", "INFO"],
        # beat's periodic tasks (reaper, audit trigger) on a queue of their own: never behind a long job
        "housekeeping": [py, "-m", "celery", "-A", "worker.celery_app", "worker", "-Q", "housekeeping",
                         "-P", "solo", "-n", f"housekeeping-{os.getpid()}@%h", "--loglevel", "INFO"],
        "beat": [py, "-m", "celery", "-A", "worker.celery_app", "beat", "--loglevel", "INFO",
                 "-s", str(home / "celerybeat-schedule")],
    }


def admin_key(settings) -> str:
    """The bootstrap admin key: from the environment, else from (or new in) ``home/admin.key``."""
    if settings.bootstrap_api_key:
        return settings.bootstrap_api_key
    path = settings.home / "admin.key"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(new_key() + "\n")
    return path.read_text().strip()


def main() -> int:
    settings = get_settings()
    if (problem := bootstrap_key_problem(settings.bootstrap_api_key, embedded=True)) is not None:
        print(f"refusing to start: {problem}", file=sys.stderr)
        return 2
    migrate()
    key = admin_key(settings)
    os.environ["FAIRSOLVE_BOOTSTRAP_API_KEY"] = key
    host = os.environ.get("HOST", "127.0.0.1")
    concurrency = worker_concurrency()
    procs = {name: subprocess.Popen(cmd, cwd=ROOT)
             for name, cmd in commands(host, settings.port, concurrency, settings.home.resolve()).items()}
    print(f"FairSolve on http://{host}:{settings.port}  (database {settings.database_url.split('://')[0]}, "
          f"broker {settings.broker_url.split('://')[0]}); Ctrl-C stops it\n"
          f"admin API key ({settings.bootstrap_owner}): {key}", flush=True)
    stopping = False

    def stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    code = 0
    while not stopping:
        for name, proc in procs.items():
            if proc.poll() is not None:
                print(f"{name} exited with code {proc.returncode}; stopping the others", file=sys.stderr)
                stopping, code = True, proc.returncode or 1
        time.sleep(0.5)
    for proc in procs.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 20
    for proc in procs.values():
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
    return code


if __name__ == "__main__":
    raise SystemExit(main())

"""Real FairSolve stacks in subprocesses: a uvicorn API and a Celery worker, on PostgreSQL + Redis
or on the embedded defaults. Used by the integration tests and by the benchmarks."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx
import psycopg

from bench.common.wait import wait_until


ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")
# Every service address the suite uses can be moved by an environment variable, so two suites can share a
# machine (give each its own Redis database numbers; PostgreSQL databases are created per run with unique names).
PG_ADMIN = os.environ.get("FAIRSOLVE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("FAIRSOLVE_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")
BROWSER_REDIS_URL = os.environ.get("FAIRSOLVE_TEST_BROWSER_REDIS_URL", "redis://127.0.0.1:6379/11")
AUDIT_REDIS_URL = os.environ.get("FAIRSOLVE_TEST_AUDIT_REDIS_URL", "redis://127.0.0.1:6379/12")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Stack:
    name: str
    url: str
    env: dict[str, str]
    home: Path
    procs: dict[str, subprocess.Popen]
    admin_key: str

    def client(self, key: str | None = None) -> httpx.Client:
        """A client sending ``key`` (the stack's bootstrap admin key by default)."""
        return httpx.Client(base_url=self.url, timeout=30,
                            headers={"Authorization": f"Bearer {key or self.admin_key}"})

    def new_key(self, owner: str) -> str:
        with self.client() as admin:
            response = admin.post("/api/v1/keys", json={"owner": owner})
            assert response.status_code == 201, response.text
            return response.json()["key"]

    def wait_job(self, client: httpx.Client, job_id: str, until: set[str], timeout: float = 180,
                 wait_s: float | None = None) -> dict:
        """The job once its status is in ``until``: read every 0.2 s, or with ``wait_s`` through the API's
        long-poll (each read waits up to ``wait_s`` s on the server for the job's end; ``until`` terminal states)."""
        deadline = time.monotonic() + timeout

        seen: list[dict] = []

        def reached() -> dict | None:
            asked = 0.0 if wait_s is None else max(0.0, min(wait_s, deadline - time.monotonic()))
            seen.append(client.get(f"/api/v1/jobs/{job_id}", params={"wait_s": asked} if asked else {}).json())
            return seen[-1] if seen[-1]["status"] in until else None

        return self.until(reached, timeout, lambda: f"job {job_id} reaching {until} (last read: {seen[-1]})")

    def until(self, condition: Callable[[], T], timeout: float, what: str | Callable[[], str],
              interval: float = 0.2, logs: tuple[str, ...] = ("worker",)) -> T:
        """:func:`~bench.common.wait.wait_until` while every process of the stack lives (a death fails at once,
        with its log); a timeout's message carries the end of ``logs``."""
        def message() -> str:
            return "\n".join([what() if callable(what) else what, *(self.log(name) for name in logs)])
        return wait_until(condition, timeout, interval, message, check=self.assert_alive)

    def assert_alive(self) -> None:
        for name, proc in self.procs.items():
            assert proc.poll() is None, f"{name} process died:\n{self.log(name)}"

    def log(self, name: str) -> str:
        path = self.home / f"{name}.log"
        return path.read_text()[-4000:] if path.exists() else f"({name}: no log)"


def pg_database() -> tuple[str, Callable[[], None]]:
    name = f"fairsolve_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    admin = make_conninfo(PG_ADMIN)
    return str(sqlalchemy_url(admin, name)), drop


def make_conninfo(url: str) -> dict[str, str]:
    """The admin URL's parts (user, host, port), to address a new database on the same server."""
    return psycopg.conninfo.conninfo_to_dict(url)


def sqlalchemy_url(parts: dict[str, str], database: str) -> str:
    from sqlalchemy.engine import URL
    return URL.create("postgresql+psycopg", username=parts.get("user"), password=parts.get("password"),
                      host=parts.get("host"), port=int(parts["port"]) if parts.get("port") else None,
                      database=database).render_as_string(hide_password=False)


def start_stack(name: str, home: Path, database_url: str | None, broker_url: str | None,
                workers: int = 1, extra_env: dict[str, str] | None = None, beat: bool = False,
                starting: Callable[[Stack], None] | None = None, queues: str = "cpu,gpu,audits") -> Stack:
    """API and ``workers`` Celery workers consuming ``queues``; with ``beat``, Celery beat too (its schedule file
    in ``home``).
    ``starting`` is called once they are launched, before the API answers (to launch more beside them)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    port = free_port()
    admin_key = f"fsk_test_{uuid.uuid4().hex}"
    env.update({"FAIRSOLVE_HOME": str(home), "HOST": "127.0.0.1", "PORT": str(port), "FAIRSOLVE_TRAJECTORY_FLUSH_S": "0.25",
                "FAIRSOLVE_BOOTSTRAP_API_KEY": admin_key,
                # the stack's workers at the caller's priority: niced (the service's default), they starve while
                # another test process computes, and a run's time limit then measures the other process
                "FAIRSOLVE_WORKER_NICE": "0",
                # stacks of concurrent test runs share one Redis database: each gets its own keys
                "FAIRSOLVE_BROKER_KEY_PREFIX": f"{name}-{uuid.uuid4().hex[:8]}:", **(extra_env or {})})
    if database_url:
        env["DATABASE_URL"] = database_url
    if broker_url:
        env["CELERY_BROKER_URL"] = broker_url
    subprocess.run([sys.executable, "-m", "alembic", "upgrade", "head"], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    commands = {"api": [sys.executable, "-m", "app.serve"]}
    for i in range(workers):
        commands["worker" if i == 0 else f"worker{i + 1}"] = [
            sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker", "-Q", queues, "-c", "1",
            "-n", f"test-{name}-{i}-{uuid.uuid4().hex[:6]}@%h", "--loglevel", "INFO"]
    if beat:  # beat's tasks go to the housekeeping queue, consumed by a worker of its own (as in production)
        commands["housekeeping"] = [sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker", "-Q",
                                    "housekeeping", "-P", "solo", "-n", f"test-{name}-hk-{uuid.uuid4().hex[:6]}@%h",
                                    "--loglevel", "INFO"]
        commands["beat"] = [sys.executable, "-m", "celery", "-A", "worker.celery_app", "beat", "--loglevel", "INFO",
                            "-s", str(home / "celerybeat-schedule")]
    procs = {}
    for proc_name, cmd in commands.items():
        log = open(home / f"{proc_name}.log", "wb")
        procs[proc_name] = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    stack = Stack(name, f"http://127.0.0.1:{port}", env, home, procs, admin_key)
    if starting is not None:
        starting(stack)
    wait_until(lambda: answers(f"{stack.url}/healthz"), 120, 0.2,  # a loaded machine imports torch slowly
               lambda: f"API start\n{stack.log('api')}", check=lambda: _assert_running(procs["api"], stack.log))
    return stack


def answers(url: str) -> bool:
    """``url`` answers 200 within a second (a refused or slow connection is ``False``)."""
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _assert_running(proc: subprocess.Popen, log: Callable[[str], str]) -> None:
    assert proc.poll() is None, log("api")


def add_worker_host(stack: Stack, name: str, home: Path, queues: str = "cpu,gpu,audits",
                    prefix: list[str] | None = None) -> subprocess.Popen:
    """A Celery worker as another host would run it: the stack's database, broker and storage settings, but a
    ``FAIRSOLVE_HOME`` of its own (its cache and spool), sharing no directory with the API or other hosts;
    ``prefix`` runs it in a network namespace (``bench.common.netns``)."""
    home.mkdir(parents=True, exist_ok=True)
    cmd = [*(prefix or []), sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker", "-Q", queues, "-c", "1",
           "-n", f"test-{stack.name}-{name}-{uuid.uuid4().hex[:6]}@%h", "--loglevel", "INFO"]
    with open(stack.home / f"{name}.log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env={**stack.env, "FAIRSOLVE_HOME": str(home)}, stdout=log,
                                stderr=subprocess.STDOUT)
    stack.procs[name] = proc
    return proc


def stop_stack(stack: Stack) -> None:
    for proc in stack.procs.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in stack.procs.values():
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"

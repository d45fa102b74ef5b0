"""Fencing between starts of a job: a worker paused (SIGSTOP) past the stale period is superseded — beat's
reaper re-queues the job, a second worker resumes it from its checkpoint — and when the paused worker is
resumed (SIGCONT) while the second one trains, it exits at its next write without touching the job: the job
never shows `failed` and ends `succeeded` once, with one trajectory row per iteration and one set of artifacts."""

from __future__ import annotations

import os
import signal

import psycopg
import pytest

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload
from bench.common.stack import PG_ADMIN, REDIS_URL, pg_database, start_stack, stop_stack
from bench.common.wait import wait_until

ITERATIONS, ROWS, MODEL = 2500, 4000, {"type": "mlp", "hidden": [64, 64]}


@pytest.fixture
def fenced_stack(tmp_path):
    url, drop = pg_database()
    stack = start_stack("fencing", tmp_path, url, REDIS_URL, workers=2, beat=True, extra_env={
        "FAIRSOLVE_STALE_AFTER_S": "3", "FAIRSOLVE_REAP_EVERY_S": "0.5", "FAIRSOLVE_CHECKPOINT_EVERY_S": "0.3"})
    yield stack
    for proc in stack.procs.values():  # never leave a stopped process behind
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
    stop_stack(stack)
    drop()


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def tcp_ports(pids: list[int]) -> set[int]:
    """Local TCP ports of the sockets the processes hold (their database connections among them)."""
    inodes = set()
    for pid in pids:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                if fields[9] in inodes:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def busy_backends(database: str, pids: list[int]) -> int:
    """The processes' database sessions inside a statement or a transaction (they may hold the job's row lock)."""
    ports = list(tcp_ports(pids))
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND client_port = ANY(%s) "
                            "AND state <> 'idle'", (database, ports)).fetchone()[0]


class Watch:
    """Polls the job and remembers every status it showed."""

    def __init__(self, stack, client, job_id):
        self.stack, self.client, self.job_id, self.seen = stack, client, job_id, set()

    def until(self, what, condition, timeout=180.0) -> dict:
        last: list[dict] = []

        def read() -> dict | None:
            last[:] = [self.client.get(f"/api/v1/jobs/{self.job_id}").json()]
            self.seen.add(last[0]["status"])
            assert last[0]["status"] != "failed", last[0]
            return last[0] if condition(last[0]) else None
        return wait_until(read, timeout, 0.05,
                          lambda: f"{what}: {last}\n{self.stack.log('worker')}\n{self.stack.log('worker2')}")


def test_a_paused_worker_is_fenced_off(fenced_stack):
    stack = fenced_stack
    database = stack.env["DATABASE_URL"].rsplit("/", 1)[1]
    with stack.client() as client:
        dataset = upload(client, planted_table(ROWS, seed=6))
        job_id = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=ITERATIONS, model=MODEL,
                                                           exact_enforcement=False)).json()["id"]  # K iterations
        watch = Watch(stack, client, job_id)
        first = watch.until("no checkpoint", lambda j: j["status"] == "running"
                            and (j["progress"].get("checkpoint_iteration") or 0) > 0)
        pool = int(first["worker"].rsplit(":", 1)[1])
        paused = [pool, parent_of(pool)]
        name = next(n for n, p in stack.procs.items() if p.pid == paused[1])
        while True:  # pause it outside a transaction, as a stopped VM or a long GC pause would
            for pid in paused:
                os.kill(pid, signal.SIGSTOP)
            if busy_backends(database, paused) == 0:
                break
            for pid in reversed(paused):
                os.kill(pid, signal.SIGCONT)
        assert first["progress"]["iteration"] < ITERATIONS - 500, "the job ran too fast to be paused mid-run"

        second = watch.until("not re-queued and resumed", lambda j: j["status"] == "running" and j["starts"] == 2
                             and j["attempts"] == 2 and (j["progress"].get("resumed_from") or 0) > 0)
        assert second["worker"] != first["worker"]
        resumed_at = second["progress"]["iteration"]
        watch.until("the second start does not train", lambda j: j["progress"].get("iteration", 0) > resumed_at + 20)
        for pid in reversed(paused):  # the stale start wakes up while the new one trains
            os.kill(pid, signal.SIGCONT)

        def superseded() -> bool:
            watch.until("", lambda j: True)  # every status the job shows meanwhile is seen
            return "was superseded" in (stack.home / f"{name}.log").read_text()
        wait_until(superseded, 120, 0.05, lambda: f"the stale start superseded\n{stack.log(name)}")
        done = watch.until("never succeeded", lambda j: j["status"] == "succeeded")
        assert "failed" not in watch.seen and "queued" in watch.seen, watch.seen  # re-queued by the reaper, never failed
        assert done["starts"] == 2 and done["result"]["iterations"] == ITERATIONS
        assert 0 < done["result"]["resumed_from"] < ITERATIONS
        assert sorted(a["kind"] for a in done["artifacts"]) == ["predictions", "weights"]
        traj = client.get(f"/api/v1/jobs/{job_id}/trajectory", params={"max_points": 100_000}).json()
        assert [p["iteration"] for p in traj["points"]] == list(range(1, ITERATIONS + 1))
        # the stale start left the job as the second start ended it, and left no checkpoint behind
        assert client.get(f"/api/v1/jobs/{job_id}").json() == done
        assert not list((stack.home / "storage" / "checkpoints").glob("*.safetensors"))
        for kind in ("weights", "predictions"):
            assert client.get(f"/api/v1/jobs/{job_id}/artifacts/{kind}").status_code == 200

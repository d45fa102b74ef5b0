"""Every queue a task can be sent to is consumed by `make run`'s launcher, and beat's periodic tasks have a
queue (and a worker) of their own, so a long job never holds up the reaper or the audit trigger."""
from __future__ import annotations

from pathlib import Path

from app.launcher import commands
from worker.celery_app import HOUSEKEEPING_QUEUE, QUEUE_FOR_DEVICE, celery_app


def consumed(cmds: dict[str, list[str]]) -> dict[str, set[str]]:
    return {name: set(cmd[cmd.index("-Q") + 1].split(",")) for name, cmd in cmds.items() if "-Q" in cmd}


def test_beat_tasks_go_to_the_housekeeping_queue():
    routes = celery_app.conf.task_routes
    for task in celery_app.conf.beat_schedule.values():
        assert routes[task["task"]] == {"queue": HOUSEKEEPING_QUEUE}


def test_the_launcher_consumes_every_queue_with_housekeeping_apart():
    queues = consumed(commands("127.0.0.1", 8000, 1, Path("home")))
    assert queues["housekeeping"] == {HOUSEKEEPING_QUEUE}  # its own worker, never behind a job
    jobs = set().union(*(q for name, q in queues.items() if name != "housekeeping"))
    assert set(QUEUE_FOR_DEVICE.values()) <= jobs and HOUSEKEEPING_QUEUE not in jobs

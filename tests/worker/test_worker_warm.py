"""A job worker's pool process does as it starts what a first job would do first (``worker.celery_app._warm_for_jobs``):
which command lines take jobs, and that the warm-up imports LightGBM and the solvers there and nowhere else."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from worker.celery_app import WARM_MODULES, consumed_queues, serves_jobs


@pytest.mark.parametrize("argv,queues,jobs", [
    (["celery", "-A", "worker.celery_app", "worker", "-Q", "cpu,gpu", "-c", "2"], {"cpu", "gpu"}, True),
    (["celery", "-A", "worker.celery_app", "worker", "-Qgpu"], {"gpu"}, True),
    (["celery", "-A", "worker.celery_app", "worker", "--queues=audits"], {"audits"}, False),
    (["celery", "-A", "worker.celery_app", "worker", "--queues", "housekeeping", "-P", "solo"], {"housekeeping"},
     False),
    (["celery", "-A", "worker.celery_app", "worker"], None, True),   # no -Q: every queue, jobs included
])
def test_the_queues_of_a_command_line_say_whether_it_takes_jobs(argv, queues, jobs):
    assert consumed_queues(argv) == queues
    assert serves_jobs(argv) is jobs


def _warmed(queues: str, tmp_path) -> bool:
    """Whether LightGBM, every warm module and the database engine are there after the pool-process signal, for a
    worker of ``-Q queues`` (the signal sent as Celery sends it in a new pool process)."""
    code = ("import sys; sys.argv = ['celery', '-A', 'worker.celery_app', 'worker', '-Q', %r]; "
            "import worker.celery_app as w; from celery.signals import worker_process_init; "
            "from app.core.db import session_factory; "
            "assert 'lightgbm' not in sys.modules and session_factory.cache_info().currsize == 0; "
            "worker_process_init.send(sender=None); "
            "print(all(m in sys.modules for m in w.WARM_MODULES) and session_factory.cache_info().currsize == 1)"
            % queues)
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'warm.db'}", "FAIRSOLVE_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                         env={**os.environ, **env})
    return out.stdout.strip().endswith("True")


def test_a_job_worker_warms_up_as_it_starts_and_an_audit_worker_does_not(tmp_path):
    assert "lightgbm" in WARM_MODULES
    assert _warmed("cpu,gpu", tmp_path)
    assert not _warmed("audits", tmp_path)

"""Beat runs no task: under ``celery beat`` the worker app registers no task module, so beat never imports torch,
pandas or the solvers; every other subcommand (the workers) registers them all."""
from __future__ import annotations

import subprocess
import sys

import pytest

from worker.celery_app import TASK_MODULES, celery_subcommand


@pytest.mark.parametrize("argv,expected", [
    (["celery", "-A", "worker.celery_app", "beat", "--loglevel", "INFO", "-s", "/x/beat"], "beat"),
    (["celery", "-A", "worker.celery_app", "worker", "-Q", "cpu", "-n", "beat@host"], "worker"),
    (["celery", "--app", "worker.celery_app", "inspect", "ping"], "inspect"),
    (["celery"], None),
])
def test_the_subcommand_is_the_first_argument_that_names_one(argv, expected):
    assert celery_subcommand(argv) == expected


def _loaded_after_init(subcommand: str) -> tuple[list[str], bool]:
    code = ("import sys; sys.argv = ['celery', '-A', 'worker.celery_app', %r]; import worker.celery_app as w; "
            "w.celery_app.loader.init_worker(); "
            "print(list(w.celery_app.conf.include or []), 'torch' in sys.modules)" % subcommand)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    include, torch = out.stdout.split("] ")
    return [m.strip(" '") for m in include.strip("[").split(",") if m.strip()], torch.strip() == "True"


def test_beat_imports_no_task_module_and_a_worker_imports_them_all():
    assert _loaded_after_init("beat") == ([], False)
    assert _loaded_after_init("worker") == (TASK_MODULES, True)

"""app.core.sandbox: a child process under a wall-clock, CPU and address-space limit returns its JSON value, or
fails naming the limit it passed; an error comes back with its message; nothing non-finite leaves it."""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

from app.core.sandbox import ChildError, Limited, run_limited

MiB = 1 << 20


def test_the_value_comes_back_from_another_process():
    assert run_limited(lambda: {"x": [1.5, None]}, time_s=30, memory_bytes=256 * MiB) == {"x": [1.5, None]}
    assert run_limited(os.getpid, time_s=30, memory_bytes=256 * MiB) != os.getpid()


def test_a_slow_child_is_killed_at_the_wall_clock_limit():
    started = time.monotonic()
    with pytest.raises(Limited) as caught:
        run_limited(lambda: time.sleep(60), time_s=1.0, memory_bytes=256 * MiB, poll_s=0.2)
    assert caught.value.reason == "time" and "time limit of 1 s" in str(caught.value)
    assert time.monotonic() - started < 30


def test_an_allocation_past_the_memory_limit_fails_the_child_not_the_parent():
    with pytest.raises(Limited) as caught:
        run_limited(lambda: float(np.ones(4 << 30, np.uint8).sum()), time_s=60, memory_bytes=256 * MiB)
    assert caught.value.reason == "memory" and "256 MiB" in str(caught.value)
    assert run_limited(lambda: float(np.ones(64 * MiB, np.uint8).sum()), time_s=60, memory_bytes=256 * MiB) == 64 * MiB


def test_errors_come_back_with_their_message_and_class():
    def refuse():
        raise ValueError("column 'x' is missing")

    with pytest.raises(ChildError) as caught:
        run_limited(refuse, time_s=30, memory_bytes=256 * MiB, expected=(ValueError,))
    assert caught.value.expected and caught.value.kind == "ValueError" and "column 'x'" in str(caught.value)
    with pytest.raises(ChildError) as caught:
        run_limited(lambda: {"f": float("inf")}, time_s=30, memory_bytes=256 * MiB)
    assert not caught.value.expected and "JSON" in str(caught.value)


def test_a_child_no_longer_wanted_is_stopped():
    asked = []

    def wanted() -> bool:
        asked.append(1)
        return len(asked) < 2

    with pytest.raises(Limited) as caught:
        run_limited(lambda: time.sleep(60), time_s=60, memory_bytes=256 * MiB, still_wanted=wanted, poll_s=0.2)
    assert caught.value.reason == "cancelled"


def test_the_child_dies_with_its_parent(tmp_path):
    """A parent killed mid-run (Celery's hard time limit, the OOM killer) leaves no computation behind."""
    import signal
    import subprocess
    import sys

    from bench.common.stack import ROOT, alive
    from bench.common.wait import wait_until

    marker = tmp_path / "child.pid"
    script = ("import os, time\nfrom app.core.sandbox import run_limited\n"
              f"def fn():\n    open({str(marker)!r}, 'w').write(str(os.getpid()))\n    time.sleep(120)\n"
              "run_limited(fn, time_s=120, memory_bytes=1 << 28)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    child = int(wait_until(lambda: marker.exists() and marker.read_text(), 60, 0.05, "the child's pid file"))
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    wait_until(lambda: not alive(child), 10, 0.05, f"the orphaned child {child} gone")

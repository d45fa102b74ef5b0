"""``wait_until``, the one polling helper of the tests and benchmarks: it returns the condition's first truthy value,
checks once more at the deadline, and a timeout names what was awaited and the last value it saw."""

from __future__ import annotations

import time

import pytest

from bench.common.wait import wait_until


def test_returns_the_first_truthy_value_without_waiting_longer():
    values = iter([0, None, [], {"status": "done"}, "never read"])
    started = time.monotonic()
    assert wait_until(lambda: next(values), timeout=10, interval=0.01) == {"status": "done"}
    assert time.monotonic() - started < 5
    assert next(values) == "never read"


def test_a_timeout_names_what_was_awaited_and_the_last_value():
    reads = []

    def running() -> list:
        reads.append(len(reads))
        return []  # falsy: e.g. the runs that have finished so far
    with pytest.raises(AssertionError) as failure:
        wait_until(running, 0.2, 0.02, lambda: f"audit a1 finished after {len(reads)} reads")
    assert str(failure.value) == f"audit a1 finished after {len(reads)} reads: not met within 0.2 s; last observed: []"
    assert len(reads) >= 3


def test_the_check_runs_between_polls_and_fails_at_once():
    calls = []

    def died() -> None:
        calls.append(1)
        raise AssertionError("worker process died")
    started = time.monotonic()
    with pytest.raises(AssertionError, match="worker process died"):
        wait_until(lambda: False, 30, 0.01, "never", check=died)
    assert calls == [1] and time.monotonic() - started < 5


def test_the_condition_is_polled_once_more_at_the_deadline():
    started = time.monotonic()
    assert wait_until(lambda: time.monotonic() - started >= 0.3, 0.3, interval=10)  # no poll lands between

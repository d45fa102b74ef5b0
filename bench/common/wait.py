"""The one polling helper of the harness: wait on a condition, never for a fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float, interval: float = 0.2,
               message: str | Callable[[], str] = "condition", *, check: Callable[[], None] | None = None) -> T:
    """Call ``condition()`` every ``interval`` s until it returns a truthy value, and return that value.

    Parameters
    ----------
    condition:
        Polled at once and then every ``interval`` s; its value is the result (a job, a row, ``True``).
    timeout:
        Seconds from the first call; ``condition`` is called once more at the deadline, so a slow machine that
        got there late is not failed for a condition that holds.
    interval:
        Seconds between calls.
    message:
        What was awaited, for the failure (a callable is evaluated only then: a process log, a page's text).
    check:
        Called after each unmet poll, e.g. to fail at once when a process the condition depends on died.

    Raises
    ------
    AssertionError
        ``"<message>: not met within <timeout> s; last observed: <last value>"``.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            break
        if check is not None:
            check()
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
    described = message() if callable(message) else message
    raise AssertionError(f"{described}: not met within {timeout:g} s; last observed: {value!r}")

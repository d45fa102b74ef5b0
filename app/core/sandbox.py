r"""Run a function in a forked child process under hard limits the kernel enforces, not Python's goodwill.

:func:`run_limited` forks; the child lowers its own ``RLIMIT_AS`` to its current address space plus
``memory_bytes`` (an allocation past it fails: numpy's ``MemoryError``, onnxruntime's and torch's allocation
errors) and ``RLIMIT_CPU`` to ``time_s`` + 1 s of CPU (SIGKILL past it), runs ``fn()`` and writes its result as
JSON (``allow_nan=False``: a non-finite number never leaves the child) to a pipe, then ``os._exit``\ s without
running the parent's clean-ups. The parent reads the pipe until ``time_s`` of wall-clock time has passed, then
SIGKILLs the child; every ``poll_s`` it calls ``still_wanted()`` and kills the child when that answers False
(a superseded audit run: cooperative cancel). The outcome is the value, or :class:`Limited` /
:class:`ChildError` with the child's message; nothing of the child's state (memory, threads, sockets) reaches
the parent. The child is SIGKILLed when its parent dies.

The child inherits the parent's open database connections: it never uses them, and SQLAlchemy's pool is
detached first (``Engine.dispose(close=False)``) so nothing it collects closes the parent's sockets. torch, when
loaded, runs on one thread in the child (OpenMP's pool does not survive a fork).
"""
from __future__ import annotations

import json
import os
import resource
import select
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

READ_CHUNK = 1 << 16


class Limited(Exception):
    """The child passed a limit (time or memory) or was stopped as no longer wanted (``reason``)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason  # "time" | "memory" | "cancelled" | "died"


class ChildError(Exception):
    """``fn`` raised in the child: ``kind`` its exception class name, ``expected`` whether it was one of the
    ``expected`` classes given to :func:`run_limited` (a refusal to report as it is)."""

    def __init__(self, kind: str, message: str, expected: bool) -> None:
        super().__init__(message)
        self.kind, self.expected = kind, expected


def _address_space() -> int:
    """The calling process's virtual memory size in bytes (``VmSize``)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0  # pragma: no cover - Linux always has it


def _die_with_parent() -> None:
    """SIGKILL this process when its parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``): a child whose worker was
    killed, by Celery's own time limit or the OOM killer, never outlives it."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return
    if os.getppid() == 1:  # the parent died before the call
        os._exit(1)


def _child(fn: Callable[[], Any], out: int, time_s: float, memory_bytes: int, expected: tuple) -> None:
    """The child's whole life: limits, ``fn``, its JSON on ``out``; never returns."""
    code = 0
    try:
        _die_with_parent()
        from app.core.db import get_engine
        if get_engine.cache_info().currsize:  # the parent has an engine: its pooled connections stay the parent's
            get_engine().dispose(close=False)
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(1)
        limit = _address_space() + memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        cpu = int(time_s) + 1 + int(resource.getrusage(resource.RUSAGE_SELF).ru_utime)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        try:
            payload = {"value": fn()}
        except MemoryError:
            payload = {"limit": "memory"}
        except BaseException as exc:  # every error goes back with its message
            text = str(exc)
            if "alloc" in text.lower() and ("memory" in text.lower() or "bad_alloc" in text):
                payload = {"limit": "memory", "message": text[:500]}  # onnxruntime's / torch's allocation failure
            else:
                payload = {"error": type(exc).__name__, "message": text[:4000],
                           "expected": isinstance(exc, expected)}
        try:
            data = json.dumps(payload, allow_nan=False).encode()
        except (TypeError, ValueError) as exc:
            data = json.dumps({"error": type(exc).__name__, "expected": False,
                               "message": f"the result holds a value JSON cannot store: {exc}"}).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(out, view):]
    except BaseException:  # pragma: no cover - nothing may escape the child
        code = 1
    finally:
        os._exit(code)


def run_limited(fn: Callable[[], Any], *, time_s: float, memory_bytes: int,
                still_wanted: Callable[[], bool] | None = None, poll_s: float = 2.0,
                expected: tuple[type[BaseException], ...] = ()) -> Any:
    """``fn()``'s JSON value, computed in a child process under the limits of the module docstring.

    Raises :class:`Limited` (time, memory, cancelled, or the child died of a signal) or :class:`ChildError`."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe; coverage does not follow it
        os.close(read_end)
        _child(fn, write_end, time_s, memory_bytes, expected)
    os.close(write_end)
    chunks: list[bytes] = []
    started = time.monotonic()
    checked = started
    try:
        while True:
            now = time.monotonic()
            if now - started > time_s:
                _kill(pid)
                raise Limited("time", f"time limit of {time_s:g} s reached")
            if still_wanted is not None and now - checked >= poll_s:
                checked = now
                if not still_wanted():
                    _kill(pid)
                    raise Limited("cancelled", "superseded by another start")
            ready, _, _ = select.select([read_end], [], [], min(poll_s, max(0.0, time_s - (now - started))) or 0.01)
            if ready:
                chunk = os.read(read_end, READ_CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
        pid = 0
    finally:
        os.close(read_end)
        if pid:
            _kill(pid)
    if not chunks:
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        if sig in (signal.SIGKILL, signal.SIGXCPU):
            raise Limited("died", f"the computation was killed (signal {sig}): past its CPU time or memory limit")
        raise Limited("died", f"the computation's process died ({'signal ' + str(sig) if sig else status})")
    payload = json.loads(b"".join(chunks))
    if "value" in payload:
        return payload["value"]
    if payload.get("limit") == "memory":
        raise Limited("memory", f"memory limit of {memory_bytes / 2**20:.0f} MiB reached"
                      + (f": {payload['message']}" if payload.get("message") else ""))
    raise ChildError(payload["error"], payload["message"], payload["expected"])


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass

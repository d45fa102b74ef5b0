"""A doorbell between the processes of one machine: a process that waits binds a Unix datagram socket (its *bell*,
named after a SQLite file and its pid, a Linux abstract-namespace name: nothing to clean up when it dies) and
registers its pid in the folder ``<file>.bells``; a process that has news rings every registered bell after its
commit (a datagram, a few microseconds, never blocking: a bell whose buffer is full has a wake-up pending already).

A ring carries a short payload (``b"!"`` by default; a job id for :mod:`app.jobs.wait`). No wake-up is lost while the
buffer has room: a datagram sent between a waiter's last read and its wait stays in the socket until the wait reads
it; a full buffer drops the payload, so every user keeps a fallback poll. Used by the embedded broker
(:mod:`app.core.broker_bell`: a committed message wakes the idle consumers) and by job long-polls on the embedded
database (:mod:`app.jobs.wait`: a job's end wakes its waiters). On other systems, or without a SQLite file, nothing
rings and waiters poll.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import select
import socket
import sys
import threading
import time
from pathlib import Path


def sqlite_path(url: str) -> Path | None:
    """The database file of a SQLAlchemy SQLite URL (``sqlite:///path``), else None."""
    if not url.startswith("sqlite:///") or url in ("sqlite://", "sqlite:///:memory:"):
        return None
    return Path(url[len("sqlite:///"):].split("?")[0])


class Bell:
    """The bells of one SQLite file: this process's own (when it waits) and the ring of every registered one."""

    def __init__(self, database: Path | None) -> None:
        self.enabled = database is not None and sys.platform.startswith("linux")
        self.folder = Path(f"{database}.bells") if database is not None else None
        self.tag = hashlib.sha256(str(database).encode()).hexdigest()[:16]
        self.sock: socket.socket | None = None
        self._pid = 0
        self.sender: socket.socket | None = None
        self.lock = threading.Lock()

    def address(self, pid: int | str) -> str:
        return f"\0fairsolve-bell-{self.tag}-{pid}"

    def listen(self) -> None:
        """Bind this process's bell and register it (once per process: a forked child binds its own)."""
        with self.lock:
            if not self.enabled or (self.sock is not None and self._pid == os.getpid()):
                return
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                sock.bind(self.address(os.getpid()))
            except OSError:  # the name is taken (another process in this pid's place?): poll as kombu does
                sock.close()
                self.enabled = False
                return
            sock.setblocking(False)
            self.folder.mkdir(exist_ok=True)
            (self.folder / str(os.getpid())).touch()
            self.sock, self._pid = sock, os.getpid()
            atexit.register(self.close)

    def wait(self, timeout: float) -> None:
        """Sleep until rung, at most ``timeout`` seconds; the pending rings are consumed."""
        if self.sock is None or self._pid != os.getpid():
            time.sleep(timeout)
            return
        select.select([self.sock], [], [], timeout)
        try:
            while self.sock.recv(16):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def _send(self, pid: str, payload: bytes = b"!") -> bool:
        """Ring one bell with ``payload``; False when nothing listens there."""
        with self.lock:
            if self.sender is None:
                self.sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self.sender.setblocking(False)
            try:
                self.sender.sendto(payload, self.address(pid))
            except (BlockingIOError, InterruptedError):  # its buffer is full: a wake-up is pending there already
                pass
            except OSError:  # ConnectionRefusedError, FileNotFoundError: no such bell
                return False
        return True

    def ring(self, payload: bytes = b"!") -> None:
        """Wake every registered waiter of this file (after a commit), each with ``payload``."""
        if not self.enabled:
            return
        try:
            pids = [entry.name for entry in os.scandir(self.folder)]
        except FileNotFoundError:  # no consumer registered yet
            return
        for pid in pids:
            if not self._send(pid, payload) and pid.isdigit() and not _alive(int(pid)):
                try:
                    os.unlink(self.folder / pid)
                except FileNotFoundError:
                    pass

    def ring_own(self) -> None:
        """Wake this process's wait (an acknowledgement frees a slot of its worker)."""
        if self.sock is not None and self._pid == os.getpid():
            self._send(str(os.getpid()))

    def close(self) -> None:
        """Unregister this process's bell (at exit)."""
        if self.sock is not None and self._pid == os.getpid():
            self.sock.close()
            try:
                os.unlink(self.folder / str(self._pid))
            except FileNotFoundError:
                pass
        self.sock = None


_BELLS: dict[Path | None, Bell] = {}


def bell_for(database: Path | None) -> Bell:
    """The bell of ``database`` in this process, shared by its users (a worker's consumer and producers)."""
    if database not in _BELLS:
        _BELLS[database] = Bell(database)
    return _BELLS[database]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

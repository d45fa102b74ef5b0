"""The embedded broker with a doorbell: kombu's SQLAlchemy transport on SQLite, whose idle consumers sleep on a
local datagram socket instead of a fixed poll interval, and whose publishers ring it after each commit.

kombu's virtual transports poll: an idle consumer reads each of its queues, finds them empty and sleeps
``polling_interval`` (1 s) before reading again, so a job queued on the embedded broker waited on average half a
second, and up to one, before its idle worker noticed it (0.6–2.0 s of a tiny job's 1.2–2.7 s). Polling
faster costs a write transaction (``BEGIN IMMEDIATE`` on SQLite) per queue per poll in every consuming process,
and still waits half an interval on average. Here instead:

* a consumer (a process that drains events: a Celery worker's main process) binds a Unix datagram socket, its
  *bell*, named after the broker database and its pid, and registers its pid in the folder
  ``<broker file>.bells``; between empty polls it waits on the bell for at most ``polling_interval`` (kept as the
  fallback: a ring lost to a full socket buffer, a publisher on another host), not a fixed sleep;
* a publisher rings every registered bell after the commit of each message (:meth:`Channel._put`): a datagram, a
  few microseconds, never blocking (a bell whose buffer is full has a wake-up pending already);
* an acknowledgement rings the acknowledging process's own bell: with ``worker_prefetch_multiplier = 1`` and late
  acknowledgement a worker whose slots are full stops reading the queue, and its next read must follow the ack
  at once, not a poll interval later.

No wake-up is lost: a datagram sent between a consumer's empty read and its wait stays in the socket until the wait
reads it. A spurious one costs one empty read. The bells are Linux abstract-namespace sockets (no file to clean up
when a process dies; the pid's marker file is removed by the next publisher that finds the process gone); on other
systems, or for a broker that is not a SQLite file, the transport polls as kombu's does.

Selected by the broker URL scheme ``sqlabell+sqlite:///path`` (:data:`SCHEME`, what
:attr:`app.core.settings.Settings.broker_url` gives by default); its transport options are kombu's SQLAlchemy ones plus
``polling_interval`` (kombu hands every other option to ``create_engine``).
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

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import sqlalchemy as sqla
from sqlalchemy import create_engine, event

SCHEME = "sqlabell"
NOT_ENGINE_OPTIONS = ("queue_tablename", "message_tablename", "callback", "errback", "max_retries",
                      "interval_start", "interval_step", "interval_max", "retry_errors", "polling_interval")


def sqlite_path(url: str) -> Path | None:
    """The database file of a SQLAlchemy SQLite URL (``sqlite:///path``), else None."""
    if not url.startswith("sqlite:///") or url in ("sqlite://", "sqlite:///:memory:"):
        return None
    return Path(url[len("sqlite:///"):].split("?")[0])


class Bell:
    """The bells of one broker database: this process's own (when it consumes) and the ring of every registered one."""

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

    def _send(self, pid: str) -> bool:
        """Ring one bell; False when nothing listens there."""
        with self.lock:
            if self.sender is None:
                self.sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self.sender.setblocking(False)
            try:
                self.sender.sendto(b"!", self.address(pid))
            except (BlockingIOError, InterruptedError):  # its buffer is full: a wake-up is pending there already
                pass
            except OSError:  # ConnectionRefusedError, FileNotFoundError: no such bell
                return False
        return True

    def ring(self) -> None:
        """Wake every registered consumer of this broker (after a message is committed)."""
        if not self.enabled:
            return
        try:
            pids = [entry.name for entry in os.scandir(self.folder)]
        except FileNotFoundError:  # no consumer registered yet
            return
        for pid in pids:
            if not self._send(pid) and pid.isdigit() and not _alive(int(pid)):
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
    """The bell of ``database`` in this process, shared by its connections (a worker's consumer and producers)."""
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


def _write_ahead_log(dbapi_conn, _record) -> None:
    """SQLite in WAL mode (synchronous stays FULL: a committed message survives a power cut): a commit appends to
    the log and syncs it once, where the default rollback journal wrote and synced the journal and the database
    (a 2-core machine under load: a commit's median 0.45 ms against 20 ms, its maximum 10 ms against 137 ms);
    readers no longer block the writer. ``busy_timeout``: a publisher waits for a consumer's read, never fails."""
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


class Channel(sqla.Channel):
    def _engine_from_config(self):
        """kombu's, less this transport's own option (kombu hands all the others to ``create_engine``)."""
        conninfo = self.connection.client
        options = {k: v for k, v in conninfo.transport_options.items() if k not in NOT_ENGINE_OPTIONS}
        engine = create_engine(conninfo.hostname, **options)
        if sqlite_path(conninfo.hostname or "") is not None:
            event.listen(engine, "connect", _write_ahead_log)
        return engine

    def _put(self, queue, payload, **kwargs):
        super()._put(queue, payload, **kwargs)
        self.connection.bell.ring()

    def basic_ack(self, delivery_tag, multiple=False):
        super().basic_ack(delivery_tag, multiple=multiple)
        self.connection.bell.ring_own()

    def basic_reject(self, delivery_tag, requeue=False):
        super().basic_reject(delivery_tag, requeue=requeue)
        if requeue:
            self.connection.bell.ring()
        else:
            self.connection.bell.ring_own()


class Transport(sqla.Transport):
    """kombu's SQLAlchemy transport whose idle wait is the bell's (module docstring)."""

    Channel = Channel

    def __init__(self, client, **kwargs):
        super().__init__(client, **kwargs)
        self.bell = bell_for(sqlite_path(client.hostname or ""))

    def drain_events(self, connection, timeout=None):
        """kombu's virtual ``drain_events``, with the sleep between empty reads replaced by the bell's wait."""
        self.bell.listen()
        started = time.monotonic()
        interval = self.polling_interval
        if timeout and interval and interval > timeout:
            interval = timeout
        while True:
            try:
                self.cycle.get(self._deliver, timeout=timeout)
                return
            except sqla.Empty:
                left = None if timeout is None else timeout - (time.monotonic() - started)
                if left is not None and left <= 0:
                    raise socket.timeout()
                if interval is not None:
                    self.bell.wait(interval if left is None else min(interval, left))


TRANSPORT_ALIASES.setdefault(SCHEME, f"{__name__}:Transport")

"""The embedded broker with a doorbell: kombu's SQLAlchemy transport on SQLite, whose idle consumers sleep on a
local datagram socket instead of a fixed poll interval, and whose publishers ring it after each commit.

kombu's virtual transports poll: an idle consumer reads each of its queues, finds them empty and sleeps
``polling_interval`` (1 s) before reading again, so a job queued on the embedded broker waited on average half a
second, and up to one, before its idle worker noticed it (0.6–2.0 s of a tiny job's 1.2–2.7 s). Polling
faster costs a write transaction (``BEGIN IMMEDIATE`` on SQLite) per queue per poll in every consuming process,
and still waits half an interval on average. Here instead:

* a consumer (a process that drains events: a Celery worker's main process) binds a Unix datagram socket, its
  *bell* (:mod:`app.core.bell`), named after the broker database and its pid, and registers its pid in the folder
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

import socket
import time

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import sqlalchemy as sqla
from sqlalchemy import create_engine, event

from app.core.bell import bell_for, sqlite_path

SCHEME = "sqlabell"
NOT_ENGINE_OPTIONS = ("queue_tablename", "message_tablename", "callback", "errback", "max_retries",
                      "interval_start", "interval_step", "interval_max", "retry_errors", "polling_interval")


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

"""A bounded long-poll of one job: ``GET /api/v1/jobs/{id}?wait_s=w`` answers as soon as the job is in a terminal
state (succeeded, failed, cancelled) or ``w`` seconds (at most :data:`MAX_WAIT_S`) have passed, whichever is first.

A client following a job then sees its end within one check of the server instead of one sleep of its own
(the benchmark's 0.2 s polling added 0.1 s on average to every job), and sends one request per ``w`` seconds.

The wait holds neither a request thread nor a pooled connection while it sleeps: each check is one primary-key
read of (status, created_at) on the request threads, after which the session gives its connection back
(``rollback``), and the sleep is on the event loop. Checks are spaced

    δ(a) = clamp(α · a, δ_min, δ_max),   α = 0.02, δ_min = 0.02 s, δ_max = 0.25 s,

with a the job's age (now − created_at) at the check: the delay added to the end of a job of duration T is at
most max(δ_min, min(α · T, δ_max)) (≤ 2 % of a job's age past 1 s, against half a poll on average, and up to a
whole one, for a client that sleeps between reads), and a waiter on a long job costs at most 4 primary-key reads
a second. That schedule is what a waiter keeps when no end is announced.

On the embedded SQLite database the end rings a doorbell (:mod:`app.core.bell`, named after the database file):
the transaction that ends a job records its id (:func:`notify_ended`) and, after its commit, rings every API
process's bell with it (never for a rolled-back one); each API process reads its bell on a thread of its own
(:class:`EndBell`) and sets that job's waiters' events. A datagram lost to a full buffer costs nothing but speed:
the waiter keeps the check schedule above (a tiny job's end reached its client 18–21 ms after the commit on the
schedule alone, half a 20 ms check plus the read; ``python -m bench.system.dispatch``).

On PostgreSQL the end wakes the waiter at once: the transaction that ends a job (the worker's final write, a cancel
before start) sends ``pg_notify(`` :data:`CHANNEL` ``, job id)`` (:func:`notify_ended`), which PostgreSQL delivers at
its commit and never for a rolled-back one; each API process listens on one connection of its own
(:class:`EndListener`, a thread) and sets the events of that job's waiters. A waiter registers before its first
check, so an end between the check and the wait still wakes it; while listening it checks the status only every
:data:`LISTENING_CHECK_S` (an end written without a notification, or one sent while the listener reconnected), so a
waiter costs one read a second instead of up to 50 (on the schedule above a 1 s job's waiter reads about 40 times).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from sqlalchemy import event, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from app.core.bell import Bell, bell_for, sqlite_path
from app.models import Job, utcnow
from app.core.settings import get_settings

log = logging.getLogger(__name__)

TERMINAL = frozenset({"succeeded", "failed", "cancelled"})
MAX_WAIT_S = 30.0
AGE_FRACTION, MIN_CHECK_S, MAX_CHECK_S = 0.02, 0.02, 0.25
CHANNEL = "fairsolve_job_ended"
ENDED = "fairsolve_jobs_ended"  # Session.info key: the jobs a SQLite transaction ended
LISTENING_CHECK_S = 1.0


def check_interval(age_s: float) -> float:
    """δ(a) = clamp(α · a, δ_min, δ_max): the seconds between two checks of a job ``age_s`` seconds old."""
    return min(MAX_CHECK_S, max(MIN_CHECK_S, AGE_FRACTION * age_s))


def _status(db: Session, job_id: str) -> tuple[str, datetime] | None:
    """(status, created_at) of the job, the connection returned to the pool at once."""
    try:
        return db.execute(select(Job.status, Job.created_at).where(Job.id == job_id)).one_or_none()
    finally:
        db.rollback()


def _age_s(created_at: datetime) -> float:
    if created_at.tzinfo is None:  # SQLite hands back naive datetimes; they are written in UTC
        created_at = created_at.replace(tzinfo=timezone.utc)
    return (utcnow() - created_at).total_seconds()


def notify_ended(session: Session, job_id: str) -> None:
    """In the transaction that ends job ``job_id``: wake its waiters at commit (PostgreSQL's NOTIFY; on SQLite the
    id is kept with the session and rung after its commit, :func:`_ring_ended`)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_notify(:channel, :job)"), {"channel": CHANNEL, "job": job_id})
    else:
        session.info.setdefault(ENDED, set()).add(job_id)


@event.listens_for(Session, "after_commit")
def _ring_ended(session: Session) -> None:
    """After a SQLite commit: ring the job-end bell with each job the transaction ended."""
    ended = session.info.pop(ENDED, None)
    if ended:
        bell = _end_bell(session)
        for job_id in ended:
            bell.ring(job_id.encode())


@event.listens_for(Session, "after_rollback")
def _forget_ended(session: Session) -> None:
    """A rolled-back transaction ended nothing."""
    session.info.pop(ENDED, None)


def _end_bell(session: Session) -> Bell:
    return end_bell_of(session.get_bind().url.render_as_string(hide_password=False))


def end_bell_of(database_url: str) -> Bell:
    """The job-end bell of a SQLite database, named after its file's absolute path (the API's settings and a
    worker's engine name one file alike); disabled for any other database, or off Linux."""
    path = sqlite_path(database_url)
    return bell_for(None if path is None else Path(f"{path.resolve()}.ends"))


def announce_ended(session: Session, job_id: str) -> None:
    """After the commit that ended job ``job_id``: wake its waiters in a transaction of its own (PostgreSQL).

    PostgreSQL takes one lock on its notification queue at the commit of every notifying transaction and holds it
    until the commit is durable, so NOTIFY inside a writing transaction serialises all such commits over their WAL
    flushes (50 threads updating one row each: 672 commits/s with the NOTIFY inside, 3,288/s with it in a
    transaction of its own, 3,820/s without). A transaction that only notifies writes nothing to flush. Used where
    many jobs end at once (cancels); a crash between the two commits leaves waiters to their next status check."""
    if session.get_bind().dialect.name == "postgresql":
        notify_ended(session, job_id)
        session.commit()
    else:  # (the end is committed already)
        _end_bell(session).ring(job_id.encode())


class EndWaiters:
    """The events of this process's waiters by job id; a listener thread calls :meth:`_wake` with each ended job.
    ``listening`` is True while every end is announced (PostgreSQL's LISTEN holds): waiters then check rarely."""

    listening = False

    def __init__(self) -> None:
        self._waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._lock = threading.Lock()

    def register(self, job_id: str, event: asyncio.Event) -> None:
        with self._lock:
            self._waiters.setdefault(job_id, set()).add((asyncio.get_running_loop(), event))

    def unregister(self, job_id: str, event: asyncio.Event) -> None:
        with self._lock:
            waiters = self._waiters.get(job_id, set())
            waiters.discard((asyncio.get_running_loop(), event))
            if not waiters:
                self._waiters.pop(job_id, None)

    def _wake(self, job_id: str) -> None:
        with self._lock:
            waiters = list(self._waiters.get(job_id, ()))
        for loop, woken in waiters:
            loop.call_soon_threadsafe(woken.set)


class EndListener(EndWaiters):
    """This process's LISTEN on :data:`CHANNEL` (a daemon thread with a connection of its own, listening again a
    second after any error): each notification sets the events its job's waiters registered."""

    def __init__(self, dsn: str) -> None:
        super().__init__()
        self.dsn = dsn
        threading.Thread(target=self._listen, name="job-end-listener", daemon=True).start()

    def _listen(self) -> None:
        import psycopg

        while True:
            try:
                with psycopg.connect(self.dsn, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.listening = True
                    for note in conn.notifies():
                        self._wake(note.payload)
            except Exception as exc:  # the database restarted, the network dropped: listen again
                log.warning("job-end listener: %s; listening again in 1 s", exc)
            self.listening = False
            time.sleep(1.0)


class EndBell(EndWaiters):
    """This process's job-end bell on the embedded database (a daemon thread reading it): each ring's job id sets
    the events of that job's waiters. A ring can be lost (a full buffer), so waiters keep their check schedule."""

    def __init__(self, bell: Bell) -> None:
        super().__init__()
        self.bell = bell
        bell.listen()
        if bell.sock is not None:
            threading.Thread(target=self._read, name="job-end-bell", daemon=True).start()

    def _read(self) -> None:
        sock = self.bell.sock
        sock.setblocking(True)  # (this thread alone reads it)
        while True:
            try:
                self._wake(sock.recv(256).decode(errors="replace"))
            except OSError as exc:  # closed at exit
                log.debug("job-end bell: %s", exc)
                return


@lru_cache(maxsize=1)
def end_listener() -> EndWaiters | None:
    """The process's :class:`EndListener` on PostgreSQL or :class:`EndBell` on a SQLite file (started on first use);
    None when neither applies."""
    url = make_url(get_settings().database_url)
    if url.get_backend_name() == "postgresql":
        return EndListener(url.set(drivername="postgresql").render_as_string(hide_password=False))
    bell = end_bell_of(get_settings().database_url)
    return EndBell(bell) if bell.enabled else None


async def wait_for_end(db: Session, job_id: str, wait_s: float) -> None:
    """Return once the job is terminal (or gone) or ``wait_s`` seconds have passed (the caller reads it after); an
    announced end returns at once, without a status check of its own (the announcement follows the commit)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    listener, woken = end_listener(), asyncio.Event()
    if listener is not None:
        listener.register(job_id, woken)
    try:
        while True:
            row = await run_in_threadpool(_status, db, job_id)
            left = deadline - loop.time()
            if row is None or row[0] in TERMINAL or left <= 0:
                return
            pause = LISTENING_CHECK_S if listener is not None and listener.listening else \
                check_interval(_age_s(row[1]))
            try:
                await asyncio.wait_for(woken.wait(), timeout=min(left, pause))
            except TimeoutError:
                continue
            return   # rung after the commit that ended the job: the caller's read sees its end
    finally:
        if listener is not None:
            listener.unregister(job_id, woken)

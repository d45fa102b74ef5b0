"""app.jobs.wait's wake-ups: a committed ``notify_ended`` wakes the waiters of that job only, a rolled-back one wakes
nobody, on PostgreSQL (NOTIFY) and on the embedded SQLite database (its job-end bell); and the check schedule that
waiters keep when an end is not announced."""

from __future__ import annotations

import asyncio

import psycopg
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from app.jobs.wait import MAX_CHECK_S, MIN_CHECK_S, EndBell, EndListener, check_interval, end_bell_of, notify_ended
from bench.common.stack import PG_ADMIN
from bench.common.wait import wait_until
from tests.support.aio import run_coroutine


def test_the_check_interval_is_a_bounded_share_of_the_jobs_age():
    assert check_interval(0.0) == MIN_CHECK_S and check_interval(3600.0) == MAX_CHECK_S
    assert check_interval(5.0) == 0.1  # 2 % of the age in between


def _committed_ends_wake_only_their_waiters(listener, engine) -> None:
    """A rolled-back end and a commit that ended nothing wake nobody; a committed end wakes its job's waiters only."""

    async def scenario() -> tuple[bool, bool, bool]:
        mine, other = asyncio.Event(), asyncio.Event()
        listener.register("job-a", mine)
        listener.register("job-b", other)
        with Session(engine) as s:
            s.execute(text("SELECT 1"))
            notify_ended(s, "job-a")
            s.rollback()
        with Session(engine) as s, s.begin():
            s.execute(text("SELECT 1"))
        await asyncio.sleep(0.5)
        quiet = not mine.is_set() and not other.is_set()
        with Session(engine) as s, s.begin():
            notify_ended(s, "job-a")
        await asyncio.wait_for(mine.wait(), timeout=10)
        listener.unregister("job-a", mine)
        listener.unregister("job-b", other)
        return quiet, mine.is_set(), other.is_set()

    try:
        assert run_coroutine(scenario()) == (True, True, False)
    finally:
        engine.dispose()


def test_a_committed_end_wakes_its_jobs_waiters_and_a_rolled_back_one_nobody():
    listener = EndListener(PG_ADMIN)
    wait_until(lambda: listener.listening, 10, 0.05, "the listener's LISTEN")
    _committed_ends_wake_only_their_waiters(
        listener, create_engine(PG_ADMIN.replace("postgresql://", "postgresql+psycopg://", 1)))
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:  # the listener's own session is there
        assert conn.execute("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'").fetchone()[0] >= 1


def test_on_sqlite_a_committed_end_rings_its_jobs_waiters_and_a_rolled_back_one_nobody(tmp_path):
    url = f"sqlite:///{tmp_path / 'app.db'}"
    listener = EndBell(end_bell_of(url))
    assert listener.bell.enabled and not listener.listening  # (a ring can be lost: waiters keep their schedule)
    _committed_ends_wake_only_their_waiters(listener, create_engine(url))

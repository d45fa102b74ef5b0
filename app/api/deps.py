"""Injected dependencies: a database session per request, the settings, the authenticated caller.

They are coroutines, so resolving them costs no hop to a worker thread (FastAPI runs a plain ``def``
dependency in its thread pool): only the session's close, which returns its connection, and a key
lookup the cache cannot answer run in a thread. A request then crosses threads twice (its route
and the close) instead of four or five times, and each crossing waits for the GIL.

The close runs on threads of its own, never on the request threads (``FAIRSOLVE_API_THREADS``): a
request thread can wait in the connection pool's checkout, and if the closes that would return the
connections queued behind such threads, a saturated process deadlocked until the pool's 30 s timeout
(measured: 50 closed-loop clients, 12 uploads answered 500 after 30 s).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Annotated, TypeVar

from fastapi import Depends, HTTPException, Query, Request
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from app.auth.keys import Caller, CallerCache, presented_key
from app.core.db import session_factory
from app.models import Base
from app.api.middleware.ratelimit import SharedBuckets, TokenBuckets
from app.auth.sessions import check_same_origin
from app.core.settings import Settings, get_settings


def close_quietly(session: Session) -> None:
    """Close ``session``, returning its connection; a connection the database dropped (an outage, a restart) is
    discarded instead of raising after the answer was sent (uvicorn then reset the client's next request)."""
    try:
        session.close()
    except (OperationalError, InterfaceError):
        session.invalidate()


@lru_cache
def session_closer() -> ThreadPoolExecutor:
    """The threads that close request sessions (a close is one round trip: the connection's reset)."""
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="db-close")


async def get_db() -> AsyncIterator[Session]:
    """A session per request: made on the event loop (no I/O before its first query), closed on
    :func:`session_closer`'s threads."""
    session = session_factory()()
    try:
        yield session
    finally:
        await asyncio.get_running_loop().run_in_executor(session_closer(), close_quietly, session)


async def app_settings() -> Settings:
    return get_settings()


DB = Annotated[Session, Depends(get_db)]
MAX_OFFSET = 2**63 - 1  # OFFSET is a signed 64-bit integer in PostgreSQL and SQLite: a larger one was a 500
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Rows to skip.")]
AppSettings = Annotated[Settings, Depends(app_settings)]
T = TypeVar("T", bound=Base)


@lru_cache
def rate_buckets() -> TokenBuckets | SharedBuckets:
    """Shared by the API processes through a Redis broker; the process's own on the embedded defaults."""
    settings = get_settings()
    if settings.broker_url.startswith(("redis://", "rediss://")):
        return SharedBuckets(settings.broker_url, settings.rate_limit_per_s, settings.rate_limit_burst,
                             prefix=settings.broker_key_prefix)
    return TokenBuckets(settings.rate_limit_per_s, settings.rate_limit_burst)


@lru_cache
def caller_cache() -> CallerCache:
    return CallerCache(get_settings().auth_cache_s)


def lookup_caller(cache: CallerCache, db: Session, key: str | None) -> Caller:
    """The key's caller read from the database, its connection returned to the pool at once: the
    request may wait (for an upload slot, for a thread) before it needs one again, and a connection
    held through such waits starved the pool of a saturated process (measured: 50 clients uploading
    at once held all 30 while the requests that could free them waited for threads)."""
    try:
        return cache.caller(db, key)
    finally:
        db.rollback()


async def current_caller(request: Request, db: DB) -> Caller:
    """The key's owner (401 without a valid key), after the key's request-rate check (429); a state change
    authenticated by the session cookie from another origin is 403 before anything is looked up. Once per
    request: a request with a body was already authenticated by :class:`app.api.middleware.auth_gate.AuthBeforeBody`."""
    check_same_origin(request)
    if (known := getattr(request.state, "caller", None)) is not None:
        return known
    key, cache = presented_key(request), caller_cache()
    caller = cache.fresh(key) or await run_in_threadpool(lookup_caller, cache, db, key)
    wait = await rate_buckets().acquire(caller.key_id)
    if wait:
        raise HTTPException(status_code=429, detail=f"rate limit of {rate_buckets().rate:g} requests/s exceeded",
                            headers={"Retry-After": TokenBuckets.retry_after(wait)})
    request.state.owner, request.state.caller = caller.owner, caller
    return caller


async def caller_before_body(request: Request) -> Caller:
    """:func:`current_caller` on a session of its own, for a request whose route (and body) has not run yet."""
    session = session_factory()()
    try:
        return await current_caller(request, session)
    finally:
        await asyncio.get_running_loop().run_in_executor(session_closer(), close_quietly, session)


async def admin_caller(caller: Annotated[Caller, Depends(current_caller)]) -> Caller:
    if not caller.admin:
        raise HTTPException(status_code=403, detail="this key may not manage keys")
    return caller


CurrentCaller = Annotated[Caller, Depends(current_caller)]
AdminCaller = Annotated[Caller, Depends(admin_caller)]


#: ``SELECT ... FOR KEY SHARE``: the row cannot be deleted until the transaction ends (what a new row
#: referring to it needs); concurrent readers and other referrers are not blocked.
KEEP = {"read": True, "key_share": True}


def find(db: Session, model: type[T], key: str, lock: bool | dict | None = None) -> T | None:
    """``db.get``, with a key PostgreSQL cannot hold (a NUL character) answered as no row; ``lock``: its
    ``with_for_update`` (``True``: FOR UPDATE, :data:`KEEP`: FOR KEY SHARE; ignored by SQLite)."""
    return db.get(model, key, with_for_update=lock) if "\x00" not in key else None


def owned(db: Session, model: type[T], key: str, caller: Caller, lock: bool | dict | None = None) -> T | None:
    """The row if it exists and belongs to the caller; None for a missing row and for another owner's alike."""
    row = find(db, model, key, lock)
    return row if row is not None and row.owner == caller.owner else None


def get_or_404(db: Session, model: type[T], key: str, what: str, caller: Caller,
               lock: bool | dict | None = None) -> T:
    """:func:`owned`, or a 404 that reads the same whether the row is missing or another owner's."""
    row = owned(db, model, key, caller, lock)
    if row is None:
        raise HTTPException(status_code=404, detail=f"{what} {key!r} not found")
    return row

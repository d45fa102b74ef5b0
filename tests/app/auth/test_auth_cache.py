"""The API process's cache of authenticated keys: fresh entries skip the lookup, revocation ends them."""

from __future__ import annotations

import time

import pytest
from fastapi import HTTPException
from sqlalchemy import create_engine, event
from sqlalchemy.orm import Session

from app.auth.keys import CallerCache, create_key, revoke
from app.api.deps import lookup_caller
from app.models import ApiKey, Base


@pytest.fixture()
def db():
    engine = create_engine("sqlite://")
    Base.metadata.create_all(engine)
    with Session(engine, expire_on_commit=False) as session:
        yield session
    engine.dispose()


def count_selects(session: Session) -> list[str]:
    seen: list[str] = []
    event.listen(session.get_bind(), "before_cursor_execute",
                 lambda conn, cur, stmt, *a: seen.append(stmt) if stmt.lstrip().upper().startswith("SELECT") else None)
    return seen


def test_fresh_entries_skip_the_lookup_and_expire(db):
    row, key = create_key(db, "alice")
    cache, selects = CallerCache(ttl_s=0.3), count_selects(db)
    assert cache.caller(db, key).owner == "alice"
    assert cache.caller(db, key).key_id == row.id
    assert len(selects) == 1  # the second request was answered from the cache
    revoke(db.get(ApiKey, row.id))  # revoked by another process: this one learns it when the entry expires
    db.commit()
    assert cache.caller(db, key).owner == "alice"
    time.sleep(0.35)
    with pytest.raises(HTTPException) as err:
        cache.caller(db, key)
    assert err.value.status_code == 401


def test_forget_ends_a_revoked_key_at_once_and_failures_are_not_cached(db):
    row, key = create_key(db, "bob")
    cache = CallerCache(ttl_s=3600)
    assert cache.caller(db, key).owner == "bob"
    revoke(db.get(ApiKey, row.id))
    db.commit()
    cache.forget(row.id)
    for _ in range(2):
        with pytest.raises(HTTPException):
            cache.caller(db, key)
    with pytest.raises(HTTPException):
        cache.caller(db, None)


def test_zero_ttl_reads_every_time(db):
    _, key = create_key(db, "carol")
    cache, selects = CallerCache(ttl_s=0), count_selects(db)
    for _ in range(3):
        cache.caller(db, key)
    assert len(selects) == 3


def test_a_request_lookup_returns_its_connection_at_once(db):
    """The request may then wait (an upload slot, a thread) without holding a pooled connection."""
    _, key = create_key(db, "alice")
    assert lookup_caller(CallerCache(ttl_s=0), db, key).owner == "alice"
    assert not db.in_transaction()

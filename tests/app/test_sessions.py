"""Dashboard sessions (expiry, sign-out, key revocation) on SQLite, and the same-origin rule for state changes
the session cookie authenticates."""

from __future__ import annotations

import pytest
from fastapi import HTTPException
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session
from starlette.requests import Request

from app.auth import authenticate, create_key, revoke
from app.models import Base, DashboardSession
from app.sessions import SESSION_COOKIE, check_same_origin, close_session, open_session, session_key


@pytest.fixture
def db(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 's.db'}")
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        yield session
    engine.dispose()


def test_a_session_maps_to_its_key_until_sign_out_expiry_or_revocation(db):
    row, key = create_key(db, "alice")
    token = open_session(db, row.id, ttl_s=60)
    assert token.startswith("fss_") and key not in token
    assert authenticate(db, token).owner == "alice"
    close_session(db, token)
    assert session_key(db, token) is None

    assert session_key(db, open_session(db, row.id, ttl_s=-1)) is None  # expired
    live = open_session(db, row.id, ttl_s=60)
    assert db.scalar(select(func.count()).select_from(DashboardSession)) == 1  # ended sessions were deleted
    revoke(row)
    db.commit()
    with pytest.raises(HTTPException) as exc:
        authenticate(db, live)
    assert exc.value.status_code == 401


def request(method: str, headers: dict[str, str], cookie: bool = True) -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in {"host": "127.0.0.1:8000", **headers}.items()]
    if cookie:
        raw.append((b"cookie", f"{SESSION_COOKIE}=fss_x".encode()))
    return Request({"type": "http", "method": method, "scheme": "http", "path": "/api/v1/jobs/1/cancel",
                    "headers": raw, "query_string": b"", "server": ("127.0.0.1", 8000)})


@pytest.mark.parametrize("method, headers, cookie, allowed", [
    ("POST", {"sec-fetch-site": "same-origin", "origin": "http://127.0.0.1:8000"}, True, True),
    ("POST", {"origin": "http://127.0.0.1:8000"}, True, True),  # no Fetch metadata: Origin decides
    ("POST", {"sec-fetch-site": "same-site", "origin": "http://127.0.0.1:9999"}, True, False),  # another port
    ("DELETE", {"sec-fetch-site": "cross-site"}, True, False),
    ("PATCH", {"origin": "http://127.0.0.1:9999"}, True, False),
    ("PUT", {"origin": "null"}, True, False),
    ("POST", {}, True, False),  # a cookie but no word on where the request comes from
    ("GET", {"sec-fetch-site": "cross-site"}, True, True),  # reads change nothing
    ("POST", {"sec-fetch-site": "cross-site"}, False, True),  # no cookie: the key header authenticates
    ("POST", {"sec-fetch-site": "cross-site", "authorization": "Bearer fsk_k"}, True, True),
])
def test_cookie_authenticated_state_changes_must_come_from_this_origin(method, headers, cookie, allowed):
    req = request(method, headers, cookie)
    if allowed:
        check_same_origin(req)
    else:
        with pytest.raises(HTTPException) as exc:
            check_same_origin(req)
        assert exc.value.status_code == 403

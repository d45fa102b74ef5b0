"""Dashboard sessions (expiry, sign-out, key revocation) on SQLite, and the same-origin rule for state changes
the session cookie authenticates."""

from __future__ import annotations

import pytest
from fastapi import HTTPException
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session
from starlette.requests import Request

from app.auth.keys import authenticate, create_key, presented_key, revoke
from app.models import Base, DashboardSession
from app.auth.sessions import (BIND_COOKIE, SESSION_COOKIE, check_same_origin, close_session, cookie_credential,
                          credential, open_session, session_key)


@pytest.fixture
def db(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 's.db'}")
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        yield session
    engine.dispose()


def test_a_session_maps_to_its_key_until_sign_out_expiry_or_revocation(db):
    row, key = create_key(db, "alice")
    token, binding = open_session(db, row.id, ttl_s=60)
    pair = credential(token, binding)
    assert token.startswith("fss_") and key not in token and key not in binding
    assert authenticate(db, pair).owner == "alice"
    close_session(db, pair)
    assert session_key(db, pair) is None

    assert session_key(db, credential(*open_session(db, row.id, ttl_s=-1))) is None  # expired
    live = credential(*open_session(db, row.id, ttl_s=60))
    assert db.scalar(select(func.count()).select_from(DashboardSession)) == 1  # ended sessions were deleted
    revoke(row)
    db.commit()
    with pytest.raises(HTTPException) as exc:
        authenticate(db, live)
    assert exc.value.status_code == 401


def test_a_session_is_its_id_and_binding_together(db):
    """Cookie tossing (issue 31): another account's session id beside this browser's binding, either value
    alone, or a second copy of either cookie authenticates nothing."""
    alice, bob = create_key(db, "alice")[0], create_key(db, "bob")[0]
    (a_token, a_bind), (b_token, b_bind) = open_session(db, alice.id, 60), open_session(db, bob.id, 60)
    assert authenticate(db, credential(b_token, b_bind)).owner == "bob"
    for wrong in (credential(a_token, b_bind), credential(b_token, a_bind), b_token, credential(b_token, "")):
        with pytest.raises(HTTPException):
            authenticate(db, wrong)

    def cookies(header: str, scheme: str = "http") -> Request:
        return Request({"type": "http", "method": "GET", "scheme": scheme, "path": "/", "query_string": b"",
                        "headers": [(b"host", b"127.0.0.1:8000"), (b"cookie", header.encode())]})

    both = f"{SESSION_COOKIE}={b_token}; {BIND_COOKIE}={b_bind}"
    assert cookie_credential(cookies(both)) == credential(b_token, b_bind)
    assert cookie_credential(cookies(f"{SESSION_COOKIE}={b_token}")) is None
    assert cookie_credential(cookies(f"{SESSION_COOKIE}={a_token}; {both}")) is None  # a tossed copy beside it
    assert cookie_credential(cookies(f"{both}; {BIND_COOKIE}={a_bind}")) is None
    assert cookie_credential(cookies(both, "https")) is None  # HTTPS reads only the __Host- cookies
    assert cookie_credential(cookies(f"__Host-{SESSION_COOKIE}={b_token}; __Host-{BIND_COOKIE}={b_bind}",
                                     "https")) == credential(b_token, b_bind)


@pytest.mark.parametrize("header", ["authorization", "x-api-key"])
def test_a_session_id_is_not_an_api_key(db, header):
    row = create_key(db, "alice")[0]
    token, binding = open_session(db, row.id, 60)
    for sent in (token, credential(token, binding)):
        value = f"Bearer {sent}" if header == "authorization" else sent
        req = Request({"type": "http", "method": "GET", "scheme": "http", "path": "/", "query_string": b"",
                       "headers": [(b"host", b"h"), (header.encode(), value.encode())]})
        with pytest.raises(HTTPException) as exc:
            presented_key(req)
        assert exc.value.status_code == 401 and "not an API key" in exc.value.detail


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


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_sign_in_sets_the_pair_with_host_prefixed_secure_names_over_https(tmp_path, scheme):
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from app.api.dashboard import install
    from app.api.deps import app_settings, get_db
    from app.core.settings import get_settings

    engine = create_engine(f"sqlite:///{tmp_path / 'signin.db'}")
    Base.metadata.create_all(engine)
    with Session(engine) as db:
        key = create_key(db, "alice")[1]

    def sessions():
        with Session(engine) as db:
            yield db

    app = FastAPI()
    install(app)
    app.dependency_overrides[get_db] = sessions
    app.dependency_overrides[app_settings] = get_settings
    origin = f"{scheme}://testserver"
    client = TestClient(app, base_url=origin, follow_redirects=False)
    answer = client.post("/signin", data={"api_key": key, "next": "/"}, headers={"origin": origin})
    assert answer.status_code == 303, answer.text
    prefix = "__Host-" if scheme == "https" else ""
    cookies = {c.split("=", 1)[0]: c for c in answer.headers.get_list("set-cookie")}
    assert set(cookies) == {prefix + SESSION_COOKIE, prefix + BIND_COOKIE}
    for line in cookies.values():
        attributes = line.lower()
        assert "httponly" in attributes and "path=/" in attributes and "samesite=strict" in attributes
        assert ("secure" in attributes) == (scheme == "https") and "domain=" not in attributes
    engine.dispose()

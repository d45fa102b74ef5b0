"""Dashboard sign-in sessions, and the same-origin rule for state changes a session cookie authenticates.

Signing in with an API key creates a session: a random id ``fss_`` + 32 random bytes (URL-safe
base64) kept in the HttpOnly cookie ``fairsolve_session``, of which only ``sha256(id)`` is stored,
mapped to the key's id. The cookie never holds the key. A session is valid while it is not revoked
(sign-out revokes it), has not expired (``FAIRSOLVE_SESSION_TTL_S`` after sign-in) and its key is not
revoked (revoking a key ends its sessions).

SameSite=Strict keeps the cookie from other *sites*, but a page on another port of the same host is
the same site and gets it sent along. So a request authenticated by the cookie (no ``Authorization``
or ``X-API-Key`` header) whose method changes state (anything but GET, HEAD, OPTIONS) is accepted only
when the browser vouches that it comes from this origin: ``Sec-Fetch-Site: same-origin``, or, from a
browser that does not send Fetch metadata, an ``Origin`` equal to this origin (scheme, host and port of
the request). A request with neither is refused: every browser that could carry the cookie sends one.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

from fastapi import HTTPException, Request
from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session

from app.models import ApiKey, DashboardSession, utcnow

SESSION_PREFIX = "fss_"
SESSION_COOKIE = "fairsolve_session"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def is_session_token(credential: str | None) -> bool:
    return bool(credential) and credential.startswith(SESSION_PREFIX)


def open_session(db: Session, key_id: str, ttl_s: float) -> str:
    """Store a new session of key ``key_id`` valid for ``ttl_s`` seconds; return its id (for the cookie only).
    The key's ended sessions (expired or signed out) are deleted meanwhile, so the table stays small."""
    token = SESSION_PREFIX + secrets.token_urlsafe(32)
    now = utcnow()
    db.execute(delete(DashboardSession).where(DashboardSession.key_id == key_id,
                                              or_(DashboardSession.expires_at <= now,
                                                  DashboardSession.revoked_at.is_not(None))))
    db.add(DashboardSession(token_hash=token_hash(token), key_id=key_id, created_at=now,
                            expires_at=now + timedelta(seconds=ttl_s)))
    db.commit()
    return token


def session_key(db: Session, token: str) -> ApiKey | None:
    """The key of a valid session (not revoked, not expired, its key not revoked), else None."""
    row = db.execute(select(DashboardSession.expires_at, ApiKey)
                     .join(ApiKey, ApiKey.id == DashboardSession.key_id)
                     .where(DashboardSession.token_hash == token_hash(token), DashboardSession.revoked_at.is_(None),
                            ApiKey.revoked_at.is_(None))).first()
    if row is None:
        return None
    expires_at = row[0] if row[0].tzinfo else row[0].replace(tzinfo=timezone.utc)  # SQLite drops the zone
    return row[1] if expires_at > datetime.now(timezone.utc) else None


def close_session(db: Session, token: str) -> None:
    """Revoke the session ``token`` (sign-out); unknown tokens are ignored."""
    db.execute(update(DashboardSession).where(DashboardSession.token_hash == token_hash(token),
                                              DashboardSession.revoked_at.is_(None)).values(revoked_at=utcnow()))
    db.commit()


def via_cookie(request: Request) -> bool:
    """Whether the request is authenticated by the session cookie (no key header takes precedence)."""
    headers = request.headers
    has_header = headers.get("authorization", "").lower().startswith("bearer ") or headers.get("x-api-key")
    return not has_header and bool(request.cookies.get(SESSION_COOKIE))


def own_origin(request: Request) -> str:
    """This request's origin as a browser writes it: ``scheme://host[:port]`` from the Host header."""
    return f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}".lower()


def from_this_origin(request: Request) -> bool:
    """The browser says the request comes from a page of this origin (Fetch metadata, else ``Origin``)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site == "same-origin"
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        return False
    parts = urlsplit(origin.lower())
    return f"{parts.scheme}://{parts.netloc}" == own_origin(request)


def check_same_origin(request: Request) -> None:
    """403 for a cookie-authenticated state change that the browser does not vouch comes from this origin."""
    if request.method in SAFE_METHODS or not via_cookie(request):
        return
    if not from_this_origin(request):
        raise HTTPException(status_code=403, detail="cross-origin request refused: a state change authenticated "
                            "by the session cookie must come from this site's own pages (Origin / Sec-Fetch-Site)")

"""Dashboard sign-in sessions, bound to the browser that signed in, and the same-origin rule for state changes a
session cookie authenticates.

Signing in with an API key creates a session: a random id ``fss_`` + 32 random bytes (URL-safe base64) in the
HttpOnly cookie ``fairsolve_session``, and a second random value (32 bytes) in the HttpOnly cookie
``fairsolve_bind``, both set by the sign-in's answer. Only ``sha256(id + "." + binding)`` is stored, mapped to the
key's id, so the session is the *pair*: one value alone authenticates nothing. The cookies never hold the key. A
session is valid while it is not revoked (sign-out revokes it), has not expired (``FAIRSOLVE_SESSION_TTL_S`` after
sign-in) and its key is not revoked (revoking a key ends its sessions). Over HTTPS the cookies are named
``__Host-fairsolve_session`` and ``__Host-fairsolve_bind`` (Secure, ``Path=/``, no ``Domain``: a browser accepts
them only from a secure page of this very host, never from a sibling domain or a plain-HTTP port), and an HTTPS
request reads only those.

Cookies are not separated by port: a server on another port of the same host can set ours (cookie tossing).
Tossing the attacker's own session id into the victim's browser used to sign the victim in as the
attacker (the victim's upload landed in the attacker's datasets); now the victim's binding does not match it and
the browser is signed out instead. A request carrying either cookie twice (a tossed copy with another ``Path``
beside the real one) authenticates nothing. An attacker who tosses both values of a pair of their own is not
detectable by the server (such a server also receives the victim's cookies: a host must not serve untrusted
content on another port); every page then names the signed-in account beside its sign-out button. A session id
is never an API key: sent as ``Authorization: Bearer`` or ``X-API-Key`` it is a 401.

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

from fastapi import HTTPException, Request, Response
from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session

from app.models import ApiKey, DashboardSession, utcnow

SESSION_PREFIX = "fss_"
SESSION_COOKIE, BIND_COOKIE, HOST_PREFIX = "fairsolve_session", "fairsolve_bind", "__Host-"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def is_session_token(credential: str | None) -> bool:
    return bool(credential) and credential.startswith(SESSION_PREFIX)


def credential(token: str, binding: str) -> str:
    """What a session is stored (hashed) and looked up by: its id and its binding together."""
    return f"{token}.{binding}"


def open_session(db: Session, key_id: str, ttl_s: float) -> tuple[str, str]:
    """Store a new session of key ``key_id`` valid for ``ttl_s`` seconds; return its id and binding (for the
    cookies only). The key's ended sessions (expired or signed out) are deleted meanwhile, so the table stays small."""
    token, binding = SESSION_PREFIX + secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    now = utcnow()
    db.execute(delete(DashboardSession).where(DashboardSession.key_id == key_id,
                                              or_(DashboardSession.expires_at <= now,
                                                  DashboardSession.revoked_at.is_not(None))))
    db.add(DashboardSession(token_hash=token_hash(credential(token, binding)), key_id=key_id, created_at=now,
                            expires_at=now + timedelta(seconds=ttl_s)))
    db.commit()
    return token, binding


def cookie_names(request: Request) -> tuple[str, str]:
    """The session and binding cookies' names for this request: ``__Host-`` prefixed over HTTPS."""
    prefix = HOST_PREFIX if request.url.scheme == "https" else ""
    return prefix + SESSION_COOKIE, prefix + BIND_COOKIE


def has_session_cookie(request: Request) -> bool:
    return bool(request.cookies.get(cookie_names(request)[0]))


def cookie_credential(request: Request) -> str | None:
    """The session credential of the request's cookies; None without both, or with either sent twice (tossed)."""
    session_name, bind_name = cookie_names(request)
    token, binding = request.cookies.get(session_name), request.cookies.get(bind_name)
    if not is_session_token(token) or not binding:
        return None
    sent = [part.split("=", 1)[0].strip() for part in request.headers.get("cookie", "").split(";")]
    if sent.count(session_name) > 1 or sent.count(bind_name) > 1:
        return None
    return credential(token, binding)


def set_session_cookies(response: Response, request: Request, token: str, binding: str) -> None:
    """The sign-in's cookies: HttpOnly, SameSite=Strict, ``Path=/``, Secure over HTTPS, no ``max_age`` (they end
    with the browser; the server ends the session at its expiry)."""
    secure = request.url.scheme == "https"
    for name, value in zip(cookie_names(request), (token, binding)):
        response.set_cookie(name, value, httponly=True, samesite="strict", path="/", secure=secure)


def clear_session_cookies(response: Response, request: Request) -> None:
    secure = request.url.scheme == "https"
    for name in cookie_names(request):
        response.delete_cookie(name, path="/", httponly=True, samesite="strict", secure=secure)


def session_key(db: Session, token: str) -> ApiKey | None:
    """The key of a valid session (not revoked, not expired, its key not revoked), else None; ``token``: the
    session's :func:`credential`."""
    row = db.execute(select(DashboardSession.expires_at, ApiKey)
                     .join(ApiKey, ApiKey.id == DashboardSession.key_id)
                     .where(DashboardSession.token_hash == token_hash(token), DashboardSession.revoked_at.is_(None),
                            ApiKey.revoked_at.is_(None))).first()
    if row is None:
        return None
    expires_at = row[0] if row[0].tzinfo else row[0].replace(tzinfo=timezone.utc)  # SQLite drops the zone
    return row[1] if expires_at > datetime.now(timezone.utc) else None


def close_session(db: Session, token: str) -> None:
    """Revoke the session of :func:`credential` ``token`` (sign-out); unknown ones are ignored."""
    db.execute(update(DashboardSession).where(DashboardSession.token_hash == token_hash(token),
                                              DashboardSession.revoked_at.is_(None)).values(revoked_at=utcnow()))
    db.commit()


def via_cookie(request: Request) -> bool:
    """Whether the request is authenticated by the session cookie (no key header takes precedence)."""
    headers = request.headers
    has_header = headers.get("authorization", "").lower().startswith("bearer ") or headers.get("x-api-key")
    return not has_header and has_session_cookie(request)


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

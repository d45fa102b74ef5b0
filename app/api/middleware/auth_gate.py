"""Requests to ``/api/v1`` that carry a body are authenticated before a byte of the body is read.

FastAPI reads and parses a request's body before it resolves the route's dependencies, so a caller
without a key could make the API read (and parse) a body up to the body limit before its 401
(104 MiB of JSON took an API process from 772 to 1,649 MiB). This ASGI middleware runs
the route's own authentication (:func:`app.api.deps.current_caller`: key or session cookie, then the
rate limit) from the headers alone; a refusal (401, 429, 503 of :mod:`app.api.unavailable`) is answered without
reading the body, and an accepted caller is kept on the request so that the route's dependency does not look it up
again.
"""

from __future__ import annotations

from fastapi import HTTPException
from fastapi.responses import JSONResponse
from starlette.requests import Request

from app.api.deps import caller_before_body
from app.api.unavailable import UNAVAILABLE, unavailable_answer

PREFIX = "/api/v1/"


def carries_body(scope) -> bool:
    """A declared body: a non-zero ``Content-Length`` or a ``Transfer-Encoding`` (chunked)."""
    headers = dict(scope.get("headers") or [])
    length = headers.get(b"content-length", b"0").strip()
    return b"transfer-encoding" in headers or length not in (b"", b"0")


class AuthBeforeBody:
    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX) or not carries_body(scope):
            return await self.app(scope, receive, send)
        try:
            await caller_before_body(Request(scope))  # headers and cookies only: no receive, no body
        except HTTPException as exc:
            return await JSONResponse({"detail": exc.detail}, exc.status_code, exc.headers)(scope, receive, send)
        except UNAVAILABLE as exc:
            return await unavailable_answer(exc, scope["method"], scope["path"])(scope, receive, send)
        await self.app(scope, receive, send)

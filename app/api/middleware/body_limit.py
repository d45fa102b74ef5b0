"""Request bodies larger than their limit are refused before anything is spooled to disk or parsed.

Two limits: a multipart upload (``multipart/form-data``: datasets, models) may reach the upload limit
(``FAIRSOLVE_MAX_UPLOAD_BYTES``, plus room for the part headers); any other body (JSON, forms) only the
small body limit (``FAIRSOLVE_MAX_BODY_BYTES``, a few MB), so no JSON document near the upload limit is
ever read and parsed.

Starlette parses a multipart upload into a temporary file before the route runs, so the route's
own size check comes too late to protect the disk. This ASGI middleware answers 413 at once when
``Content-Length`` exceeds the limit, and otherwise counts the bytes as they arrive (chunked
uploads) and cuts the request off with 413 when they pass it.
"""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException

MULTIPART_SLACK = 64 * 1024  # boundaries and part headers around the file


class BodyTooLarge(HTTPException):
    """An HTTP 413, so that FastAPI's body parsing re-raises it as is and answers it."""

    def __init__(self, limit: int, what: str = "file") -> None:
        super().__init__(413, f"{what}: the request body is larger than the limit of {limit} bytes")


def is_multipart(scope) -> bool:
    return dict(scope.get("headers") or []).get(b"content-type", b"").lower().startswith(b"multipart/form-data")


class BodyLimit:
    def __init__(self, app, max_bytes: int, max_body_bytes: int | None = None) -> None:
        self.app = app
        self.upload_limit, self.body_limit = max_bytes, max_bytes if max_body_bytes is None else max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if is_multipart(scope):
            refusal, allowed = BodyTooLarge(self.upload_limit), self.upload_limit + MULTIPART_SLACK
        else:
            refusal, allowed = BodyTooLarge(self.body_limit, "body"), self.body_limit
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > allowed:
            return await self._refuse(send, refusal)
        seen, started = 0, False

        async def counted_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > allowed:
                    raise refusal
            return message

        async def tracked_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except BodyTooLarge:
            if not started:
                await self._refuse(send, refusal)

    @staticmethod
    async def _refuse(send, refusal: BodyTooLarge) -> None:
        body = json.dumps({"detail": refusal.detail}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

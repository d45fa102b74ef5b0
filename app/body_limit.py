"""Request bodies larger than the upload limit are refused before anything is spooled to disk.

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

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"file: the request body is larger than the limit of {limit} bytes")


class BodyLimit:
    def __init__(self, app, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes + MULTIPART_SLACK

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            return await self._refuse(send)
        seen, started = 0, False

        async def counted_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes - MULTIPART_SLACK)
            return message

        async def tracked_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except BodyTooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send) -> None:
        body = json.dumps({"detail": BodyTooLarge(self.max_bytes - MULTIPART_SLACK).detail}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

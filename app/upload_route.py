"""Upload routes refuse a body that is not ``multipart/form-data`` before it is parsed as a form.

Starlette reads any form body for a route with ``File`` fields: a raw CSV sent with ``--data-binary``
(``application/x-www-form-urlencoded``) was answered "Field exceeded maximum size of 1024KB", a small
one "file: Field required". :class:`UploadRoute` authenticates such a request like any other (401 without a
valid key) and then answers 415 saying what to send instead, without reading the body.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import HTTPException, Request, Response
from fastapi.params import Form
from fastapi.routing import APIRoute


def is_multipart(request: Request) -> bool:
    return request.headers.get("content-type", "").split(";")[0].strip().lower() == "multipart/form-data"


async def authenticated(request: Request) -> None:
    """:func:`app.deps.current_caller` on a session of its own (the route's dependencies never run here)."""
    from app.deps import current_caller, get_db

    sessions = get_db()
    try:
        await current_caller(request, await anext(sessions))
    finally:
        await sessions.aclose()


class UploadRoute(APIRoute):
    """An API route whose form body (``File`` / ``Form`` fields) must arrive as multipart/form-data."""

    def get_route_handler(self) -> Callable:
        handler = super().get_route_handler()
        if self.body_field is None or not isinstance(self.body_field.field_info, Form):
            return handler

        async def run(request: Request) -> Response:
            if not is_multipart(request):
                await authenticated(request)
                got = request.headers.get("content-type") or "no Content-Type"
                raise HTTPException(status_code=415, detail=f"file: send multipart/form-data with a `file` field "
                                    f"(curl -F file=@data.csv), not {got}")
            return await handler(request)

        return run

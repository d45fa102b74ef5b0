"""Upload routes refuse a body that is not ``multipart/form-data`` (415 saying what to send), before any size
check and without reading it.

Starlette reads any form body for a route with ``File`` fields: a raw CSV sent with ``--data-binary``
(``application/x-www-form-urlencoded``) was answered "Field exceeded maximum size of 1024KB", a small
one "file: Field required", and one over the small body limit would be told its size. Routes of
:class:`UploadRoute` with a form body register their path; :class:`RequireMultipart`, placed inside the
authentication gate (so a caller without a valid key still gets 401), answers 415 for a request with a
body to such a path; a request without a body reaches the route, which authenticates it, then answers 415.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import HTTPException, Request, Response
from fastapi.params import Form
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from app.api.middleware.auth_gate import carries_body
from app.api.deps import caller_before_body

UPLOAD_PATHS: set[tuple[str, str]] = set()  # (method, path) of the routes taking a multipart upload


def refusal(scope) -> HTTPException | None:
    """The 415 for a request to an upload route whose body is not multipart/form-data, else None."""
    if (scope["method"], scope["path"]) not in UPLOAD_PATHS:
        return None
    headers = dict(scope.get("headers") or [])
    content_type = headers.get(b"content-type", b"").decode("latin-1")
    if content_type.split(";")[0].strip().lower() == "multipart/form-data":
        return None
    return HTTPException(status_code=415, detail="file: send multipart/form-data with a `file` field "
                         f"(curl -F file=@data.csv), not {content_type or 'no Content-Type'}")


class UploadRoute(APIRoute):
    """An API route whose form body (``File`` / ``Form`` fields) must arrive as multipart/form-data."""

    def __init__(self, path: str, endpoint: Callable, **kwargs) -> None:
        super().__init__(path, endpoint, **kwargs)
        if self.body_field is not None and isinstance(self.body_field.field_info, Form):
            UPLOAD_PATHS.update((method, self.path) for method in self.methods)

    def get_route_handler(self) -> Callable:
        handler = super().get_route_handler()

        async def run(request: Request) -> Response:
            if (refused := refusal(request.scope)) is not None:
                await caller_before_body(request)  # 401 / 429 first, as for any request
                raise refused
            return await handler(request)

        return run


class RequireMultipart:
    """ASGI middleware: the 415 of :func:`refusal` for a request that carries a body, before the body limit."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        refused = refusal(scope) if scope["type"] == "http" and carries_body(scope) else None
        if refused is None:
            return await self.app(scope, receive, send)
        await JSONResponse({"detail": refused.detail}, refused.status_code)(scope, receive, send)

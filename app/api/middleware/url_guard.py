"""URLs carrying a NUL character are refused (400) before any route runs.

PostgreSQL cannot hold a NUL in a text value, so a NUL in a path or query parameter that reached a
query (``?audit_id=%00``, an artifact kind, the dashboard's ``?status=``) raised a database error (a
500). No route of this API takes one: the answer names the parameter instead.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl


def nul_in_url(scope) -> str | None:
    """What carries a NUL (``path`` or ``query parameter 'name'``), or None."""
    if "\x00" in scope.get("path", ""):
        return "path"
    raw = scope.get("query_string") or b""
    if b"%00" not in raw and b"\x00" not in raw:
        return None
    for name, value in parse_qsl(raw.decode("latin-1"), keep_blank_values=True):
        if "\x00" in name or "\x00" in value:
            return f"query parameter {name.replace(chr(0), '')!r}"
    return None


class RefuseNul:
    """ASGI middleware answering 400 for a URL with a NUL character."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        where = nul_in_url(scope) if scope["type"] == "http" else None
        if where is None:
            return await self.app(scope, receive, send)
        body = json.dumps({"detail": f"{where}: a NUL character is not allowed"}).encode()
        await send({"type": "http.response.start", "status": 400,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

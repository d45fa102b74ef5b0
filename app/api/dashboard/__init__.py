"""The browser dashboard: server-rendered pages at ``/`` over the same database and rules as the API.

Pages read through the caller's owner only (another owner's resource is the 404 page); the
browser's scripts call the ``/api/v1`` routes with the session cookies (a session id and its binding) set at
sign-in. Assets (two scripts, one stylesheet, the favicon) are served from ``/assets``; plotly.js from ``/static``;
the favicon also at ``/favicon.ico``, where browsers ask for it on pages that name none (JSON, ``/docs``).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

ASSETS_DIR = Path(__file__).resolve().parent / "static"
FAVICON_URL = "/assets/favicon.svg"


def install(app: FastAPI) -> None:
    """Add the dashboard's pages and mount its assets at ``/assets``."""
    from app.api.dashboard.pages import router

    app.include_router(router)
    app.mount("/assets", StaticFiles(directory=ASSETS_DIR), name="assets")

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:
        return FileResponse(ASSETS_DIR / "favicon.svg", media_type="image/svg+xml",
                            headers={"Cache-Control": "public, max-age=86400"})

"""The browser dashboard: server-rendered pages at ``/`` over the same database and rules as the API.

Pages read through the caller's owner only (another owner's resource is the 404 page); the
browser's scripts call the ``/api/v1`` routes with the session cookies (a session id and its binding) set at
sign-in. Assets (two scripts, one stylesheet) are served from ``/assets``; plotly.js from ``/static``.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

ASSETS_DIR = Path(__file__).resolve().parent / "static"


def install(app: FastAPI) -> None:
    """Add the dashboard's pages and mount its assets at ``/assets``."""
    from app.dashboard.pages import router

    app.include_router(router)
    app.mount("/assets", StaticFiles(directory=ASSETS_DIR), name="assets")

"""Interactive API documentation at ``/docs``, served offline.

FastAPI's own ``/docs`` page loads Swagger UI from a CDN, so it is blank without internet. Here the page
is FastAPI's, pointed at the Swagger UI assets shipped inside the pinned ``swagger-ui-bundle-v2`` package
(Swagger UI 5, which reads the OpenAPI 3.1 document FastAPI writes), mounted at ``/docs-assets``; no byte is
fetched from outside at run time. ReDoc ships in no package here, so ``/redoc`` is off.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

SWAGGER_UI_DIR = Path(swagger_ui_path)
ASSETS = "/docs-assets"


def install(app: FastAPI, favicon_url: str) -> None:
    """``/docs`` (Swagger UI over ``app.openapi_url``) with its assets at :data:`ASSETS`; the app must be
    created with ``docs_url=None``."""
    app.mount(ASSETS, StaticFiles(directory=SWAGGER_UI_DIR), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url, title=f"{app.title} — API",
                                   swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{ASSETS}/swagger-ui.css", swagger_favicon_url=favicon_url)

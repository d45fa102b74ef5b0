"""The FastAPI application: routers, error handling, the locally served plotly.js."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy import text

from app.db import get_engine
from app.static_assets import PLOTLY_JS_DIR
from app.routers import charts, datasets, jobs, solvers, sweeps

log = logging.getLogger("fairsolve.api")


def create_app() -> FastAPI:
    app = FastAPI(title="FairSolve", version="0.1.0",
                  description="Train models under fairness constraints, as a service.")
    for module in (datasets, jobs, charts, sweeps, solvers):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=PLOTLY_JS_DIR), name="static")

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"])
    def readyz() -> JSONResponse:
        try:
            with get_engine().connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as exc:  # report, never raise
            return JSONResponse({"status": "unavailable", "database": str(exc)}, status_code=503)
        return JSONResponse({"status": "ok", "database": "ok"})

    @app.exception_handler(Exception)
    async def unhandled(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse({"detail": "internal error; the server log has the details"}, status_code=500)

    return app


app = create_app()

"""Liveness, readiness (database and broker reachable) and Prometheus metrics; no API key needed."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from sqlalchemy import text

from app.core.db import get_engine
from app.core.observability import metrics_payload

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict:
    return {"status": "ok"}


def _database() -> None:
    with get_engine().connect() as conn:
        conn.execute(text("SELECT 1"))


def _broker() -> None:
    from app.core.celery import celery_app

    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)


@router.get("/readyz")
def readyz() -> JSONResponse:
    """503 naming what is unreachable when the database or the broker cannot be reached."""
    checks = {}
    for name, probe in (("database", _database), ("broker", _broker)):
        try:
            probe()
            checks[name] = "ok"
        except Exception as exc:  # report, never raise
            checks[name] = f"unavailable: {type(exc).__name__}: {exc}"[:300]
    ok = all(v == "ok" for v in checks.values())
    return JSONResponse({"status": "ok" if ok else "unavailable", **checks}, status_code=200 if ok else 503)


@router.get("/metrics", response_class=Response)
def metrics() -> Response:
    """Prometheus text format (see ``app.core.observability``)."""
    body, media = metrics_payload()
    return Response(body, media_type=media)

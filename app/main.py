"""The FastAPI application: routers, request context and metrics, error handling, the locally served plotly.js."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import IntegrityError

from app import __version__
from app.core.blobstore import blobs
from app.auth.keys import bootstrap_key_problem, ensure_key
from app.api.middleware.auth_gate import AuthBeforeBody
from app.api.middleware.body_limit import BodyLimit
from app.api.docs import install as install_api_docs
from app.api.dashboard import FAVICON_URL, install as install_dashboard
from app.core.db import session_factory, session_scope
from app.jobs.idempotency import RefuseUnhonoured
from app.core.observability import JOBS_COLLECTORS, REGISTRY, JobsCollector, RequestContext, configure_logging
from app.core.settings import get_settings
from app.render.static_assets import PLOTLY_JS_DIR
from app.core.files import clear_stale
from app.api.unavailable import UNAVAILABLE, unavailable_answer
from app.api.upload_route import RequireMultipart
from app.api.validation_answer import validation_answer
from app.api.middleware.url_guard import RefuseNul
from app.api.routes import audits, charts, datasets, health, jobs, keys, model_export, models, reports, solvers, sweeps

log = logging.getLogger("fairsolve.api")


def register_bootstrap_key() -> None:
    """``FAIRSOLVE_BOOTSTRAP_API_KEY``: an admin key for ``FAIRSOLVE_BOOTSTRAP_OWNER``, registered (hashed) at start-up.

    The API refuses to start (RuntimeError) with a weak key, or with none outside the embedded defaults
    (:func:`app.auth.keys.bootstrap_key_problem`); a key revoked earlier stays revoked."""
    settings = get_settings()
    if (problem := bootstrap_key_problem(settings.bootstrap_api_key, settings.database_url_env is None)) is not None:
        raise RuntimeError(f"refusing to start: {problem}")
    if settings.bootstrap_api_key:
        try:
            with session_scope() as db:
                row = ensure_key(db, settings.bootstrap_api_key, settings.bootstrap_owner, admin=True)
                if row.revoked_at is not None:
                    log.warning("the bootstrap key (FAIRSOLVE_BOOTSTRAP_API_KEY) was revoked and stays revoked; "
                                "configure a new one for an admin key")
        except IntegrityError:  # another API process registered it at the same moment
            pass


def clear_stale_uploads() -> None:
    """Partial files a crashed upload left in storage/tmp (see :func:`app.core.files.clear_stale`)."""
    settings = get_settings()
    removed = clear_stale(settings.storage_dir / "tmp", settings.tmp_stale_s)
    if removed:
        log.info("removed %d stale file(s) from storage/tmp: %s", len(removed), ", ".join(removed[:20]))


@asynccontextmanager
async def lifespan(app: FastAPI):
    anyio.to_thread.current_default_thread_limiter().total_tokens = get_settings().api_threads
    register_bootstrap_key()
    clear_stale_uploads()
    blobs().prepare()  # object storage: its bucket exists (a fresh MinIO); nothing for the local directory
    collector = JobsCollector(session_factory())
    REGISTRY.register(collector)
    JOBS_COLLECTORS.append(collector)
    yield
    JOBS_COLLECTORS.remove(collector)
    REGISTRY.unregister(collector)


def create_app() -> FastAPI:
    settings = get_settings()
    configure_logging(settings.log_format, settings.log_level)
    app = FastAPI(title="FairSolve", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Train models under fairness constraints, as a service. Every `/api/v1` route "
                              "needs an API key: `Authorization: Bearer <key>`.")
    for module in (health, datasets, jobs, charts, sweeps, solvers, keys, audits, models, model_export, reports):
        app.include_router(module.router)
    app.add_middleware(BodyLimit, max_bytes=settings.max_upload_bytes, max_body_bytes=settings.max_body_bytes)
    app.add_middleware(RequireMultipart)  # an upload that is not multipart is told so, not its size
    app.add_middleware(AuthBeforeBody)  # no byte of a body is read (nor its size judged) for an unknown caller
    app.add_middleware(RefuseUnhonoured)  # a retry it would not protect: 400 before anything is read
    app.add_middleware(RefuseNul)  # before authentication: nothing is read for a URL no route can take
    app.add_middleware(RequestContext)  # outermost: refusals are logged and counted too
    app.mount("/static", StaticFiles(directory=PLOTLY_JS_DIR), name="static")
    install_dashboard(app)  # the browser dashboard at / and its assets at /assets
    install_api_docs(app, FAVICON_URL)  # /docs with Swagger UI's assets served from the app (no CDN)

    async def database_unavailable(request: Request, exc: Exception) -> JSONResponse:
        """An exhausted pool or a database outage: a 503 the client may retry (:mod:`app.api.unavailable`)."""
        return unavailable_answer(exc, request.method, request.url.path)

    app.add_exception_handler(RequestValidationError, validation_answer)  # its echo of the input bounded
    for kind in UNAVAILABLE:
        app.add_exception_handler(kind, database_unavailable)

    @app.exception_handler(Exception)
    async def unhandled(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse({"detail": "internal error; the server log has the details"}, status_code=500)

    return app


app = create_app()

"""Structured logs, request ids and Prometheus metrics.

Logs: one JSON object per line (``FAIRSOLVE_LOG_FORMAT=text`` for plain lines) with the
time, level, logger, message and, when known, ``request_id`` (the caller's ``X-Request-ID``
or a new one, echoed in the response) and ``job_id`` (set by the worker while it runs a job).

Metrics (``GET /metrics``, Prometheus text format): request counts and latency histograms per
route template, method and status, computed in the API process (with several API processes,
:mod:`app.serve`, each writes them to Prometheus' multi-process files and every scrape adds them
up); and, read from the database
at each scrape, jobs per status, the queue depth (jobs queued per queue, waiting for a
worker) and solver iterations per second summed over running jobs (each job's last reported
iteration over its elapsed solver time).
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import sys
import time
import uuid
from collections.abc import Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily
from sqlalchemy import func, select

request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
job_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("job_id", default=None)

# ---------------------------------------------------------------------------------------------- logs


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
               "level": record.levelname.lower(), "logger": record.name, "msg": record.getMessage()}
        for key in ("request_id", "job_id"):
            if (value := getattr(record, key, None)) is not None:
                out[key] = value
        for key in ("method", "path", "status", "duration_ms", "owner"):
            if hasattr(record, key):
                out[key] = getattr(record, key)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class ContextFilter(logging.Filter):
    """Stamp each record with the request and job ids of the context that logged it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = getattr(record, "request_id", None) or request_id_var.get()
        record.job_id = getattr(record, "job_id", None) or job_id_var.get()
        return True


def configure_logging(fmt: str = "json", level: str = "INFO") -> None:
    """Replace the root logger's handlers by one stderr handler in ``fmt`` (json | text)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(ContextFilter())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
        logging.Formatter.converter = time.gmtime
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(request_id)s %(job_id)s] "
                                               "%(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "celery"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").disabled = True  # replaced by our access line with the request id


# ------------------------------------------------------------------------------------------- metrics

REGISTRY = CollectorRegistry(auto_describe=True)
REQUESTS = Counter("fairsolve_http_requests", "HTTP requests answered.", ["method", "route", "status"],
                   registry=REGISTRY)
LATENCY = Histogram("fairsolve_http_request_duration_seconds", "Time to answer an HTTP request.",
                    ["method", "route"], registry=REGISTRY,
                    buckets=(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0))
access_log = logging.getLogger("fairsolve.access")


class RequestContext:
    """ASGI middleware: request id in and out, one access log line, request metrics by route template."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        incoming = headers.get(b"x-request-id", b"").decode("latin-1")
        rid = incoming if 0 < len(incoming) <= 128 and incoming.isprintable() else uuid.uuid4().hex
        token = request_id_var.set(rid)
        started, status = time.perf_counter(), 500

        async def send_with_id(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message.setdefault("headers", []).append((b"x-request-id", rid.encode()))
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            REQUESTS.labels(scope["method"], route, str(status)).inc()
            LATENCY.labels(scope["method"], route).observe(elapsed)
            state = scope.get("state") or {}
            access_log.info("%s %s %s", scope["method"], route, status, extra={
                "method": scope["method"], "path": scope["path"], "status": status,
                "duration_ms": round(elapsed * 1000, 2), "owner": state.get("owner")})
            request_id_var.reset(token)


JOBS_COLLECTORS: list = []  # the process's JobsCollector while the app runs (app.main's lifespan)


class JobsCollector:
    """Gauges read from the database at scrape time (jobs are shared by every API and worker process)."""

    def __init__(self, sessions) -> None:
        self.sessions = sessions

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from app.models import Job

        by_status = GaugeMetricFamily("fairsolve_jobs", "Jobs by status.", labels=["status"])
        depth = GaugeMetricFamily("fairsolve_queue_depth", "Jobs queued and not yet started, per queue.",
                                  labels=["queue"])
        rate = GaugeMetricFamily("fairsolve_solver_iterations_per_second",
                                 "Iterations per second of solver time, summed over running jobs.", labels=["solver"])
        with self.sessions() as db:
            for status, n in db.execute(select(Job.status, func.count()).group_by(Job.status)):
                by_status.add_metric([status], n)
            for queue, n in db.execute(select(Job.queue, func.count()).where(Job.status == "queued")
                                       .group_by(Job.queue)):
                depth.add_metric([queue], n)
            speeds: dict[str, float] = {}
            for spec, progress in db.execute(select(Job.spec, Job.progress).where(Job.status == "running")):
                elapsed = float((progress or {}).get("elapsed_s") or 0.0)
                if elapsed > 0:
                    solver = str((spec or {}).get("solver", {}).get("name", "?"))
                    speeds[solver] = speeds.get(solver, 0.0) + float(progress.get("iteration", 0)) / elapsed
            for solver, value in sorted(speeds.items()):
                rate.add_metric([solver], value)
        yield from (by_status, depth, rate)


def metrics_payload() -> tuple[bytes, str]:
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
    registry = CollectorRegistry()  # every API process's request metrics, from their files
    multiprocess.MultiProcessCollector(registry)
    for collector in JOBS_COLLECTORS:
        registry.register(collector)
    return generate_latest(registry), CONTENT_TYPE_LATEST

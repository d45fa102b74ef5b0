"""The database cannot serve this request now: a 503 with ``Retry-After``, never a 500.

Two causes, both transient and no fault of the request, so a client may retry (the Python client does):

- every connection of this process's pool stayed busy for the pool's timeout (an overload:
  ``sqlalchemy.exc.TimeoutError``), ``Retry-After: 1``;
- the database refused or dropped the connection, or cancelled the statement (an outage, a restart, a
  failover, a deadlock victim: ``OperationalError`` / ``InterfaceError`` of the driver, as SQLAlchemy wraps
  them), ``Retry-After: 2``. A request it interrupted committed nothing it did not answer.
"""

from __future__ import annotations

import logging

from fastapi.responses import JSONResponse
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

log = logging.getLogger("fairsolve.api")

UNAVAILABLE = (PoolTimeout, OperationalError, InterfaceError)


def retry_after(exc: BaseException, method: str, path: str) -> str:
    """The ``Retry-After`` seconds for one of :data:`UNAVAILABLE`, the cause logged as a warning (a line, not a
    traceback)."""
    if isinstance(exc, PoolTimeout):
        log.warning("database connection pool exhausted on %s %s", method, path)
        return "1"
    log.warning("database unavailable on %s %s: %s", method, path, str(exc).splitlines()[0][:300])
    return "2"


def unavailable_answer(exc: BaseException, method: str, path: str) -> JSONResponse:
    """The API's 503 for one of :data:`UNAVAILABLE`."""
    after = retry_after(exc, method, path)
    detail = "the service is overloaded" if isinstance(exc, PoolTimeout) else "the database is unavailable"
    return JSONResponse({"detail": f"{detail}; retry shortly"}, status_code=503, headers={"Retry-After": after})

"""Errors the application maps to answers: an exhausted connection pool or a database outage is a 503, not a fault."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.exc import TimeoutError as PoolTimeout

from app.main import create_app


def test_pool_exhaustion_answers_503_with_retry_after():
    app = create_app()  # the settings were read when app.main was imported

    @app.get("/busy")
    def busy() -> None:
        raise PoolTimeout("QueuePool limit of size 20 overflow 10 reached")

    @app.get("/broken")
    def broken() -> None:
        raise RuntimeError("a fault")

    client = TestClient(app, raise_server_exceptions=False)
    response = client.get("/busy")
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert "overloaded" in response.json()["detail"]
    assert client.get("/broken").status_code == 500


def test_database_outage_answers_503_with_retry_after():
    """A refused or dropped database connection (the driver's OperationalError, as SQLAlchemy wraps it) is a 503
    the client retries, like an exhausted pool (issue 31: 47 answers of 500 in 21 s of an outage)."""
    from sqlalchemy.exc import InterfaceError, OperationalError

    app = create_app()

    @app.get("/down")
    def down() -> None:
        raise OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused"))

    @app.get("/closed")
    def closed() -> None:
        raise InterfaceError("SELECT 1", {}, Exception("connection already closed"))

    client = TestClient(app, raise_server_exceptions=False)
    for path in ("/down", "/closed"):
        response = client.get(path)
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "2" and "unavailable" in response.json()["detail"]

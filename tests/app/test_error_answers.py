"""Errors the application maps to answers: an exhausted connection pool is an overload (503), not a fault."""

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

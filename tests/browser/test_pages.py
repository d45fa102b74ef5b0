"""The dashboard's page handling without a browser or a stack: sign-in redirects, the 404 page, and an
unexpected error shown as a short message (no stack trace)."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.auth.keys import Caller
from app.auth.sessions import SESSION_COOKIE
from app.api.dashboard import install
from app.api.dashboard.pages import page_caller, safe_next
from app.api.deps import get_db
from app.models import Dataset


class FakeSession:
    def __init__(self, row=None, error: Exception | None = None):
        self.row, self.error = row, error

    def get(self, model, key, **options):
        if self.error:
            raise self.error
        return self.row


def client_with(session: FakeSession, owner: str = "alice") -> TestClient:
    app = FastAPI()
    install(app)
    app.dependency_overrides[get_db] = lambda: session
    app.dependency_overrides[page_caller] = lambda: Caller(owner=owner, key_id="k", admin=False)
    return TestClient(app, follow_redirects=False, cookies={SESSION_COOKIE: "fsk_test"})


def test_no_cookie_redirects_to_sign_in_with_the_page_to_return_to():
    app = FastAPI()
    install(app)
    app.dependency_overrides[get_db] = lambda: FakeSession()
    response = TestClient(app, follow_redirects=False).get("/jobs?status=running")
    assert response.status_code == 303
    assert response.headers["location"] == "/signin?next=%2Fjobs%3Fstatus%3Drunning"


def test_another_owners_dataset_is_the_404_page():
    row = Dataset(id="d1", owner="bob", name="secret-name")
    response = client_with(FakeSession(row)).get("/datasets/d1")
    assert response.status_code == 404
    assert "text/html" in response.headers["content-type"]
    assert "not found" in response.text and "secret-name" not in response.text


def test_an_unexpected_error_is_a_message_not_a_stack_trace(caplog):
    response = client_with(FakeSession(error=RuntimeError("db password=hunter2"))).get("/datasets/d1")
    assert response.status_code == 500
    assert "Something went wrong" in response.text
    assert "hunter2" not in response.text and "Traceback" not in response.text
    assert "hunter2" in caplog.text  # the server log has the details


@pytest.mark.parametrize("target, expected", [
    ("/jobs/1?x=2", "/jobs/1?x=2"), (None, "/"), ("https://evil.example/", "/"), ("//evil.example", "/"),
    ("/\\evil.example", "/"), ("jobs", "/"),
])
def test_sign_in_returns_only_to_pages_of_this_site(target, expected):
    assert safe_next(target) == expected

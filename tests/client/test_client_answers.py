"""fairsolve.Client against answers that are not the happy path (issue 31): a 503 or 429 with ``Retry-After`` is
retried after the time it names when the request may be repeated (reads, cancels, keyed submissions), never for
an unkeyed creating POST; an answer that is not JSON raises :class:`FairSolveError`, not ``JSONDecodeError``."""

from __future__ import annotations

import httpx
import pytest

import fairsolve.client as client_module
from fairsolve import Client
from fairsolve.client import FairSolveError


class Naps:
    def __init__(self) -> None:
        self.naps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.naps.append(seconds)


def serve(answers: list[httpx.Response], seen: list[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)
    return httpx.MockTransport(handler)


def unavailable(after: str = "2") -> httpx.Response:
    return httpx.Response(503, json={"detail": "the database is unavailable; retry shortly"},
                          headers={"Retry-After": after})


def test_reads_are_retried_after_the_time_the_service_names(monkeypatch):
    naps, seen = Naps(), []
    monkeypatch.setattr(client_module, "time", naps)
    answers = [unavailable("2"), httpx.Response(429, json={"detail": "rate"}, headers={"Retry-After": "1"}),
               httpx.Response(200, json={"id": "j", "status": "queued", "progress": {}})]
    with Client("http://fs", "k", transport=serve(answers, seen)) as fs:
        assert fs.job("j").status == "queued"
    assert naps.naps == [2.0, 1.0] and len(seen) == 3


def test_retries_are_bounded_then_the_error_is_raised(monkeypatch):
    naps, seen = Naps(), []
    monkeypatch.setattr(client_module, "time", naps)
    with Client("http://fs", "k", transport=serve([unavailable("999")] * 3, seen), retries=2) as fs:
        with pytest.raises(FairSolveError) as raised:
            fs.job("j")
    assert raised.value.status_code == 503 and "unavailable" in raised.value.message
    assert naps.naps == [client_module.MAX_RETRY_AFTER_S] * 2 and len(seen) == 3


def test_a_submission_is_retried_with_the_same_idempotency_key(monkeypatch):
    monkeypatch.setattr(client_module, "time", Naps())
    seen: list[httpx.Request] = []
    answers = [unavailable(), httpx.Response(202, json={"id": "j", "status": "queued"}),
               httpx.Response(200, json={"id": "j", "status": "queued", "progress": {}})]
    with Client("http://fs", "k", transport=serve(answers, seen)) as fs:
        fs.submit("d", target="y", positive_label=1, sensitive=["s"])
    posts = [r for r in seen if r.method == "POST"]
    assert len(posts) == 2 and posts[0].headers["idempotency-key"] == posts[1].headers["idempotency-key"]


def test_an_unkeyed_creating_post_is_not_repeated(monkeypatch):
    naps, seen = Naps(), []
    monkeypatch.setattr(client_module, "time", naps)
    with Client("http://fs", "k", transport=serve([unavailable()], seen)) as fs:
        with pytest.raises(FairSolveError):
            fs.request("POST", "/api/v1/datasets", content=b"x")
    assert len(seen) == 1 and naps.naps == []


@pytest.mark.parametrize("answer", [
    httpx.Response(200, content=b"<html>gateway</html>", headers={"content-type": "text/html"}),
    httpx.Response(200, content=b"\xff\xfe{", headers={"content-type": "application/json"}),
])
def test_an_answer_that_is_not_json_raises_fairsolve_error(answer):
    with Client("http://fs", "k", transport=serve([answer], [])) as fs:
        with pytest.raises(FairSolveError) as raised:
            fs.job("j")
    assert raised.value.status_code == 200 and "not JSON" in raised.value.message


def test_an_error_answer_that_is_not_json_raises_fairsolve_error():
    answer = httpx.Response(502, content=b"<html>Bad Gateway</html>", headers={"content-type": "text/html"})
    with Client("http://fs", "k", transport=serve([answer], [])) as fs:
        with pytest.raises(FairSolveError) as raised:
            fs.job("j")
    assert raised.value.status_code == 502

"""fairsolve.Client's Job.wait: it long-polls (``wait_s``) and does not sleep when the server waits; against a server
that answers at once (one without the long-poll) it sleeps ``poll_s`` between reads instead of spinning."""

from __future__ import annotations

import json

import httpx
import pytest

import fairsolve.client as client_module
from fairsolve import Client


class Clock:
    """The client's ``time``: a virtual clock that the server's waits and the client's sleeps advance."""

    def __init__(self) -> None:
        self.now, self.naps = 0.0, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.naps.append(seconds)
        self.now += seconds


@pytest.mark.parametrize("server_waits", [True, False])
def test_wait_long_polls_and_sleeps_only_when_the_server_did_not_wait(monkeypatch, server_waits):
    clock, statuses, asked = Clock(), ["running", "running", "succeeded"], []
    monkeypatch.setattr(client_module, "time", clock)

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(float(request.url.params["wait_s"]))
        status = statuses.pop(0)
        if server_waits and status != "succeeded":
            clock.now += asked[-1]  # the server held the request until the wait ended
        return httpx.Response(200, content=json.dumps({"id": "j", "status": status, "progress": {}}),
                              headers={"content-type": "application/json"})

    fs = Client("http://fairsolve.test", key="k", transport=httpx.MockTransport(handler), poll_s=0.3)
    job = client_module.Job(fs, "j", {"status": "queued", "progress": {}}).wait(progress=False, timeout=100)
    assert job.status == "succeeded" and len(asked) == 3
    assert asked[0] == 25.0 and all(0 < w <= 25 for w in asked)  # each read asks the server to wait
    assert clock.naps == ([] if server_waits else [0.3, 0.3])

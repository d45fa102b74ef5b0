"""The request rate per key holds across API processes: a real stack with 2 server processes on
PostgreSQL + Redis, each request on a new connection (so both processes answer), one key."""

from __future__ import annotations

import time

import httpx
import pytest

from bench.common.stack import REDIS_URL, pg_database, start_stack, stop_stack

pytestmark = pytest.mark.integration

RATE, BURST, REQUESTS = 1.0, 10, 40


@pytest.fixture(scope="module")
def limited_stack(tmp_path_factory):
    database_url, drop = pg_database()
    stack = start_stack("ratelimit", tmp_path_factory.mktemp("ratelimit-home"), database_url, REDIS_URL, workers=0,
                        extra_env={"FAIRSOLVE_API_WORKERS": "2", "FAIRSOLVE_RATE_LIMIT_PER_S": str(RATE),
                                   "FAIRSOLVE_RATE_LIMIT_BURST": str(BURST)})
    yield stack
    stop_stack(stack)
    drop()


def test_one_key_gets_one_rate_whichever_process_answers(limited_stack):
    key = limited_stack.new_key("limited")
    codes, retry_after = [], []
    started = time.monotonic()
    for _ in range(REQUESTS):
        with httpx.Client(base_url=limited_stack.url, timeout=10, headers={"Authorization": f"Bearer {key}"}) as c:
            response = c.get("/api/v1/solvers")
        codes.append(response.status_code)
        if response.status_code == 429:
            retry_after.append(response.headers["retry-after"])
    elapsed = time.monotonic() - started
    granted = codes.count(200)
    assert set(codes) == {200, 429}, codes
    assert BURST <= granted <= BURST + int(elapsed * RATE) + 1, (granted, elapsed)
    assert all(value == "1" for value in retry_after), retry_after
    assert "unhandled error" not in limited_stack.log("api")

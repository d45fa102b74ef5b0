"""Integration fixtures: real stacks (see ``bench.common.stack``) on PostgreSQL + Redis and on embedded defaults."""

from __future__ import annotations

import pytest

from bench.common.stack import REDIS_URL, pg_database, start_stack, stop_stack
from tests.support.jobs import FUZZ_RATE_LIMIT


@pytest.fixture(scope="session")
def postgres_stack(tmp_path_factory):
    database_url, drop = pg_database()
    # a per-key rate limit far above the default (50/s): the fuzzer's requests are paced under it, and only
    # test_rate_limit (a stack of its own) tests the limit
    stack = start_stack("postgres", tmp_path_factory.mktemp("pg-home"), database_url, REDIS_URL,
                        extra_env={"FAIRSOLVE_RATE_LIMIT_PER_S": str(FUZZ_RATE_LIMIT)})
    yield stack
    stop_stack(stack)
    drop()


@pytest.fixture(scope="session")
def embedded_stack(tmp_path_factory):
    stack = start_stack("embedded", tmp_path_factory.mktemp("embedded-home"), None, None)
    yield stack
    stop_stack(stack)


@pytest.fixture(params=["postgres", "embedded"])
def stack(request):
    return request.getfixturevalue(f"{request.param}_stack")

"""Integration fixtures: real stacks (see ``tests.stack``) on PostgreSQL + Redis and on embedded defaults."""

from __future__ import annotations

import pytest

from tests.stack import REDIS_URL, pg_database, start_stack, stop_stack


@pytest.fixture(scope="session")
def postgres_stack(tmp_path_factory):
    database_url, drop = pg_database()
    stack = start_stack("postgres", tmp_path_factory.mktemp("pg-home"), database_url, REDIS_URL)
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

"""A saturated API process keeps answering: more requests in flight than database connections and
threads must queue, never deadlock (requests holding connections while they wait for threads that are
themselves waiting for connections). A real stack on PostgreSQL with a pool of 2 connections, 2
request threads and 1 upload slot, and 16 clients uploading at once, each with a key no cache has seen."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from bench.common.datagen import planted_table
from bench.common.stack import REDIS_URL, pg_database, start_stack, stop_stack

pytestmark = pytest.mark.integration

CLIENTS = 16
SMALL = {"FAIRSOLVE_DB_POOL_SIZE": "2", "FAIRSOLVE_DB_MAX_OVERFLOW": "0", "FAIRSOLVE_API_THREADS": "2",
         "FAIRSOLVE_UPLOAD_THREADS": "1", "FAIRSOLVE_API_WORKERS": "1"}


@pytest.fixture(scope="module")
def small_stack(tmp_path_factory):
    database_url, drop = pg_database()
    stack = start_stack("saturation", tmp_path_factory.mktemp("saturation-home"), database_url, REDIS_URL,
                        workers=0, extra_env=SMALL)
    yield stack
    stop_stack(stack)
    drop()


def test_concurrent_first_uploads_with_fresh_keys_all_succeed(small_stack):
    keys = [small_stack.new_key(f"saturation-{i}") for i in range(CLIENTS)]
    csv = planted_table(3000, seed=3).to_csv(index=False).encode()

    def client_run(key: str) -> list[int]:
        # the pool's checkout times out after 30 s: a deadlock shows as a client timeout (or a 503) here
        with httpx.Client(base_url=small_stack.url, timeout=20, headers={"Authorization": f"Bearer {key}"}) as c:
            dataset = c.post("/api/v1/datasets", files={"file": ("d.csv", csv, "text/csv")})
            codes = [dataset.status_code]
            if dataset.status_code == 201:
                codes += [c.get(f"/api/v1/datasets/{dataset.json()['id']}").status_code, c.get("/api/v1/jobs").status_code]
            return codes

    started = time.monotonic()
    with ThreadPoolExecutor(CLIENTS) as pool:
        results = list(pool.map(client_run, keys))
    elapsed = time.monotonic() - started
    assert results == [[201, 200, 200]] * CLIENTS, (results, small_stack.log("api"))
    assert elapsed < 20, elapsed
    with small_stack.client() as admin:
        assert admin.get("/healthz").status_code == 200
    assert "unhandled error" not in small_stack.log("api")

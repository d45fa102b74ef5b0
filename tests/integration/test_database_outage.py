"""A database outage on the real stack (issue 31 item 5): the API reaches PostgreSQL through a TCP relay of the
test's own (``bench.common.socket_relay``), which the test stops: every connection, pooled or new, is cut or refused.
Each request is then answered 503 with ``Retry-After`` (an outage answered 500 before: 47 in 21 s), whether it
needed the database for its key (an uncached key, read before the body) or for its route, and the API serves
again once the relay is back. A dashboard page answers its error page with the same 503."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload
from bench.common.stack import PG_ADMIN, REDIS_URL, ROOT, free_port, make_conninfo, pg_database, start_stack, stop_stack


class Relay:
    """127.0.0.1:``port`` -> a Unix socket -> PostgreSQL, in one process; stopping it cuts every connection."""

    def __init__(self, port: int, target: str) -> None:
        self.port, self.target, self.proc = port, target, None
        self.socket = str(Path(tempfile.mkdtemp(prefix="fspg-")) / "pg.sock")

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.common.socket_relay", "--inside",
                                      f"{self.port}={self.socket}", "--outside", f"{self.socket}={self.target}"],
                                     cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)
        Path(self.socket).unlink(missing_ok=True)


@pytest.fixture
def relayed(tmp_path):
    url, drop = pg_database()
    admin = make_conninfo(PG_ADMIN)
    relay = Relay(free_port(), f"{admin.get('host', '127.0.0.1')}:{admin.get('port', '5432')}")
    relay.start()
    stack = start_stack("dboutage", tmp_path, url.replace(f":{admin.get('port', '5432')}/", f":{relay.port}/"),
                        REDIS_URL)
    yield stack, relay
    stop_stack(stack)
    if relay.proc.poll() is None:
        relay.stop()
    drop()


def test_database_outage_answers_503_with_retry_after(relayed):
    stack, relay = relayed
    fresh_key = stack.new_key("outage-fresh")  # never used before the outage: its lookup needs the database
    signed_in = httpx.post(stack.url + "/signin", data={"api_key": stack.admin_key, "next": "/"},
                           headers={"origin": stack.url}, follow_redirects=False).cookies
    with stack.client() as client, stack.client(fresh_key) as fresh:
        dataset = upload(client, planted_table(300, seed=3))
        assert client.get("/api/v1/jobs").status_code == 200
        relay.stop()
        page = httpx.get(stack.url + "/datasets", cookies=signed_in)  # a dashboard page: the error page, 503
        assert page.status_code == 503 and page.headers["retry-after"] == "2" and "unavailable" in page.text
        answers = [client.get("/api/v1/jobs"), client.get(f"/api/v1/datasets/{dataset['id']}"),
                   client.post("/api/v1/jobs", json=job_spec(dataset["id"])),
                   fresh.get("/api/v1/jobs"), fresh.post("/api/v1/jobs", json=job_spec(dataset["id"])),
                   client.post("/api/v1/datasets", files={"file": ("x.csv", b"a,b\n1,2\n", "text/csv")}),
                   client.get("/metrics")]
        for response in answers:
            assert response.status_code == 503, (response.request.method, response.request.url, response.text)
            assert response.headers["retry-after"] == "2" and "unavailable" in response.json()["detail"]
        assert "Traceback" not in stack.log("api")
        relay.start()
        assert client.get("/api/v1/jobs").status_code == 200  # pre-ping: the cut connections are replaced
        assert fresh.get(f"/api/v1/datasets/{dataset['id']}").status_code == 404  # another owner's: not found

"""A real S3-compatible server for the object-storage tests: moto's ``moto_server`` (S3 over HTTP, werkzeug),
started on a free loopback port, or the endpoint in ``FAIRSOLVE_TEST_S3_URL`` (a MinIO, say; credentials from
``FAIRSOLVE_TEST_S3_KEY`` / ``FAIRSOLVE_TEST_S3_SECRET``). Each test gets a bucket of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.common.stack import free_port
from bench.common.wait import wait_until

S3_URL = os.environ.get("FAIRSOLVE_TEST_S3_URL")


@dataclass
class ObjectStore:
    endpoint: str
    key: str
    secret: str

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.key,
                            aws_secret_access_key=self.secret, region_name="us-east-1")

    def new_bucket(self) -> str:
        name = f"fairsolve-test-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def env(self, bucket: str, prefix: str = "fs") -> dict[str, str]:
        """The environment of a FairSolve process that stores its files in ``bucket``."""
        return {"FAIRSOLVE_STORAGE_URL": f"s3://{bucket}/{prefix}", "FAIRSOLVE_S3_ENDPOINT_URL": self.endpoint,
                "AWS_ACCESS_KEY_ID": self.key, "AWS_SECRET_ACCESS_KEY": self.secret, "AWS_DEFAULT_REGION": "us-east-1"}


@contextmanager
def object_store(log: Path) -> Iterator[ObjectStore]:
    if S3_URL:
        yield ObjectStore(S3_URL, os.environ.get("FAIRSOLVE_TEST_S3_KEY", "minioadmin"),
                          os.environ.get("FAIRSOLVE_TEST_S3_SECRET", "minioadmin"))
        return
    port = free_port()
    server = Path(sys.executable).with_name("moto_server")
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(server), "-H", "127.0.0.1", "-p", str(port)], stdout=out,
                                stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: reachable(endpoint), 60, 0.1,
                   lambda: f"moto_server at {endpoint}\n{log.read_text()[-2000:]}",
                   check=lambda: _assert_running(proc, log))
        yield ObjectStore(endpoint, "test", "test")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def reachable(url: str) -> bool:
    """An HTTP server answers at ``url`` (any status)."""
    try:
        httpx.get(url, timeout=1)
        return True
    except httpx.HTTPError:
        return False


def _assert_running(proc: subprocess.Popen, log: Path) -> None:
    assert proc.poll() is None, log.read_text()[-2000:]

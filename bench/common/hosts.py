"""A FairSolve deployment spread over "hosts" on one machine: the API (with beat and the housekeeping worker)
and worker hosts that share nothing with it but PostgreSQL, Redis and an S3 server (``bench.common.objectstore``):
each host has a ``FAIRSOLVE_HOME`` of its own and, where ``ip netns`` works, a network namespace of its own
(``bench.common.netns``). Used by ``tests/integration/test_multi_host.py`` and ``bench/system/multi_host.py``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.common.netns import namespaces
from bench.common.objectstore import ObjectStore, object_store
from bench.common.stack import REDIS_URL, Stack, add_worker_host, pg_database, start_stack, stop_stack


@dataclass
class Hosts:
    stack: Stack
    s3: ObjectStore
    bucket: str
    names: list[str]
    spaces: dict[str, list[str]] | None  # the command prefix of each host's namespace; None: plain processes


@contextmanager
def worker_hosts(home: Path, n_hosts: int = 2, extra_env: dict[str, str] | None = None) -> Iterator[Hosts]:
    home.mkdir(parents=True, exist_ok=True)
    url, drop = pg_database()
    try:
        with object_store(home / "s3.log") as s3:
            bucket = s3.new_bucket()
            names = [f"host-{chr(ord('b') + i)}" for i in range(n_hosts)]
            with namespaces(names, [url, REDIS_URL, s3.endpoint]) as spaces:

                def launch_hosts(stack: Stack) -> None:  # beside the API, which takes as long to start
                    for name in names:
                        add_worker_host(stack, name, home / name, prefix=spaces[name] if spaces else None)

                stack = start_stack("hosts", home / "api", url, REDIS_URL, workers=0, beat=True,
                                    extra_env={**s3.env(bucket), **(extra_env or {})}, starting=launch_hosts)
                try:
                    yield Hosts(stack, s3, bucket, names, spaces)
                finally:
                    stop_stack(stack)  # before the namespaces and their relays go
    finally:
        drop()

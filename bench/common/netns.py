"""Worker "hosts" in network namespaces of their own (``ip netns``, as root on Linux): a namespace has only its
own loopback, and reaches the services it is given (PostgreSQL, Redis, the S3 server) through
``bench.common.socket_relay`` — 127.0.0.1:PORT inside, a Unix socket between, the service outside — at the same
addresses as outside, so a host's environment is unchanged. No veth, no routed address: every packet stays
on a loopback. Where namespaces cannot be made (not root, no ``ip``, a container without the capability),
:func:`namespaces` yields None and the hosts are plain processes."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from urllib.parse import urlsplit

from bench.common.stack import ROOT


LOOPBACK = {"127.0.0.1", "localhost"}


def service_addresses(urls: list[str]) -> list[tuple[str, int]] | None:
    """(host, port) of each URL; None when one is not on this machine's loopback (then no relay can stand in)."""
    out = []
    for url in urls:
        parts = urlsplit(url)
        if parts.hostname not in LOOPBACK or parts.port is None:
            return None
        out.append((parts.hostname, parts.port))
    return out


def _relay(cmd: list[str]) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise RuntimeError(f"relay did not start: {line}{proc.stdout.read()}")
    return proc


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()


@contextmanager
def namespaces(names: list[str], urls: list[str]) -> Iterator[dict[str, list[str]] | None]:
    """One network namespace per name, each reaching the services of ``urls``; yields the command prefix that
    runs a process in each (``ip netns exec NS``), or None where namespaces are unavailable."""
    addresses = service_addresses(urls)
    ip = shutil.which("ip")
    if addresses is None or ip is None:
        yield None
        return
    tag = uuid.uuid4().hex[:6]
    spaces = {name: f"fs-{tag}-{i}" for i, name in enumerate(names)}
    with ExitStack() as cleanup:
        for ns in spaces.values():
            if subprocess.run([ip, "netns", "add", ns], capture_output=True).returncode != 0:
                yield None
                return
            cleanup.callback(subprocess.run, [ip, "netns", "del", ns], capture_output=True)
            subprocess.run([ip, "netns", "exec", ns, ip, "link", "set", "lo", "up"], check=True)
        folder = tempfile.mkdtemp(prefix="fsrelay-")  # short: a Unix socket path has at most 107 bytes
        cleanup.callback(shutil.rmtree, folder, ignore_errors=True)
        sockets = {port: f"{folder}/{port}.sock" for _, port in addresses}
        relay = [sys.executable, "-m", "bench.common.socket_relay"]
        outside = _relay([*relay, "--outside", *(f"{sockets[p]}={h}:{p}" for h, p in addresses)])
        cleanup.callback(_stop, outside)
        for ns in spaces.values():
            inside = _relay([ip, "netns", "exec", ns, *relay, "--inside", *(f"{p}={s}" for p, s in sockets.items())])
            cleanup.callback(_stop, inside)
        yield {name: [ip, "netns", "exec", ns] for name, ns in spaces.items()}

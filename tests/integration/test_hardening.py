"""Issue 19's attacks, items 1-5, replayed against real stacks (PostgreSQL + Redis + Celery workers):
unauthenticated bodies, the bootstrap key, sweep / model / constraint bombs, set-up and housekeeping."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from datetime import timedelta
from urllib.parse import urlsplit

import numpy as np
import pytest
from safetensors.numpy import save_file
from sqlalchemy import create_engine, text

from app.audits.model_file import FORMAT_KEY, FORMAT_VERSION
from app.models import utcnow
from bench.common.datagen import planted_table
from tests.support.jobs import restart_api
from bench.common.jobs import job_spec, upload
from bench.common.stack import REDIS_URL, ROOT, pg_database, start_stack, stop_stack

MiB = 1 << 20


def rss_mib(pid: int) -> float:
    """Resident memory of a process (VmRSS), in MiB."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def raw_post(url: str, headers: dict[str, str], body_prefix: bytes, send_more: int = 0, timeout: float = 10) -> bytes:
    """POST ``headers`` and the first bytes of a body, then (optionally) ``send_more`` bytes in 1 MiB pieces
    until the server stops taking them; returns the raw response head. A server that waited for the whole
    body would answer nothing within ``timeout``."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as sock:
        head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": parts.netloc, **headers}.items())
        sock.sendall(f"POST /api/v1/jobs HTTP/1.1\r\n{head}\r\n".encode() + body_prefix)
        piece = b"[" * MiB
        try:
            for _ in range(send_more // MiB):
                sock.sendall(piece)
        except OSError:  # the server answered and closed: it takes no more of the body
            pass
        try:
            return sock.recv(4096)
        except ConnectionResetError:
            pytest.fail("the connection was reset before any answer")


def test_an_unauthenticated_body_is_answered_401_before_it_is_read(postgres_stack):
    """Content-Length 104 MiB, one byte sent: the 401 comes at once (the body is never waited for)."""
    started = time.monotonic()
    answer = raw_post(postgres_stack.url, {"Content-Type": "application/json", "Content-Length": str(104 * MiB)}, b"{")
    assert answer.startswith(b"HTTP/1.1 401"), answer
    wrong = raw_post(postgres_stack.url, {"Content-Type": "application/json", "Content-Length": str(104 * MiB),
                                          "Authorization": "Bearer fsk_not_a_key"}, b"{")
    assert wrong.startswith(b"HTTP/1.1 401"), wrong
    chunked = raw_post(postgres_stack.url, {"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
                       b"100000\r\n{")
    assert chunked.startswith(b"HTTP/1.1 401"), chunked
    assert time.monotonic() - started < 30  # far below the time 3 x 104 MiB would take to wait for
    # a known key may send a JSON body only up to the small body limit (not the 1 GiB upload limit)
    with postgres_stack.client() as client:
        big = client.post("/api/v1/jobs", content=b" " * (3 * MiB), headers={"content-type": "application/json"})
        assert big.status_code == 413 and big.json()["detail"].startswith("body:")


def test_a_104_mib_unauthenticated_body_does_not_grow_the_api(postgres_stack):
    """The issue's shape: 104 MiB of JSON with no key took the API from 772 to 1,649 MiB before its 401."""
    pid = postgres_stack.procs["api"].pid
    before = rss_mib(pid)
    answer = raw_post(postgres_stack.url, {"Content-Type": "application/json", "Content-Length": str(104 * MiB)},
                      b"{", send_more=104 * MiB)
    after = rss_mib(pid)
    print(f"API RSS {before:.0f} -> {after:.0f} MiB for a 104 MiB unauthenticated body")
    assert answer.startswith(b"HTTP/1.1 401") and after - before < 20


def serve(env: dict[str, str], module: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *module], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("key, database, problem", [
    (None, "postgres", "is not set"),
    ("change-me", "postgres", "is too short"),
    ("change-me", "embedded", "is too short"),
    ("a" * 48, "embedded", "is too weak"),
])
def test_the_api_refuses_to_start_with_a_missing_or_weak_bootstrap_key(postgres_stack, key, database, problem):
    env = {k: v for k, v in postgres_stack.env.items() if k not in ("FAIRSOLVE_BOOTSTRAP_API_KEY", "DATABASE_URL")}
    if database == "postgres":
        env["DATABASE_URL"] = postgres_stack.env["DATABASE_URL"]
    if key is not None:
        env["FAIRSOLVE_BOOTSTRAP_API_KEY"] = key
    out = serve(env, ["-m", "app.serve"])
    assert out.returncode != 0 and f"refusing to start: FAIRSOLVE_BOOTSTRAP_API_KEY {problem}" in out.stderr
    if key == "change-me" and database == "postgres":  # uvicorn run on the app directly: its start-up refuses
        out = serve({**env, "PORT": "0"}, ["-m", "uvicorn", "app.main:app", "--port", "0"])
        assert out.returncode != 0 and "refusing to start" in out.stderr


def test_sweep_grid_bomb_answers_422_fast(postgres_stack):
    """A few KB of grid whose product is ~4e9 jobs: 422 by arithmetic (it took 36 s and 2.3 GB), also with
    allow_large, and before the dataset is even looked up."""
    params = {n: list(range(1, 13)) for n in ("batch_size", "eta", "tau", "alpha", "beta", "gamma0", "kappa", "u_max")}
    with postgres_stack.client() as client:
        for allow_large in (False, True):
            body = {"base": job_spec("no-such-dataset"), "allow_large": allow_large,
                    "grid": {"params": params, "tolerances": [0.01, 0.02, 0.05], "seeds": [0, 1, 2]}}
            started = time.monotonic()
            resp = client.post("/api/v1/sweeps", json=body)
            assert time.monotonic() - started < 10  # it took 36 s (and 2.3 GB); a loaded machine answers slowly
            assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["body", "grid"], resp.text
        long_list = client.post("/api/v1/sweeps", json={"base": job_spec("x"), "grid": {"seeds": list(range(1000))}})
        assert long_list.status_code == 422 and long_list.json()["detail"][0]["loc"][:3] == ["body", "grid", "seeds"]


def audit_model_file(path, hidden: list[int], categories: int = 3) -> bytes:
    spec = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"],
            "model": {"type": "mlp", "hidden": hidden}}
    encoder = {"columns": ["c"], "plan": [{"column": "c", "kind": "categorical",
                                           "categories": [f"v{i}" for i in range(categories)]}]}
    save_file({"net.net.0.weight": np.zeros((1, 1), np.float32)}, str(path), metadata={
        FORMAT_KEY: FORMAT_VERSION, "spec": json.dumps(spec), "encoder": json.dumps(encoder), "groups": "[]",
        "job_id": ""})
    return path.read_bytes()


def test_model_size_bombs_answer_422(postgres_stack, tmp_path):
    with postgres_stack.client() as client:
        dataset = upload(client, planted_table(300))
        for model, loc in (({"type": "mlp", "hidden": [12000, 12000]}, ["body", "model", "hidden", 0]),
                           ({"type": "mlp", "hidden": [4096, 4096]}, ["body", "model"]),
                           ({"type": "mlp", "hidden": [8] * 17}, ["body", "model", "hidden"])):
            resp = client.post("/api/v1/jobs", json=job_spec(dataset["id"], model=model))
            assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == loc, resp.text
        # the route loads torch on its first safetensors upload (ONNX is told apart by byte 8, the safetensors
        # header's "{"): measure from after that
        not_a_model = b"\x02\x00\x00\x00\x00\x00\x00\x00{}"
        assert client.post("/api/v1/models", files={"file": ("m.safetensors", not_a_model)}).status_code == 422
        pid = postgres_stack.procs["api"].pid
        before = rss_mib(pid)
        for hidden, categories, message in (([12000, 12000], 3, "less than or equal to 4096"),
                                            ([64], 100_000, "the encoder is too wide"),
                                            ([3000, 3000], 5000, "parameters (more than 10000000)")):
            content = audit_model_file(tmp_path / "bomb.safetensors", hidden, categories)
            assert len(content) < 2 * MiB
            resp = client.post("/api/v1/models", files={"file": ("bomb.safetensors", content)})
            assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["body", "file"], resp.text
            assert message in resp.json()["detail"][0]["msg"]
        grown = rss_mib(pid) - before
        print(f"API RSS grew {grown:.0f} MiB over three model-bomb uploads")
        assert grown < 100  # the first file alone made the API allocate 2.65 GB


def test_constraint_bombs_are_refused(postgres_stack):
    one = {"type": "demographic_parity", "tolerance": 0.1}
    with postgres_stack.client() as client:
        resp = client.post("/api/v1/jobs", json=job_spec("x", constraints=[one] * 65))
        assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["body", "constraints"], resp.text
        huge = client.post("/api/v1/jobs", json=job_spec("x", constraints=[one] * 200_000))  # the job
        assert huge.status_code == 413  # over the JSON body limit, never parsed


def test_a_time_limit_spent_in_set_up_ends_the_job_before_its_first_iteration(postgres_stack):
    with postgres_stack.client() as client:
        dataset = upload(client, planted_table(3000))
        job = client.post("/api/v1/jobs", json=job_spec(dataset["id"], time_limit_s=1e-6)).json()
        done = postgres_stack.wait_job(client, job["id"], {"succeeded", "failed", "cancelled"})
        assert done["status"] == "failed" and "during set-up" in done["error"], done
        assert client.get(f"/api/v1/jobs/{job['id']}/trajectory").json()["total_points"] == 0


@pytest.fixture(scope="module")
def beat_stack(tmp_path_factory):
    """A stack of its own (its bootstrap key is revoked below): one busy worker, beat reaping every second."""
    database_url, drop = pg_database()
    stack = start_stack("hardening", tmp_path_factory.mktemp("hardening-home"), database_url, REDIS_URL, beat=True,
                        extra_env={"FAIRSOLVE_REAP_EVERY_S": "1", "FAIRSOLVE_STALE_AFTER_S": "3",
                                   "FAIRSOLVE_AUTH_CACHE_S": "0"})
    yield stack
    stop_stack(stack)
    drop()


def test_the_reaper_runs_while_the_only_job_worker_is_busy(beat_stack):
    """Housekeeping has a queue and a worker of its own: a stale job is re-queued although the one job
    worker is held by a long job (before, beat's reaper queued behind it)."""
    with beat_stack.client() as client:
        dataset = upload(client, planted_table(2000))
        long = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=10_000_000,
                                                         time_limit_s=120)).json()["id"]
        beat_stack.wait_job(client, long, {"running"})
        stale = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=5)).json()["id"]
        engine = create_engine(beat_stack.env["DATABASE_URL"])
        with engine.begin() as conn:  # as if its worker had died mid-run a while ago
            conn.execute(text("UPDATE jobs SET status='running', attempts=1, starts=1, heartbeat_at=:t WHERE id=:id"),
                         {"t": utcnow() - timedelta(minutes=10), "id": stale})
        engine.dispose()
        beat_stack.until(lambda: client.get(f"/api/v1/jobs/{stale}").json()["status"] != "running", 60,
                         f"the stale job {stale} reaped", logs=("housekeeping",))
        assert client.get(f"/api/v1/jobs/{long}").json()["status"] == "running"  # the worker is still busy
        assert client.post(f"/api/v1/jobs/{long}/cancel").status_code == 202
        assert beat_stack.wait_job(client, stale, {"succeeded", "failed"})["status"] == "succeeded"


def test_a_revoked_bootstrap_key_stays_revoked_after_a_restart(beat_stack):
    with beat_stack.client() as client:
        mine = [k for k in client.get("/api/v1/keys").json() if k["owner"] == "admin"]
        assert len(mine) == 1
        assert client.delete(f"/api/v1/keys/{mine[0]['id']}").status_code == 204
        assert client.get("/api/v1/jobs").status_code == 401
    restart_api(beat_stack)
    with beat_stack.client() as client:  # before: re-activated at every start
        assert client.get("/api/v1/jobs").status_code == 401
    assert "stays revoked" in beat_stack.log("api")


def test_the_audit_model_export_is_streamed_and_leaves_nothing_behind(postgres_stack, tmp_path):
    from app.audits.model import AuditModel

    with postgres_stack.client() as client:
        dataset = upload(client, planted_table(600))
        job = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=20)).json()
        postgres_stack.wait_job(client, job["id"], {"succeeded"})
        with client.stream("GET", f"/api/v1/jobs/{job['id']}/audit-model") as resp:
            assert resp.status_code == 200
            content = b"".join(resp.iter_bytes())
        assert int(resp.headers["content-length"]) == len(content)
        assert "audit-model.safetensors" in resp.headers["content-disposition"]
    (tmp_path / "m.safetensors").write_bytes(content)
    assert AuditModel.load_checked(tmp_path / "m.safetensors").job_id == job["id"]
    assert not list((postgres_stack.home / "storage" / "tmp").glob("*.audit-model"))

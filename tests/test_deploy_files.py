"""The production stack description is valid and has the services the design names."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def compose_command() -> list[str] | None:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_compose_config_passes():
    cmd = compose_command()
    if cmd is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed")
    secrets = {"FAIRSOLVE_BOOTSTRAP_API_KEY": "a-strong-key-0123456789abcdefghijklmnop",
               "FAIRSOLVE_S3_SECRET_KEY": "an-object-store-secret-0123"}
    unset = {k: v for k, v in os.environ.items() if k not in secrets}
    for name in secrets:  # no default credential: each secret is required
        env = {**unset, **{k: v for k, v in secrets.items() if k != name}}
        refused = subprocess.run([*cmd, "config", "-q"], cwd=ROOT, env=env, capture_output=True, text=True)
        assert refused.returncode != 0 and name in refused.stderr
    env = {**unset, **secrets}
    subprocess.run([*cmd, "config", "-q"], cwd=ROOT, env=env, check=True)
    services = subprocess.run([*cmd, "config", "--services"], cwd=ROOT, env=env, check=True, capture_output=True,
                              text=True).stdout.split()
    assert set(services) == {"api", "worker-cpu", "worker-gpu", "worker-audits", "worker-housekeeping", "beat",
                             "postgres", "redis", "minio"}
    rendered = subprocess.run([*cmd, "config"], cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout
    assert "driver: nvidia" in rendered and "housekeeping" in rendered
    # the api's own environment keeps the shared one (database, broker) and adds its process count
    assert rendered.count("DATABASE_URL") == 6 and rendered.count("FAIRSOLVE_API_WORKERS") == 1
    config = yaml.safe_load(rendered)["services"]
    app = ("api", "worker-cpu", "worker-gpu", "worker-audits", "worker-housekeeping", "beat")
    # storage any worker can reach: every app process stores its files in the object store, and no volume is
    # shared between the api and a worker (nor between workers): a worker may run on another machine
    assert all(config[name]["environment"]["FAIRSOLVE_STORAGE_URL"].startswith("s3://") for name in app)
    assert all(config[name]["environment"]["FAIRSOLVE_S3_ENDPOINT_URL"] == "http://minio:9000" for name in app)
    mounts = {name: {str(v).split(":", 1)[0] if isinstance(v, str) else v.get("source")
                     for v in config[name].get("volumes") or []} for name in app}
    assert not any(mounts[a] & mounts[b] for a in app for b in app if a < b), mounts
    assert config["minio"]["environment"]["MINIO_ROOT_PASSWORD"] == secrets["FAIRSOLVE_S3_SECRET_KEY"]


def test_compose_has_no_default_credential_and_consumes_every_queue():
    """Read without docker: the bootstrap key is required (``:?``), and some service consumes each queue."""
    text = (ROOT / "docker-compose.yml").read_text()
    assert "${FAIRSOLVE_BOOTSTRAP_API_KEY:?" in text and ":-" not in text.split("FAIRSOLVE_BOOTSTRAP_API_KEY:", 1)[1][:60]
    for queue in ("cpu", "gpu", "audits", "housekeeping"):
        assert f'"-Q", "{queue}"' in text


def test_dockerfile_selects_cuda_by_build_argument():
    text = (ROOT / "Dockerfile").read_text()
    assert "ARG BASE=python:3.11-slim-bookworm" in text and "ARG TORCH_INDEX=cpu" in text
    assert "FROM ${BASE}" in text

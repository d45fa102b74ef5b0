"""The production stack description is valid and has the services the design names."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

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
    unset = {k: v for k, v in os.environ.items() if k != "FAIRSOLVE_BOOTSTRAP_API_KEY"}
    refused = subprocess.run([*cmd, "config", "-q"], cwd=ROOT, env=unset, capture_output=True, text=True)
    assert refused.returncode != 0 and "FAIRSOLVE_BOOTSTRAP_API_KEY" in refused.stderr  # no default credential
    env = {**unset, "FAIRSOLVE_BOOTSTRAP_API_KEY": "a-strong-key-0123456789abcdefghijklmnop"}
    subprocess.run([*cmd, "config", "-q"], cwd=ROOT, env=env, check=True)
    services = subprocess.run([*cmd, "config", "--services"], cwd=ROOT, env=env, check=True, capture_output=True,
                              text=True).stdout.split()
    assert set(services) == {"api", "worker-cpu", "worker-gpu", "worker-housekeeping", "beat", "postgres", "redis"}
    rendered = subprocess.run([*cmd, "config"], cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout
    assert "driver: nvidia" in rendered and "housekeeping" in rendered
    # the api's own environment keeps the shared one (database, broker) and adds its process count
    assert rendered.count("DATABASE_URL") == 5 and rendered.count("FAIRSOLVE_API_WORKERS") == 1


def test_compose_has_no_default_credential_and_consumes_every_queue():
    """Read without docker: the bootstrap key is required (``:?``), and some service consumes each queue."""
    text = (ROOT / "docker-compose.yml").read_text()
    assert "${FAIRSOLVE_BOOTSTRAP_API_KEY:?" in text and ":-" not in text.split("FAIRSOLVE_BOOTSTRAP_API_KEY:", 1)[1][:60]
    for queue in ("cpu", "gpu", "housekeeping"):
        assert f'"-Q", "{queue}"' in text


def test_dockerfile_selects_cuda_by_build_argument():
    text = (ROOT / "Dockerfile").read_text()
    assert "ARG BASE=python:3.11-slim-bookworm" in text and "ARG TORCH_INDEX=cpu" in text
    assert "FROM ${BASE}" in text

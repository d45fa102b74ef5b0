"""The production stack description is valid and has the services the design names."""

from __future__ import annotations

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
    subprocess.run([*cmd, "config", "-q"], cwd=ROOT, check=True)
    services = subprocess.run([*cmd, "config", "--services"], cwd=ROOT, check=True, capture_output=True,
                              text=True).stdout.split()
    assert set(services) == {"api", "worker-cpu", "worker-gpu", "beat", "postgres", "redis"}
    rendered = subprocess.run([*cmd, "config"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    assert "driver: nvidia" in rendered and "-Q" in rendered
    # the api's own environment keeps the shared one (database, broker) and adds its process count
    assert rendered.count("DATABASE_URL") == 4 and rendered.count("FAIRSOLVE_API_WORKERS") == 1


def test_dockerfile_selects_cuda_by_build_argument():
    text = (ROOT / "Dockerfile").read_text()
    assert "ARG BASE=python:3.11-slim-bookworm" in text and "ARG TORCH_INDEX=cpu" in text
    assert "FROM ${BASE}" in text

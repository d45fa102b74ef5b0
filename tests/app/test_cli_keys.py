"""``fairsolve keys`` against a migrated SQLite database: the printed key authenticates; revoked, it does not."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fastapi import HTTPException
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from app.auth import authenticate
from tests.stack import ROOT


def cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)


def test_keys_create_list_revoke(tmp_path):
    env = {**{k: v for k, v in os.environ.items() if k != "DATABASE_URL"}, "FAIRSOLVE_HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "alembic", "upgrade", "head"], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    created = json.loads(cli(env, "keys", "create", "--owner", "bob").stdout)
    assert created["owner"] == "bob" and created["key"].startswith("fsk_")
    listing = cli(env, "keys", "list").stdout
    assert created["id"] in listing and created["key"] not in listing
    engine = create_engine(f"sqlite:///{tmp_path / 'fairsolve.db'}")
    with Session(engine) as db:
        assert authenticate(db, created["key"]).owner == "bob"
        assert cli(env, "keys", "revoke", created["id"]).returncode == 0
        with pytest.raises(HTTPException) as err:
            authenticate(db, created["key"])
        assert err.value.status_code == 401
    assert cli(env, "keys", "revoke", "missing").returncode == 2
    engine.dispose()

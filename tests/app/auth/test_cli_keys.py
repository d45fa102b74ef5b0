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
from bench.common.stack import ROOT


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


def test_outside_the_project_it_says_what_to_set_in_one_line_and_creates_nothing(tmp_path):
    """Issue 30, item 12: a 40-line SQLAlchemy traceback and a new .fairsolve/ in the current folder, before."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "FAIRSOLVE_HOME")}
    env["PYTHONPATH"] = str(ROOT)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    project_home = ROOT / ".fairsolve" / "fairsolve.db"
    done = subprocess.run([sys.executable, "-m", "app.cli", "keys", "list"], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=60)
    assert list(elsewhere.iterdir()) == []  # nothing littered
    if not project_home.exists():  # no embedded home to find: one line naming the variables
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert "FAIRSOLVE_HOME" in done.stderr and "DATABASE_URL" in done.stderr
    empty = tmp_path / "empty-home"
    empty.mkdir()
    done = subprocess.run([sys.executable, "-m", "app.cli", "keys", "list"], cwd=elsewhere,
                          env={**env, "FAIRSOLVE_HOME": str(empty)}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "holds no fairsolve.db" in done.stderr
    assert list(empty.iterdir()) == []


def test_it_finds_the_home_in_a_parent_folder(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "FAIRSOLVE_HOME")}
    subprocess.run([sys.executable, "-m", "alembic", "upgrade", "head"], cwd=ROOT, check=True, capture_output=True,
                   env={**env, "FAIRSOLVE_HOME": str(tmp_path / ".fairsolve")})
    below = tmp_path / "a" / "b"
    below.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-m", "app.cli", "keys", "create", "--owner", "carol"], cwd=below,
                          env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["owner"] == "carol" and not (below / ".fairsolve").exists()


def test_an_unmigrated_database_is_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    (tmp_path / "fairsolve.db").write_bytes(b"")
    done = subprocess.run([sys.executable, "-m", "app.cli", "keys", "list"], cwd=tmp_path,
                          env={**env, "FAIRSOLVE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "alembic upgrade head" in done.stderr

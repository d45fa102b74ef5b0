"""``alembic upgrade head`` then ``downgrade base`` on PostgreSQL and on SQLite."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from app.models import Base
from bench.common.stack import ROOT, pg_database

TABLES = set(Base.metadata.tables)


def alembic(url: str, *args: str) -> None:
    env = {**os.environ, "DATABASE_URL": url}
    subprocess.run([sys.executable, "-m", "alembic", *args], cwd=ROOT, env=env, check=True, capture_output=True)


def tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def schema_drift(url: str) -> list:
    """Alembic's autogenerate comparison of the migrated database with ``Base.metadata``."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_upgrade_then_downgrade(backend, tmp_path):
    if backend == "postgresql":
        url, drop = pg_database()
    else:
        url, drop = f"sqlite:///{tmp_path / 'm.db'}", (lambda: None)
    try:
        alembic(url, "upgrade", "head")
        assert tables(url) == TABLES
        assert schema_drift(url) == []  # the migrations build exactly what the models declare
        alembic(url, "downgrade", "base")
        assert tables(url) == set()
    finally:
        drop()

"""Trajectory downsampling on read (issue 19 #14), on a real SQLite file and a real PostgreSQL database:
the points are iterations 1, 1 + step, 1 + 2·step, … and the last, step = ⌈total / (max_points − 1)⌉."""
from __future__ import annotations

import math

import pytest
from sqlalchemy import insert
from sqlalchemy.orm import sessionmaker

from app.core.db import make_engine
from app.models import Base, Dataset, Job, TrajectoryPoint
from app.api.routes.jobs import read_trajectory
from bench.common.stack import pg_database

TOTAL = 2000


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    drop = None
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 't.db'}"
    else:
        url, drop = pg_database()
    engine = make_engine(url)
    Base.metadata.create_all(engine)
    with sessionmaker(bind=engine)() as session:
        session.add(Dataset(id="d", owner="t", name="d", format="csv", stored_name="-", size_bytes=0, sha256="-",
                            n_rows=1, n_columns=1, columns=[]))
        session.add(Job(id="j", owner="t", dataset_id="d", spec={}, progress={}))
        session.flush()
        session.execute(insert(TrajectoryPoint), [
            {"job_id": "j", "iteration": k, "elapsed_s": 0.01 * k, "samples_seen": k, "objective": 1.0 / k,
             "max_violation": 0.0, "constraints": [], "duals": {}} for k in range(1, TOTAL + 1)])
        session.commit()
        yield session
    engine.dispose()
    if drop is not None:
        drop()


@pytest.mark.parametrize("max_points", [500, 40, 3, 2])
def test_points_are_evenly_spaced(db, max_points):
    out = read_trajectory(db, db.get(Job, "j"), max_points)
    iterations = [p["iteration"] for p in out["points"]]
    step = math.ceil(TOTAL / (max_points - 1))
    assert out["total_points"] == TOTAL
    assert iterations == sorted({*range(1, TOTAL + 1, step), TOTAL})
    assert len(iterations) <= max_points
    assert all(b - a == step for a, b in zip(iterations, iterations[1:-1]))  # every gap but the last is one step
    assert 0 < iterations[-1] - iterations[-2] <= step


def test_every_point_when_they_fit(db):
    out = read_trajectory(db, db.get(Job, "j"), TOTAL)
    assert [p["iteration"] for p in out["points"]] == list(range(1, TOTAL + 1))

"""A real SQLite database with the models' tables and one dataset ``d``, for tests of the app and the worker."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import sessionmaker

from app.core.db import make_engine
from app.models import Base, Dataset


@pytest.fixture
def dataset_db(tmp_path):
    """A session factory on a fresh SQLite database holding the dataset ``d`` (owner ``t``)."""
    engine = make_engine(f"sqlite:///{tmp_path / 'app.db'}")
    Base.metadata.create_all(engine)
    factory = sessionmaker(bind=engine)
    with factory() as s, s.begin():
        s.add(Dataset(id="d", owner="t", name="d", format="csv", stored_name="-", size_bytes=0, sha256="-", n_rows=1,
                      n_columns=1, columns=[]))
    yield factory
    engine.dispose()

"""Fixtures of the worker tests: the app's SQLite database with one dataset (:mod:`tests.support.database`)."""

from tests.support.database import dataset_db  # noqa: F401 - a fixture

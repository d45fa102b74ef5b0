"""Shared fixtures of the app tests: a real SQLite database with the models' tables and one dataset ``d``
(:mod:`tests.support.database`), and a job's audit model files."""
from __future__ import annotations

import pytest

from tests.support.audits import audit_files
from tests.support.database import dataset_db  # noqa: F401 - a fixture


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A folder with a job's audit model file, its bare weights and fresh rows (:func:`tests.support.audits.audit_files`)."""
    return audit_files(tmp_path_factory.mktemp("audit-cli"))

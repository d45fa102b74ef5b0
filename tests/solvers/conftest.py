"""Shared fixtures: small generated data (no files)."""
import pytest

from tests.support.problems import planted_problem_data


@pytest.fixture(scope="session")
def planted():
    return planted_problem_data()

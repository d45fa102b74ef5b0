"""The two walks of the house read top-down: a job from ``POST /api/v1/jobs`` to its stored
result, and an audit from its schedule to its alert, each returning to a file already left at most a few times
(:mod:`tests.support.walks` states what a step and a return are; ``python -m tests.support.walks`` prints both)."""
from __future__ import annotations

import pytest

from tests.support.walks import walks_in_a_process

#: returns to a file already left, at most (measured: job 2, audit 4 — docs/architecture.md, "Two walks")
MAX_RETURNS = {"job": 2, "audit": 4}


@pytest.fixture(scope="module")
def found():
    return walks_in_a_process()


@pytest.mark.parametrize("flow", ["job", "audit"])
def test_each_flow_reads_top_down_with_few_returns(found, flow):
    walk = found[flow]
    assert len(walk.files) >= 8, walk.text()   # the flow was traced through the service, not short-circuited
    assert len(walk.returns) <= MAX_RETURNS[flow], walk.text()


def test_the_job_walk_goes_from_the_route_through_the_lifecycle_to_the_stored_result(found):
    """The job's walk: the route's checks, then the worker's task between the lifecycle's start and end, each
    entered once from the task."""
    files = found["job"].files
    order = [files.index(f) for f in ("app/jobs/idempotency.py", "app/jobs/lifecycle.py", "worker/tables.py",
                                      "app/jobs/artifacts.py")]
    assert order == sorted(order), found["job"].text()
    assert [r for r in found["job"].returns if r[2] == "app/jobs/lifecycle.py"] == [], found["job"].text()

"""Suite-wide settings: one torch thread per test process, and Redis databases of each pytest-xdist worker's own.

Several test processes (the suite's own Celery workers and APIs, other suites) share few cores; a second
intra-op thread in each only makes them wait on one another (OpenMP barriers under contention cost far more
than they save on the small tensors of the tests). Set on import, before any test module is collected, and
again once collection ends, so that a test module setting its own count at import time cannot change it for
the tests collected after it.

The suite runs in two processes (``-n 2 --dist loadfile`` in pytest.ini: a test file stays in one process, so its
module stacks start once; while one process waits on a stack, the other computes). Each stack keys its broker
traffic apart, but the browser and audit stacks empty their Redis database when they start: worker ``gwN`` takes
the databases 3N below those the environment or :mod:`bench.common.stack` names (13, 11, 12 by default; modulo
16, Redis' default count). Set here, before anything imports :mod:`bench.common.stack`.
"""
import os
import re

import torch

_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
_SHIFT = 3 * int(_WORKER[2:]) if _WORKER.startswith("gw") and _WORKER[2:].isdigit() else 0
for _name, _default in (("FAIRSOLVE_TEST_REDIS_URL", "redis://127.0.0.1:6379/13"),
                        ("FAIRSOLVE_TEST_BROWSER_REDIS_URL", "redis://127.0.0.1:6379/11"),
                        ("FAIRSOLVE_TEST_AUDIT_REDIS_URL", "redis://127.0.0.1:6379/12")):
    _url = os.environ.get(_name, _default)
    _db = re.search(r"/(\d+)$", _url)
    if _SHIFT and _db:
        os.environ[_name] = f"{_url[:_db.start()]}/{(int(_db.group(1)) - _SHIFT) % 16}"

torch.set_num_threads(1)


def pytest_collection_finish(session):
    torch.set_num_threads(1)


#: the longest test files (seconds each in a two-process run), started first so that no process is left running one
#: of them alone at the end while the other idles; the rest of tests/integration and tests/browser follow, then the
#: rest in collection order
LONGEST_FIRST = ("test_fuzz.py", "test_chaos.py", "test_sweeps.py", "test_fencing.py", "test_audits.py",
                 "test_broker_outage.py", "test_multi_host.py", "test_audit_limits.py", "test_hardening.py",
                 "test_launcher.py", "test_dashboard.py")


def pytest_collection_modifyitems(session, config, items):
    """Order the files as :data:`LONGEST_FIRST` says (a stable sort: each file's tests keep their order)."""
    def rank(item) -> tuple[int, int]:
        path = item.path
        if path.name in LONGEST_FIRST:
            return 0, LONGEST_FIRST.index(path.name)
        return (1, 0) if path.parent.name in ("integration", "browser") else (2, 0)

    items.sort(key=rank)

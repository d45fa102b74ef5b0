"""Suite-wide settings: one torch thread per test process.

Several test processes (the suite's own Celery workers and APIs, other suites) share few cores; a second
intra-op thread in each only makes them wait on one another (OpenMP barriers under contention cost far more
than they save on the small tensors of the tests). Set on import, before any test module is collected, and
again once collection ends, so that a test module setting its own count at import time cannot change it for
the tests collected after it.
"""
import torch

torch.set_num_threads(1)


def pytest_collection_finish(session):
    torch.set_num_threads(1)

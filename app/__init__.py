"""FairSolve HTTP service: FastAPI routers, persistence, dataset storage and charts (layout: docs/architecture.md)."""

__version__ = "0.1.0"  # the distribution's version too (pyproject.toml reads it)

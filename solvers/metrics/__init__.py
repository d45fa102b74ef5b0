"""solvers.metrics: see docs/architecture.md, "solvers/ layout"."""

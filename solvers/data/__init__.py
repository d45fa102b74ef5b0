"""solvers.data: see docs/architecture.md, "solvers/ layout"."""

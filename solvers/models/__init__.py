"""solvers.models: see docs/architecture.md, "solvers/ layout"."""

"""solvers.formats: see docs/architecture.md, "solvers/ layout"."""

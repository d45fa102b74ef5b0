"""Sweeps: a grid over tolerances × solvers × seeds × params expanded into jobs, and their summary."""

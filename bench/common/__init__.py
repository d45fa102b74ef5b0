"""Harness shared by the benchmarks and the tests: real stacks (API + worker processes), generated tables,
multi-host deployments, job helpers and the one polling helper ``wait_until``. Imports nothing of ``tests``."""

"""Benchmarks and paper reproductions (not tests): timed runs on real datasets, results in bench/results/."""

"""Benchmarks and paper reproductions (not tests): timed runs on real datasets, grouped as ``papers`` (paper
reproductions), ``quality`` (fairness kept, frontiers, thresholds), ``system`` (load, scale, speed, hostile traffic) and
``common`` (datasets and the harness the tests share); each group writes its results to its own ``results/`` folder."""

"""Test-only harness: helpers several test modules share (a test module never imports another one).
The harness the benchmarks use too (stacks, generated tables, job helpers, ``wait_until``) lives in ``bench.common``."""

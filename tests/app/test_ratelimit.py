"""The per-key token bucket."""

from app.ratelimit import TokenBuckets


def test_burst_then_refill_at_rate():
    buckets = TokenBuckets(rate=2.0, burst=3)
    assert [buckets.take("k", now=0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("k", now=0.0) == 0.5  # one token takes 1/rate seconds
    assert buckets.take("other", now=0.0) == 0.0  # keys are independent
    assert buckets.take("k", now=0.5) == 0.0
    assert buckets.take("k", now=0.5) > 0
    assert [buckets.take("k", now=100.0) for _ in range(4)][-1] > 0  # refill is capped at the burst
    assert TokenBuckets.retry_after(0.01) == "1"


def test_zero_rate_means_no_limit():
    buckets = TokenBuckets(rate=0, burst=0)
    assert all(buckets.take("k", now=0.0) == 0.0 for _ in range(1000))

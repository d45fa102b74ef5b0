"""The per-key token bucket: in the process, and shared through Redis (a real server)."""

import asyncio
import math
import time
import uuid

from app.api.middleware.ratelimit import SharedBuckets, TokenBuckets
from bench.common.stack import REDIS_URL, free_port
from tests.support.aio import run_coroutine


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


def shared(rate: float, burst: float, prefix: str, url: str = REDIS_URL) -> SharedBuckets:
    return SharedBuckets(url, rate, burst, prefix=prefix)


def test_shared_buckets_hold_one_limit_across_processes():
    """Two API processes (two instances, two connections) draw on one bucket per key in Redis: 20
    requests at once get the burst, not twice the burst as two in-process buckets would."""
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    a, b = shared(2.0, 5, prefix), shared(2.0, 5, prefix)

    async def run() -> tuple[list[float], float]:
        started = time.monotonic()
        waits = [await (a if i % 2 else b).acquire("k") for i in range(20)]
        return waits, time.monotonic() - started

    waits, elapsed = run_coroutine(run())
    granted = sum(w == 0.0 for w in waits)
    assert 5 <= granted <= 5 + math.floor(elapsed * 2.0) + 1, (granted, elapsed)
    assert waits[:5] == [0.0] * 5                       # the burst is granted in order
    refused = [w for w in waits if w > 0]
    assert refused and all(0 < w <= 0.5 for w in refused)  # a token is back within 1/rate
    local = TokenBuckets(2.0, 5), TokenBuckets(2.0, 5)  # what per-process buckets would have granted
    assert sum(local[i % 2].take("k", now=0.0) == 0.0 for i in range(20)) == 10


def test_shared_buckets_refill_at_rate_and_keys_are_independent():
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    buckets = shared(4.0, 2, prefix)

    async def run() -> tuple[list[float], float, float]:
        first = [await buckets.acquire("k") for _ in range(3)]
        other = await buckets.acquire("other")
        await asyncio.sleep(0.3)                        # > 1/rate: one token is back
        return first, other, await buckets.acquire("k")

    first, other, later = run_coroutine(run())
    assert first[:2] == [0.0, 0.0] and first[2] > 0
    assert other == 0.0 and later == 0.0


def test_shared_buckets_fall_back_to_the_process_when_redis_is_unreachable():
    port = free_port()                                  # nothing listens there
    buckets = shared(1.0, 3, "x:", url=f"redis://127.0.0.1:{port}/0")

    async def run() -> list[float]:
        return [await buckets.acquire("k") for _ in range(4)]

    waits = run_coroutine(run())
    assert waits[:3] == [0.0] * 3 and waits[3] > 0      # the local bucket's burst, then a wait

"""Request rate per API key: a token bucket per key.

Each key holds at most ``burst`` tokens, refilled at ``rate`` per second; a request takes one
or is answered 429 with ``Retry-After`` (seconds until a token is back).

With a Redis broker the buckets are shared by every API process (:class:`SharedBuckets`), so a key
gets ``rate`` whichever processes answer it. On the embedded defaults (no Redis) they live in the
process (:class:`TokenBuckets`): with N API processes a key spread over them may get up to N times
the rate; the shared buckets fall back to these while Redis cannot be reached.
"""

from __future__ import annotations

import logging
import math
import threading
import time

import redis.asyncio
from redis.exceptions import RedisError

log = logging.getLogger("fairsolve.api")


class TokenBuckets:
    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self._state: dict[str, tuple[float, float]] = {}  # key -> (tokens, last refill time)
        self._lock = threading.Lock()

    def take(self, key: str, now: float | None = None) -> float:
        """Take one token for ``key``; return 0 when granted, else the seconds to wait."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._state.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1:
                self._state[key] = (tokens - 1, now)
                return 0.0
            self._state[key] = (tokens, now)
            return (1 - tokens) / self.rate

    async def acquire(self, key: str) -> float:
        """:meth:`take` now (the interface of :class:`SharedBuckets`)."""
        return self.take(key)

    @staticmethod
    def retry_after(wait_s: float) -> str:
        return str(max(1, math.ceil(wait_s)))


# GCRA, the token bucket written as one timestamp per key: the theoretical arrival time TAT. With the
# emission interval T = 1/rate and the tolerance τ = (burst − 1)·T, a request at `now` is granted when
# max(TAT, now) − now ≤ τ (TAT then advances by T), else it waits max(TAT, now) − τ − now; granting k
# requests at once needs (k − 1)·T ≤ τ, i.e. k ≤ burst, as a full bucket does. Times are integer
# microseconds of the Redis server's clock (exact in a double), so the API processes need no common clock.
_GCRA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval, tolerance = tonumber(ARGV[1]), tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local wait = tat - tolerance - now
if wait > 0 then return wait end
local next_tat = tat + interval
redis.call('SET', KEYS[1], string.format('%.0f', next_tat), 'PX', math.ceil((next_tat - now) / 1000) + 1000)
return 0
"""


class SharedBuckets:
    """The token buckets of :class:`TokenBuckets` kept in Redis (one key per API key, expiring once
    full again), one script call per request. While Redis cannot be reached the process's own
    buckets answer, and Redis is tried again after ``retry_s``."""

    def __init__(self, url: str, rate: float, burst: float, prefix: str = "", retry_s: float = 5.0) -> None:
        self.url, self.rate, self.burst, self.prefix, self.retry_s = url, rate, burst, prefix, retry_s
        self.local = TokenBuckets(rate, burst)
        self._interval_us = round(1e6 / rate) if rate > 0 else 0
        self._tolerance_us = round(max(burst - 1.0, 0.0) * 1e6 / rate) if rate > 0 else 0
        self._client: redis.asyncio.Redis | None = None
        self._script = None
        self._down_until = 0.0

    def _gcra(self):
        if self._script is None:  # made on first use, in the event loop that serves requests
            self._client = redis.asyncio.Redis.from_url(self.url, socket_timeout=0.5, socket_connect_timeout=0.5)
            self._script = self._client.register_script(_GCRA)
        return self._script

    async def acquire(self, key: str) -> float:
        """0 when a token was taken for ``key``, else the seconds until one is back."""
        if self.rate <= 0:
            return 0.0
        if time.monotonic() < self._down_until:
            return self.local.take(key)
        try:
            wait_us = await self._gcra()(keys=[f"{self.prefix}fairsolve:rate:{key}"],
                                         args=[self._interval_us, self._tolerance_us])
        except (RedisError, OSError) as exc:
            log.warning("rate limit: Redis unreachable (%s); this process's own buckets answer for %g s",
                        exc, self.retry_s)
            self._down_until = time.monotonic() + self.retry_s
            return self.local.take(key)
        return int(wait_us) / 1e6

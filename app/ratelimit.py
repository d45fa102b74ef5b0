"""Request rate per API key: a token bucket per key, in the API process.

Each key holds at most ``burst`` tokens, refilled at ``rate`` per second; a request takes one
or is answered 429 with ``Retry-After`` (seconds until a token is back). The buckets live in
the process: with several API processes (``FAIRSOLVE_API_WORKERS``) each enforces the limit on the
requests it answers, so a key spread over N processes may get up to N times the rate.
"""

from __future__ import annotations

import math
import threading
import time


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

    @staticmethod
    def retry_after(wait_s: float) -> str:
        return str(max(1, math.ceil(wait_s)))

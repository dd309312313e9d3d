"""A token bucket with kube-scheduler's client semantics: ``qps`` tokens per second, ``burst`` max.

client-go's default rate limiter lets ``burst`` requests through at once and then ``qps`` per
second; the benchmark compares opsche with kube-scheduler at the same settings, so the shape must
match, not just the average.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["TokenBucket"]


class TokenBucket:
    """An asyncio token bucket; ``qps <= 0`` disables limiting."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if burst < 1 and qps > 0:
            raise ValueError(f"burst must be at least 1 when qps is set, not {burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now

    def try_acquire(self) -> float:
        """Take a token if one is available (returns 0.0), else the seconds until one is."""
        if self.qps <= 0:
            return 0.0
        self._refill()
        # The epsilon: a virtual clock (the replay's) wakes a sleeper exactly at its deadline,
        # rounded to 1 us, so the refill may fall a hair short of a whole token; without it the
        # waiter would sleep for nanoseconds that never pass.
        if self._tokens >= 1.0 - 1e-6:
            self._tokens = max(0.0, self._tokens - 1.0)
            return 0.0
        return (1.0 - self._tokens) / self.qps

    async def acquire(self) -> None:
        """Wait for a token; requests are served in arrival order."""
        if self.qps <= 0:
            return
        async with self._lock:
            while True:
                wait = self.try_acquire()
                if wait == 0.0:
                    return
                await asyncio.sleep(wait)

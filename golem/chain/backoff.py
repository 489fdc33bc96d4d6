"""Exponential backoff with full jitter (pure: the caller passes the random source).

Jitter spreads retries so that many golems, or many calls of one golem, do not
hammer a recovering node in lock-step. The random source is an argument so
simulations and tests are reproducible from a seed; the caller does the sleeping
on the golem clock.
"""

from __future__ import annotations

import math
import random


class Backoff:
    """Delay ceiling min(cap, base * 2**attempt); `jitter` of it is drawn at random.

    jitter = 1.0 is full jitter (uniform in [0, ceiling]); 0.0 is plain
    exponential backoff; in between, the delay is in [(1 - jitter) * ceiling, ceiling].
    """

    def __init__(self, base: float, cap: float, jitter: float = 1.0) -> None:
        if not (base > 0 and cap >= 0):
            raise ValueError("need base > 0 and cap >= 0")
        if not 0.0 <= jitter <= 1.0:
            raise ValueError("jitter must be in [0, 1]")
        self.base = base
        self.cap = cap
        self.jitter = jitter
        self.attempt = 0

    def ceiling(self, attempt: int) -> float:
        """Largest delay for retry number `attempt` (0 is the first retry)."""
        if attempt < 0:
            raise ValueError("attempt must be >= 0")
        try:
            return min(self.cap, math.ldexp(self.base, attempt))
        except OverflowError:
            return self.cap

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Delay for retry number `attempt`, drawn from `rng`; does not touch the counter."""
        top = self.ceiling(attempt)
        return top * (1.0 - self.jitter * rng.random())

    def next_delay(self, rng: random.Random) -> float:
        """Delay for the next retry, counting attempts since the last `reset()`."""
        value = self.delay(self.attempt, rng)
        self.attempt += 1
        return value

    def reset(self) -> None:
        """A call succeeded: the next failure starts again from `base`."""
        self.attempt = 0

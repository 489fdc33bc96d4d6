"""Wall time of a tick's stages, for its counters (milliseconds, two decimals)."""

from __future__ import annotations

import time


def ms_since(started: float) -> float:
    """Milliseconds since ``started`` (a ``time.perf_counter()`` reading)."""
    return round((time.perf_counter() - started) * 1000.0, 2)


class Laps:
    """Consecutive stages of one tick: each ``lap(name)`` records ``{name}_ms``, the time
    since the previous lap (or since the Laps was made). The stages cover the tick
    without gaps or overlap, so their sum is the time from creation to the last lap."""

    def __init__(self) -> None:
        self._last = time.perf_counter()
        self.ms: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.ms[f"{name}_ms"] = round((now - self._last) * 1000.0, 2)
        self._last = now

"""When a loop ticks next: fixed slots, overrun skipping and failure backoff.

Pure: takes numbers, returns numbers. Slots sit at ``anchor + index * interval``
so ticks never drift; a tick that runs past its slot makes the loop skip to
the next free slot (counted, never queued), and consecutive failures push the
next tick out exponentially.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_EPS = 1e-9


@dataclass(frozen=True)
class NextTick:
    index: int
    at: float
    skipped_overrun: int
    skipped_backoff: int


def backoff_delay(consecutive_failures: int, interval: float, maximum: float) -> float:
    """How long after a failed tick the next may start: 0, then interval x 2, 4, 8, ...

    A single failure may be a blip, so the next slot runs as usual; from the
    second failure in a row the loop waits twice as long each time (skipping
    1, 3, 7, ... slots), up to ``maximum``.
    """
    if consecutive_failures < 2 or maximum <= 0:
        return 0.0
    exponent = min(consecutive_failures - 1, 62)
    return float(min(interval * (2**exponent), maximum))


def slot_time(anchor: float, interval: float, index: int) -> float:
    return anchor + index * interval


def _first_slot_at_or_after(anchor: float, interval: float, t: float) -> int:
    return math.ceil((t - anchor) / interval - _EPS)


def plan_next(
    anchor: float,
    interval: float,
    index: int,
    finished_at: float,
    delay: float = 0.0,
) -> NextTick:
    """The slot after slot ``index`` whose tick finished at ``finished_at``."""
    on_time = max(index + 1, _first_slot_at_or_after(anchor, interval, finished_at))
    backed_off = max(on_time, _first_slot_at_or_after(anchor, interval, finished_at + delay))
    return NextTick(
        index=backed_off,
        at=slot_time(anchor, interval, backed_off),
        skipped_overrun=on_time - index - 1,
        skipped_backoff=backed_off - on_time,
    )

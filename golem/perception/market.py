"""Market context for an episode's text: how big the event is for its channel, and what
the price feeds did over the last minutes (pure: no I/O, no clock).

Renderings are embedded, so a later query like "large swap during a crash" can
only find an episode whose text says so. These words are perception's own
reading of chain data (the size feature's z-score against the channel's belief,
the recent move of the feeds' answers), never the simulator's ground truth.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

WINDOW_S = 600.0
LARGE_Z, VERY_LARGE_Z = 2.0, 3.5
# price move over the window -> label, checked in order
MOVES: tuple[tuple[float, str], ...] = (
    (-0.05, "crashing"), (-0.015, "falling"), (0.05, "surging"), (0.015, "rising"))


@dataclass(frozen=True, slots=True)
class PricePoint:
    time: float  # the feed's own updatedAt (chain time)
    price: float


def record(points: tuple[PricePoint, ...], point: PricePoint,
           window_s: float = WINDOW_S) -> tuple[PricePoint, ...]:
    """Append a feed answer, keeping one point at or before the window's start."""
    kept = (*points, point)
    start = point.time - window_s
    while len(kept) > 2 and kept[1].time <= start:
        kept = kept[1:]
    return kept


def move_phrase(points: tuple[PricePoint, ...], window_s: float = WINDOW_S) -> str | None:
    """e.g. "market crashing: price -7.2% over 10 min", or None without two points."""
    if len(points) < 2 or points[0].price <= 0:
        return None
    change = points[-1].price / points[0].price - 1.0
    minutes = max(1, round(min(points[-1].time - points[0].time, window_s) / 60))
    label = "steady"
    for threshold, name in MOVES:
        if (threshold < 0 and change <= threshold) or (threshold > 0 and change >= threshold):
            label = name
            break
    return f"market {label}: price {change:+.1%} over {minutes} min"


def size_phrase(category: str, z_by_feature: Mapping[str, float]) -> str | None:
    """e.g. "very large swap (4.2 sd above this pool's usual size)", or None if ordinary."""
    z = z_by_feature.get("size")
    if z is None or z < LARGE_Z:
        return None
    word = "very large" if z >= VERY_LARGE_Z else "large"
    return f"{word} {category} ({z:.1f} sd above this contract's usual size)"


def context_line(size: str | None, market: str | None) -> str:
    """The suffix added to a rendering; empty when there is nothing to say."""
    parts = [p for p in (size, market) if p]
    return f" Context: {'; '.join(parts)}." if parts else ""

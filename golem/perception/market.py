"""Market context for an episode's text: how big the event is for its channel, and what
the price feeds did over the last minutes (pure: no I/O, no clock).

Renderings are embedded, so a later query like "large swap during a crash" can
only find an episode whose text says so. These words are perception's own
reading of chain data (the event's size against the channel's EMA prediction,
the recent move of the feeds' answers), never the simulator's ground truth.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

WINDOW_S = 600.0
# The tape's regime (tape_regime): a fall of CRASH_MOVE or more over the window is a
# crash; else a standard deviation of answer-to-answer returns of VOLATILE_STEP or more
# is volatile; else a move of TREND_MOVE or more either way is trending; else calm.
CRASH_MOVE = -0.05
VOLATILE_STEP = 0.008
TREND_MOVE = 0.015
TAPE_REGIMES = ("calm", "trending", "volatile", "crash")
LARGE_RATIO, VERY_LARGE_RATIO = 5.0, 20.0
# price move over the window -> label, checked in order
MOVES: tuple[tuple[float, str], ...] = (
    (-0.05, "crashing"), (-0.015, "falling"), (0.05, "surging"), (0.015, "rising"))
# Trailing move over WINDOW_S -> the bucket consolidation counts conditional outcomes by
# and the offline tier looks situations up by: (upper bound, bucket), checked in order;
# above the last bound: TOP_BUCKET.
MOVE_BUCKETS: tuple[tuple[float, str], ...] = (
    (-0.015, "fell_hard"), (-0.005, "fell"), (0.005, "flat"), (0.015, "rose"))
TOP_BUCKET = "rose_hard"
# How facts, prompts and Theta's recall query say a bucket. None of them is a threshold
# as recall reads one ("less than 0.5%" would be): Theta's query asks for the lessons of
# a situation, not for every feed answer that moved that little.
BUCKET_WORDS = {"fell_hard": "fell 1.5% or more", "fell": "fell 0.5-1.5%",
                "flat": "moved within 0.5%", "rose": "rose 0.5-1.5%",
                "rose_hard": "rose 1.5% or more"}


def outcome_key(feed: str, regime: str, bucket: str, horizon_s: float) -> str:
    """The key consolidation files a conditional outcome under (and Theta looks it up by)."""
    return f"outcome|{feed.lower()}|{regime}|{bucket}|{int(horizon_s)}"


def trade_key(side: str, regime: str, bucket: str, horizon_s: float) -> str:
    """The key of the golem's record with swaps of a side ("buy", "sell") in a situation."""
    return f"procedural|swap|{side}|{regime}|{bucket}|{int(horizon_s)}"


def situation_keys(feed: str, bucket: str, horizon_s: float) -> tuple[str, ...]:
    """Every key a situation's own facts can have: its feed's outcomes after a move of
    this bucket in each regime, the swap records of both sides in each, and the swap
    record of all situations ("procedural|swap")."""
    return (*(outcome_key(feed, r, bucket, horizon_s) for r in TAPE_REGIMES),
            *(trade_key(side, r, bucket, horizon_s) for side in ("buy", "sell")
              for r in TAPE_REGIMES), "procedural|swap")


def move_bucket(move: float) -> str:
    """The bucket of a trailing move (a fraction: -0.02 is a 2% fall)."""
    for bound, name in MOVE_BUCKETS:
        if move <= bound:
            return name
    return TOP_BUCKET


@dataclass(frozen=True, slots=True)
class PricePoint:
    time: float  # the feed's own updatedAt (chain time)
    price: float


def tape_regime(points: tuple[PricePoint, ...]) -> str:
    """The market's regime read from a feed's answers over the window, oldest first (the
    constants above); "calm" with fewer than three answers. Theta reads the situation by
    it and consolidation counts conditional outcomes by it, so the two agree."""
    if len(points) < 3 or min(p.price for p in points) <= 0:
        return "calm"
    steps = [b.price / a.price - 1.0 for a, b in itertools.pairwise(points)]
    move = points[-1].price / points[0].price - 1.0
    mean = sum(steps) / len(steps)
    spread = math.sqrt(sum((s - mean) ** 2 for s in steps) / len(steps))
    if move <= CRASH_MOVE:
        return "crash"
    if spread >= VOLATILE_STEP:
        return "volatile"
    return "trending" if abs(move) >= TREND_MOVE else "calm"


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
    label = move_label(points)
    if label is None:
        return None
    change = points[-1].price / points[0].price - 1.0
    minutes = max(1, round(min(points[-1].time - points[0].time, window_s) / 60))
    return f"market {label}: price {change:+.1%} over {minutes} min"


def move_label(points: tuple[PricePoint, ...]) -> str | None:
    """The move's class over the points: crashing, falling, steady, rising or surging."""
    if len(points) < 2 or points[0].price <= 0:
        return None
    change = points[-1].price / points[0].price - 1.0
    for threshold, name in MOVES:
        if (threshold < 0 and change <= threshold) or (threshold > 0 and change >= threshold):
            return name
    return "steady"


def size_phrase(category: str, error: float | None) -> str | None:
    """e.g. "very large swap (24x this contract's usual size)", or None if ordinary.

    `error` is the size feature's prediction error (the feature is log10 of the
    amount), so 10**error is how many times the expected size this event is.
    """
    if error is None or error > 300:
        return None
    ratio = 10.0**error
    if ratio < LARGE_RATIO:
        return None
    word = "very large" if ratio >= VERY_LARGE_RATIO else "large"
    return f"{word} {category} ({ratio:.0f}x this contract's usual size)"


def answer_change_phrase(previous: float | None, current: float) -> str | None:
    """A feed answer against the feed's previous one: "answer down 2.3% from the previous
    one" ("unchanged" under 0.05%), or None without a previous positive answer."""
    if previous is None or previous <= 0:
        return None
    change = current / previous - 1.0
    if abs(change) < 0.0005:
        return "answer unchanged from the previous one"
    return f"answer {'down' if change < 0 else 'up'} {abs(change):.1%} from the previous one"


def context_line(size: str | None, market: str | None, change: str | None = None) -> str:
    """The prefix put before a rendering (first, so the embedding model's 256-token
    window and a truncated display both keep it); empty when there is nothing to say.
    ``change``: a feed answer's change from the previous one (answer_change_phrase)."""
    parts = [p for p in (change, size, market) if p]
    if not parts:
        return ""
    text = "; ".join(parts)
    return f"{text[0].upper()}{text[1:]}. "

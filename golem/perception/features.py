"""What perception measures on each decoded event (pure).

Amounts span twenty orders of magnitude (wei to whole tokens), so beliefs track
their base-10 logarithm: a size feature, the largest amount-like argument of
the event, kept per event type ("Swap size", "Sync size"): one contract emits
events of very different scales (a pool's Sync reports its whole reserves, its
Swaps a trade), and one shared feature would call every swap small. Oracle
answers become a "price move" feature (log10 of the answer over the feed's
previous one). An event with nothing numeric contributes no continuous
feature; every event still counts toward its channel's event rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

_AMOUNT_WORDS = ("amount", "value", "reserve", "debt", "liquidated", "liquidity")


def features(event_name: str, args: Mapping[str, Any],
             previous_answer: float | None = None) -> dict[str, float]:
    """Continuous features of one event: {"<event> size": ...} or {"price move": ...}.

    A feed's answer is a random walk, so its level is no regime signal (it wanders
    away from any reference); its move since the feed's previous answer is. Without
    a previous answer a feed update has no continuous feature yet.
    """
    out: dict[str, float] = {}
    if event_name == "AnswerUpdated":
        current = args.get("current")
        if isinstance(current, int) and current > 0 and previous_answer:
            out["price move"] = math.log10(current / previous_answer)
        return out
    amounts = [abs(v) for k, v in args.items()
               if isinstance(v, int) and not isinstance(v, bool)
               and any(word in k.lower() for word in _AMOUNT_WORDS)]
    if amounts:
        out[size_key(event_name)] = math.log10(1 + max(amounts))
    return out


def size_key(event_name: str) -> str:
    """The name of an event type's size feature."""
    return f"{event_name} size"

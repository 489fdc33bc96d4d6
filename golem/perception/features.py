"""What perception measures on each decoded event (pure).

Amounts span twenty orders of magnitude (wei to whole tokens), so beliefs track
their base-10 logarithm: a "size" feature, the largest amount-like argument of
the event. Oracle answers become a "price" feature (log10 of the answer). An
event with nothing numeric contributes no continuous feature; every event still
counts toward its channel's event rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

_AMOUNT_WORDS = ("amount", "value", "reserve", "debt", "liquidated", "liquidity")


def features(event_name: str, args: Mapping[str, Any]) -> dict[str, float]:
    """Continuous features of one event: {"size": ...} and/or {"price": ...}."""
    out: dict[str, float] = {}
    if event_name == "AnswerUpdated":
        current = args.get("current")
        if isinstance(current, int) and current > 0:
            out["price"] = math.log10(current)
        return out
    amounts = [abs(v) for k, v in args.items()
               if isinstance(v, int) and not isinstance(v, bool)
               and any(word in k.lower() for word in _AMOUNT_WORDS)]
    if amounts:
        out["size"] = math.log10(1 + max(amounts))
    return out

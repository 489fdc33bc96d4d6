"""Which cognitive tier a Theta tick gets (pure): T0 no model call, T1 cheap, T2 strong.

A model call is spent only when something happened: with nothing escalated the
offline reasoner (T0) decides. An escalation at or above the T2 curiosity bar
gets the strong model unless the golem is conserving (Conservation, Declining,
Terminal phases step down a tier). Either tier is taken only if the remaining
budget covers its worst case; otherwise the tick steps down, finally to T0.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from golem.governor.categories import Phase


class Tier(StrEnum):
    T0 = "T0"
    T1 = "T1"
    T2 = "T2"


CONSERVING = frozenset({Phase.CONSERVATION, Phase.DECLINING, Phase.TERMINAL})


def route_tier(*, model_available: bool, curiosities: Sequence[float], phase: Phase,
               budget_left_usd: float, worst_t1_usd: float, worst_t2_usd: float,
               t2_curiosity: float) -> Tier:
    if not model_available or not curiosities:
        return Tier.T0
    wanted = Tier.T2 if max(curiosities) >= t2_curiosity else Tier.T1
    if wanted is Tier.T2 and phase in CONSERVING:
        wanted = Tier.T1
    if wanted is Tier.T2 and worst_t2_usd > budget_left_usd:
        wanted = Tier.T1
    if wanted is Tier.T1 and worst_t1_usd > budget_left_usd:
        return Tier.T0
    return wanted

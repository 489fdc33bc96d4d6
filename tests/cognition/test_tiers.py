"""Tier routing: model calls only when something happened, within budget and phase."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from golem.cognition.tiers import CONSERVING, Tier, route_tier
from golem.governor.categories import Phase


def route(**kw: object) -> Tier:
    args: dict[str, object] = {"model_available": True, "curiosities": [0.5],
                               "phase": Phase.STABLE, "budget_left_usd": 1.0,
                               "worst_t1_usd": 0.01, "worst_t2_usd": 0.1, "t2_curiosity": 0.8}
    args.update(kw)
    return route_tier(**args)  # type: ignore[arg-type]


def test_routes() -> None:
    assert route(curiosities=[]) is Tier.T0
    assert route(model_available=False) is Tier.T0
    assert route() is Tier.T1
    assert route(curiosities=[0.2, 0.9]) is Tier.T2
    assert route(curiosities=[0.9], phase=Phase.DECLINING) is Tier.T1
    assert route(curiosities=[0.9], budget_left_usd=0.05) is Tier.T1
    assert route(curiosities=[0.9], budget_left_usd=0.001) is Tier.T0


@given(st.lists(st.floats(0, 1), max_size=5), st.sampled_from(list(Phase)),
       st.floats(0, 1), st.floats(0, 0.1), st.floats(0, 1))
def test_never_over_budget_or_strong_while_conserving(
        curiosities: list[float], phase: Phase, budget: float, t1: float, t2: float) -> None:
    tier = route(curiosities=curiosities, phase=phase, budget_left_usd=budget,
                 worst_t1_usd=t1, worst_t2_usd=t2)
    if tier is Tier.T2:
        assert phase not in CONSERVING and t2 <= budget
    if tier is Tier.T1:
        assert t1 <= budget and curiosities

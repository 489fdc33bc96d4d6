"""The offline tier: deterministic, schema-true decisions from what the workspace holds."""

from __future__ import annotations

import dataclasses
import json

from hypothesis import given
from hypothesis import strategies as st

from golem.cognition.decisions import Decision, decision_to_dict, parse_decision
from golem.cognition.offline import Entry, Situation, decide
from golem.perception.market import PricePoint

WARNING = Entry("grimoire://g/warning/w1", "invariants", "Warning: HONEY sells revert")
CRASH_NOTE = Entry("grimoire://g/episode/e1", "episodes",
                   "Market crashing: price -7% over 10 min. Uniswap V2 Swap ...")
OTHER = Entry("grimoire://g/episode/e2", "episodes", "ERC20 Transfer of 5 USDC")


def _prices(*values: float) -> tuple[PricePoint, ...]:
    return tuple(PricePoint(1000.0 + 10 * i, v) for i, v in enumerate(values))


def test_a_crash_predicts_continuation_and_cites_what_bears_on_it() -> None:
    d = decide(Situation("ETH/USD", _prices(2000, 1900, 1850), (WARNING, CRASH_NOTE, OTHER), 2))
    (p,) = d.predictions
    assert p.direction == "down" and 0.5 < p.confidence <= 0.8 and p.horizon_ticks == 5
    assert d.referenced == (WARNING.uri, CRASH_NOTE.uri)
    assert [a.kind for a in d.actions] == ["hold"]
    assert "1 warning(s)" in d.analysis and "2 escalated" in d.analysis


def test_calm_predicts_flat_and_no_history_asks_for_it() -> None:
    calm = decide(Situation("ETH/USD", _prices(2000, 2001), ()))
    assert calm.predictions[0].direction == "flat"
    blind = decide(Situation("ETH/USD", (), ()))
    assert blind.predictions == () and blind.missing_context == ("price feed history",)


@given(st.lists(st.floats(1.0, 1e5), max_size=20))
def test_the_offline_decision_round_trips_through_the_model_schema(values: list[float]) -> None:
    """What the offline tier says would be accepted from a model, byte for byte."""
    decision = decide(Situation("ETH/USD", _prices(*values), (WARNING,)))
    data = decision_to_dict(decision)
    parsed = parse_decision(json.dumps(data))
    assert isinstance(parsed, Decision) and parsed == dataclasses.replace(decision,
                                                                         attribution=())

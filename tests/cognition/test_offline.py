"""The offline tier: deterministic, schema-true decisions from what the workspace holds."""

from __future__ import annotations

import dataclasses
import json

import pytest
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


def test_with_nothing_learned_the_prior_is_wide_and_cites_what_bears_on_it() -> None:
    d = decide(Situation("ETH/USD", _prices(2000, 1900, 1850), (WARNING, CRASH_NOTE, OTHER), 2))
    (p,) = d.predictions
    assert d.outlook is not None and sum(d.outlook) == pytest.approx(1.0, abs=1e-5)
    down, flat, up = d.outlook
    # a tape this wild makes "flat" the least likely class and up and down even
    assert flat < 0.05 and down == pytest.approx(up)
    # the tie goes to the trailing move's sign, said with the tie's honest probability
    assert p.direction == "down" and p.confidence == pytest.approx(down, abs=1e-3)
    assert p.confidence < 0.5
    assert p.horizon_ticks == 5 and p.magnitude == 0.0
    assert d.attribution == () and "no-change prior" in d.analysis
    assert d.referenced == (WARNING.uri, CRASH_NOTE.uri)
    assert [a.kind for a in d.actions] == ["hold"]
    assert "1 warning(s)" in d.analysis and "2 escalated" in d.analysis


def test_the_prior_follows_the_tapes_spread() -> None:
    still = decide(Situation("ETH/USD", _prices(*(2000 + (i % 2) * 0.01 for i in range(30))),
                             ()))
    assert still.predictions[0].direction == "flat" and still.predictions[0].confidence > 0.9
    wide = decide(Situation("ETH/USD", _prices(*(2000 * (1 + 0.01 * (-1) ** i)
                                                 for i in range(30))), ()))
    assert wide.outlook is not None and wide.outlook[1] < 0.1
    assert wide.predictions[0].direction in ("up", "down")
    assert wide.predictions[0].confidence < 0.5


def test_no_history_asks_for_it() -> None:
    blind = decide(Situation("ETH/USD", (), ()))
    assert blind.predictions == () and blind.missing_context == ("price feed history",)
    assert [a.kind for a in blind.actions] == ["hold"]


@given(st.lists(st.floats(1.0, 1e5), max_size=20))
def test_the_offline_decision_round_trips_through_the_model_schema(values: list[float]) -> None:
    """What the offline tier says would be accepted from a model, byte for byte."""
    decision = decide(Situation("ETH/USD", _prices(*values), (WARNING,)))
    data = decision_to_dict(decision)
    parsed = parse_decision(json.dumps(data))
    assert isinstance(parsed, Decision) and parsed == dataclasses.replace(
        decision, attribution=(), outlook=None, skipped_knowledge=0, outlooks=None)

"""Query numbers: the orders, thresholds and event anchors a query names (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.grimoire.query_numbers import Threshold, read_intent


@pytest.mark.parametrize(("query", "key", "descending"), [
    ("When did the ETH price feed last fall?", "time", True),
    ("the latest swap on the WETH/USDC pool", "time", True),
    ("the most recent liquidation", "time", True),
    ("the first USDC borrow", "time", False),
    ("our earliest trade", "time", False),
    ("the largest USDC borrow", "size", True),
    ("the biggest WETH sold for USDC", "size", True),
    ("the smallest WETH supply", "size", False),
    ("lowest answer of the ETH feed", "size", False),
])
def test_order_words(query: str, key: str, descending: bool) -> None:
    order = read_intent(query).order
    assert order is not None and (order.key, order.descending) == (key, descending)
    assert query.lower()[order.at:].startswith(order.phrase)


@pytest.mark.parametrize("query", [
    "swaps last week", "in the last 3 days", "what did we do last month",
    "over the past day", "oracle updates", "a big swap",
])
def test_calendar_words_and_plain_queries_name_no_order(query: str) -> None:
    assert read_intent(query).order is None


@pytest.mark.parametrize(("query", "op", "value", "unit", "direction"), [
    ("when did the ETH feed fall more than 2%?", ">", 2.0, "%", "down"),
    ("the oracle dropped by over 1.5 percent", ">", 1.5, "%", "down"),
    ("days the price rose at least 3%", ">=", 3.0, "%", "up"),
    ("moves of more than 4%", ">", 4.0, "%", None),
    ("transfers of more than 1,000 USDC", ">", 1000.0, "usdc", None),
    ("trades that lost over $0.10", ">", 0.1, "usd", None),
    ("swaps under 2.5 WETH", "<", 2.5, "weth", None),
    ("borrows above 500", ">", 500.0, None, None),
])
def test_thresholds(query: str, op: str, value: float, unit: str | None,
                    direction: str | None) -> None:
    threshold = read_intent(query).threshold
    assert threshold is not None
    assert (threshold.op, threshold.value, threshold.unit, threshold.direction) == (
        op, value, unit, direction)


def test_a_duration_is_not_a_threshold() -> None:
    assert read_intent("price -2% over 10 min").threshold is None
    assert read_intent("swaps over 3 days").threshold is None


def test_a_move_threshold_compares_in_its_direction() -> None:
    down = Threshold(">", 2.0, "%", "down", "more than 2%")
    assert down.passes(-2.5) and not down.passes(-1.0) and not down.passes(3.0)
    up = Threshold(">=", 2.0, "%", "up", "at least 2%")
    assert up.passes(2.0) and not up.passes(-3.0)
    either = Threshold(">", 2.0, "%", None, "more than 2%")
    assert either.passes(-3.0) and either.passes(3.0) and not either.passes(1.0)
    below = Threshold("<", 10.0, "usdc", None, "under 10 usdc")
    assert below.passes(9.5) and not below.passes(10.0)


@pytest.mark.parametrize(("query", "after", "last", "words", "rest"), [
    ("what happened in the WETH/USDC pool after the last liquidation?", True, True,
     "liquidation", "what happened in the WETH/USDC pool?"),
    ("swaps before the crash", False, True, "crash", "swaps"),
    ("price updates since the last oracle update", True, True, "oracle update",
     "price updates"),
    ("liquidity added before the first liquidation, in the pool", False, False,
     "liquidation", "liquidity added, in the pool"),
])
def test_event_anchors(query: str, after: bool, last: bool, words: str, rest: str) -> None:
    intent = read_intent(query)
    assert intent.anchor is not None
    assert (intent.anchor.after, intent.anchor.last, intent.anchor.words) == (after, last, words)
    assert intent.rest == rest


@pytest.mark.parametrize("query", [
    "what happened since 2023", "swaps before May 3", "after 3 days",
    "before that", "since then", "what happened in the pool",
    # Theta's query: "after" without "the" names no definite event
    "market falling: price feed 0xfeed; after oracle feed 0xfeed down in regime stationary, "
    "what the next minutes returned",
])
def test_calendar_anchors_are_not_events(query: str) -> None:
    intent = read_intent(query)
    assert intent.anchor is None and intent.rest == query


@given(st.text(max_size=200))
def test_any_text_reads_without_error(query: str) -> None:
    intent = read_intent(query)
    assert isinstance(intent.rest, str)

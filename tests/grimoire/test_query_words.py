"""Query words: content words and the calendar windows a query names (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.grimoire.query_words import (
    asks_why,
    content_words,
    mentions_time,
    time_window,
    topic_text,
)

# Wednesday 2024-03-13 15:30 UTC
NOW = datetime(2024, 3, 13, 15, 30, tzinfo=UTC).timestamp()


def at(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()  # type: ignore[misc]


def test_content_words_drop_function_words_and_punctuation() -> None:
    assert content_words("What happened to the WETH oracle?") == ["happened", "weth", "oracle"]
    assert content_words("What\u2019s the USDC/WETH price 0x8ad5?") == ["usdc", "weth", "price",
                                                                   "0x8ad5"]
    assert content_words("what is it, and how?") == []
    assert content_words("?!... --") == []


def test_the_embedded_text_keeps_content_tokens_as_written() -> None:
    assert topic_text("When did the ETH oracle last drop by over 1%?") == (
        "ETH oracle last drop 1%?")
    assert topic_text("What\u2019s Fahim's plan for the trip?") == "Fahim's plan trip?"
    assert topic_text("WETH/USDC pool after the last liquidation") == (
        "WETH/USDC pool last liquidation")
    assert topic_text("what is it?") == "what is it?"  # only function words: as asked
    # a golem's own actions are "our own": those words are kept
    assert topic_text("Which of our own trades lost money?") == "our own trades lost money?"


@given(st.text(max_size=80))
def test_the_embedded_text_is_never_empty_for_a_query_with_text(query: str) -> None:
    text = topic_text(query)
    assert set(text.split()) <= set(query.split()) or text == query
    assert bool(text.strip()) == bool(query.strip())


@pytest.mark.parametrize(("query", "since", "until"), [
    ("what happened yesterday", at(2024, 3, 12), at(2024, 3, 13)),
    ("any liquidations today?", at(2024, 3, 13), NOW + 1),
    ("swaps last week", at(2024, 3, 4), at(2024, 3, 11)),
    ("swaps this week", at(2024, 3, 11), NOW + 1),
    ("the crash last month", at(2024, 2, 1), at(2024, 3, 1)),
    ("fees last year", at(2023, 1, 1), at(2024, 1, 1)),
    ("what broke 3 days ago", at(2024, 3, 10), at(2024, 3, 11)),
    ("oracle updates in the last 2 days", NOW - 2 * 86400, NOW + 1),
    ("what did the pool do in May 2023", at(2023, 5, 1), at(2023, 6, 1)),
    ("what did the pool do in May", at(2023, 5, 1), at(2023, 6, 1)),  # the latest May
    ("in March", at(2024, 3, 1), at(2024, 4, 1)),
    ("what happened on 2 March", at(2024, 3, 2), at(2024, 3, 3)),
    ("what happened on March 2nd, 2023", at(2023, 3, 2), at(2023, 3, 3)),
    ("on the 20th of December", at(2023, 12, 20), at(2023, 12, 21)),  # not yet this year
    ("trades in 2023", at(2023, 1, 1), at(2024, 1, 1)),
])
def test_calendar_expressions_become_windows_before_the_reference_time(
        query: str, since: float, until: float) -> None:
    window = time_window(query, NOW)
    assert window is not None, query
    assert (window.since, window.until) == (pytest.approx(since), pytest.approx(until))
    assert window.contains(since) and not window.contains(until)


@pytest.mark.parametrize("query", [
    "what happened to the oracle", "on 31 February", "in 2099", "may I ask about fees",
    "the day after", "in the pool",
])
def test_what_is_not_a_calendar_expression_is_ignored(query: str) -> None:
    assert time_window(query, NOW) is None


def test_time_words_that_name_no_window_are_noticed() -> None:
    assert mentions_time("on 31 February") and mentions_time("sometime last spring")
    assert not mentions_time("what happened to the oracle")


@given(st.text(max_size=80), st.floats(0, 4e9))
def test_any_text_at_any_time_never_raises(query: str, now: float) -> None:
    window = time_window(query, now)
    assert window is None or window.since < window.until


def test_why_questions_are_recognised() -> None:
    assert asks_why("Why did the pool drain?")
    assert asks_why("what led to the liquidation cascade")
    assert asks_why("What caused the oracle to go stale?")
    assert not asks_why("what happened to the pool")
    assert not asks_why("whyte's pool")  # a word, not the question

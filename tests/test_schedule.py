"""Slot planning: overrun skipping and failure backoff (pure logic, property-tested)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.runtime.duration import format_duration, parse_duration
from golem.runtime.schedule import backoff_delay, plan_next, slot_time


def test_on_time_tick_takes_the_next_slot() -> None:
    plan = plan_next(anchor=100.0, interval=10.0, index=3, finished_at=131.0)
    assert (plan.index, plan.at, plan.skipped_overrun, plan.skipped_backoff) == (4, 140.0, 0, 0)


def test_finishing_exactly_on_the_next_slot_is_not_an_overrun() -> None:
    plan = plan_next(anchor=0.0, interval=10.0, index=0, finished_at=10.0)
    assert (plan.index, plan.skipped_overrun) == (1, 0)


def test_overrun_skips_missed_slots_and_counts_them() -> None:
    plan = plan_next(anchor=0.0, interval=10.0, index=0, finished_at=25.0)
    assert (plan.index, plan.at, plan.skipped_overrun) == (3, 30.0, 2)


def test_backoff_pushes_past_the_delay_and_counts_separately() -> None:
    plan = plan_next(anchor=0.0, interval=10.0, index=0, finished_at=1.0, delay=20.0)
    assert (plan.index, plan.skipped_overrun, plan.skipped_backoff) == (3, 0, 2)


def test_backoff_delay_doubles_from_the_second_failure_and_caps() -> None:
    delays = [backoff_delay(n, interval=10.0, maximum=60.0) for n in range(7)]
    assert delays == [0.0, 0.0, 20.0, 40.0, 60.0, 60.0, 60.0]
    assert backoff_delay(10, interval=10.0, maximum=0.0) == 0.0
    assert backoff_delay(10_000, interval=10.0, maximum=1e9) == 1e9


@given(
    anchor=st.floats(0, 2e9),
    interval=st.floats(0.01, 86400),
    index=st.integers(0, 10**6),
    took=st.floats(0, 1e6),
    delay=st.floats(0, 1e6),
)
def test_plan_properties(anchor: float, interval: float, index: int, took: float,
                         delay: float) -> None:
    start = slot_time(anchor, interval, index)
    finished = start + took
    plan = plan_next(anchor, interval, index, finished, delay)
    assert plan.index > index
    assert plan.index == index + 1 + plan.skipped_overrun + plan.skipped_backoff
    # never overlaps: the next tick starts no earlier than the last one finished
    tolerance = 1e-6 * max(1.0, abs(finished))
    assert plan.at >= finished - tolerance
    assert plan.at >= finished + delay - tolerance
    # never skips more than it must: the slot before the chosen one was too early
    if plan.index > index + 1:
        previous = slot_time(anchor, interval, plan.index - 1)
        assert previous < finished + delay + tolerance


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("2h", 7200), ("1h30m", 5400), ("30d", 2_592_000), ("500ms", 0.5),
     ("1w", 604800), (" 2H ", 7200), ("1.5h", 5400)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "2", "h", "2x", "-5s", "0s", "1h 30", "1.h"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@given(st.integers(1, 10**8))
def test_format_duration_round_trips_whole_units(seconds: int) -> None:
    shown = format_duration(seconds)
    parsed = parse_duration(shown)
    assert parsed <= seconds
    assert seconds - parsed < 3600  # at most the two largest units are shown

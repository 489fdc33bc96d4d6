"""Market context phrases: size against the channel's belief, recent move of the feeds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from golem.perception.market import (
    WINDOW_S,
    PricePoint,
    answer_change_phrase,
    context_line,
    move_phrase,
    record,
    size_phrase,
)


def _track(prices: list[float], step: float = 10.0) -> tuple[PricePoint, ...]:
    points: tuple[PricePoint, ...] = ()
    for i, price in enumerate(prices):
        points = record(points, PricePoint(1000.0 + step * i, price))
    return points


def test_moves_are_labelled_over_the_window() -> None:
    assert move_phrase(_track([2000.0])) is None
    crash = move_phrase(_track([2000.0 * 0.99**i for i in range(30)]))
    assert crash is not None and crash.startswith("market crashing: price -25.3%")
    assert "over 5 min" in crash
    assert move_phrase(_track([2000.0, 2010.0])) == "market steady: price +0.5% over 1 min"
    assert move_phrase(_track([2000.0, 1960.0])).startswith("market falling")  # type: ignore[union-attr]
    assert move_phrase(_track([2000.0, 2040.0])).startswith("market rising")  # type: ignore[union-attr]
    assert move_phrase(_track([2000.0, 2200.0])).startswith("market surging")  # type: ignore[union-attr]


def test_old_points_leave_the_window() -> None:
    # a crash 20 minutes ago, flat since: the window only sees the flat part
    points = _track([3000.0, 2000.0] + [2000.0] * 120)
    assert points[-1].time - points[0].time <= WINDOW_S
    assert move_phrase(points) == "market steady: price +0.0% over 10 min"


@given(st.lists(st.floats(1.0, 1e6), min_size=2, max_size=200))
def test_window_keeps_one_point_at_or_before_its_start(prices: list[float]) -> None:
    points = _track(prices, step=37.0)
    assert points[-1].price == prices[-1]
    assert len(points) >= 2
    assert points[1].time > points[-1].time - WINDOW_S


def test_size_phrase_and_context_line() -> None:
    assert size_phrase("swap", 0.5) is None  # about 3x: ordinary enough
    assert size_phrase("swap", None) is None
    assert size_phrase("swap", 1.0) == "large swap (10x this contract's usual size)"
    assert size_phrase("swap", 2.0).startswith("very large swap (100x")  # type: ignore[union-attr]
    assert size_phrase("swap", 1e6) is None  # absurd errors say nothing
    assert context_line(None, None) == ""
    assert context_line("large swap (x)", "market crashing: y") == \
        "Large swap (x); market crashing: y. "
    assert context_line(None, "market steady: z") == "Market steady: z. "


def test_a_feed_answer_says_how_it_moved_from_the_previous_one() -> None:
    assert answer_change_phrase(None, 2000.0) is None
    assert answer_change_phrase(0.0, 2000.0) is None
    assert answer_change_phrase(2000.0, 1954.0) == "answer down 2.3% from the previous one"
    assert answer_change_phrase(2000.0, 2030.0) == "answer up 1.5% from the previous one"
    assert answer_change_phrase(2000.0, 2000.5) == "answer unchanged from the previous one"
    assert context_line(None, "market falling: y", "answer down 2.3% from the previous one") \
        == "Answer down 2.3% from the previous one; market falling: y. "

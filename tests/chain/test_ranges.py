"""Chunked eth_getLogs planning: exact coverage, bounded spans, halving on refusal."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.chain.ranges import LogRangePlanner, RangeRefusedError


def drain(planner: LogRangePlanner, cursor: int, target: int, limit: int) -> list[tuple[int, int]]:
    """Fetch [cursor, target] from a node that refuses ranges longer than `limit` blocks."""
    served: list[tuple[int, int]] = []
    while (rng := planner.next_range(cursor, target)) is not None:
        length = rng[1] - rng[0] + 1
        assert rng[0] == cursor and 1 <= length <= planner.max_span
        if length > limit:
            before = planner.span
            planner.on_refused()
            assert planner.span == max(planner.min_span, min(before, length) // 2)
            continue
        planner.on_success()
        assert planner.span <= planner.max_span
        served.append(rng)
        cursor = rng[1] + 1
    return served


def assert_exact_cover(served: list[tuple[int, int]], cursor: int, target: int) -> None:
    blocks = [b for lo, hi in served for b in range(lo, hi + 1)]
    assert blocks == list(range(cursor, target + 1))


@given(max_span=st.integers(1, 300), cursor=st.integers(0, 10_000), length=st.integers(0, 3000))
def test_success_covers_the_range_exactly_once(max_span: int, cursor: int, length: int) -> None:
    target = cursor + length - 1
    planner = LogRangePlanner(max_span)
    served = drain(planner, cursor, target, limit=max_span)
    assert_exact_cover(served, cursor, target)
    assert all(hi - lo + 1 == max_span for lo, hi in served[:-1])


@given(
    max_span=st.integers(1, 500),
    min_span=st.integers(1, 8),
    limit=st.integers(1, 600),
    cursor=st.integers(0, 10_000),
    length=st.integers(0, 2000),
    grow_after=st.integers(1, 5),
)
def test_refusals_halve_and_coverage_stays_exact(
    max_span: int, min_span: int, limit: int, cursor: int, length: int, grow_after: int
) -> None:
    min_span = min(min_span, max_span)
    limit = max(limit, min_span)  # a node that accepts at least the minimum span
    target = cursor + length - 1
    planner = LogRangePlanner(max_span, min_span, grow_after=grow_after)
    served = drain(planner, cursor, target, limit)
    assert_exact_cover(served, cursor, target)


def test_refusal_at_min_span_is_a_real_error() -> None:
    planner = LogRangePlanner(max_span=8, min_span=2)
    assert planner.next_range(100, 1000) == (100, 107)
    planner.on_refused()
    assert planner.next_range(100, 1000) == (100, 103)
    planner.on_refused()
    assert planner.next_range(100, 1000) == (100, 101)
    with pytest.raises(RangeRefusedError, match=r"blocks 100\.\.101 at the minimum span of 2"):
        planner.on_refused()


def test_short_tail_range_halves_from_what_was_asked() -> None:
    planner = LogRangePlanner(max_span=1000)
    assert planner.next_range(0, 5) == (0, 5)
    planner.on_refused()
    assert planner.span == 3
    assert planner.next_range(0, 5) == (0, 2)


def test_span_grows_back_after_successes() -> None:
    planner = LogRangePlanner(max_span=64, grow_after=2)
    planner.next_range(0, 10_000)
    planner.on_refused()
    planner.next_range(0, 10_000)
    planner.on_refused()
    assert planner.span == 16
    planner.on_success()
    assert planner.span == 16
    planner.on_success()
    assert planner.span == 32
    for _ in range(10):
        planner.on_success()
    assert planner.span == 64


def test_nothing_to_fetch_and_bad_arguments() -> None:
    assert LogRangePlanner(10).next_range(11, 10) is None
    for args in [(0,), (4, 5), (4, 0)]:
        with pytest.raises(ValueError):
            LogRangePlanner(*args)
    with pytest.raises(ValueError):
        LogRangePlanner(4, grow_after=0)

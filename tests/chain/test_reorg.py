"""Reorg detection: random fork sequences against a simulated canonical chain."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.chain.reorg import (
    Backwards,
    BlockWindow,
    Continue,
    DeepReorgError,
    Header,
    Reorg,
    ReorgVerdict,
    TooDeep,
    confirmed_head,
)
from golem.errors import StateError


class Node:
    """A canonical chain that mines and reorgs; every branch gets fresh hashes."""

    def __init__(self) -> None:
        self.chain = [Header(0, "0x" + "00" * 8, "0x" + "ff" * 8)]
        self.branch = 0

    @property
    def head(self) -> int:
        return self.chain[-1].number

    def mine(self, k: int) -> None:
        for _ in range(k):
            n = len(self.chain)
            self.chain.append(Header(n, f"0x{self.branch:08x}{n:08x}", self.chain[-1].hash))

    def reorg(self, depth: int, extra: int) -> int:
        """Replace the top `depth` blocks (genesis stays) and mine `extra` more; the fork point."""
        depth = min(depth, self.head)
        keep = self.head - depth
        del self.chain[keep + 1:]
        self.branch += 1
        self.mine(depth + extra)
        return keep

    def headers(self, first: int, last: int) -> list[Header]:
        return self.chain[first:last + 1]


def capture(
    window: BlockWindow, node: Node, confirmations: int
) -> tuple[BlockWindow, list[ReorgVerdict]]:
    """Run the documented protocol until a round ends in Continue."""
    verdicts: list[ReorgVerdict] = []
    while True:
        target = confirmed_head(node.head, confirmations)
        headers = node.headers(window.fetch_start(0), target)
        verdict = window.check(headers)
        verdicts.append(verdict)
        if isinstance(verdict, Continue):
            # Continue never hides a hash change.
            assert all(h == node.chain[h.number] for h in window.headers)
        window = window.apply(verdict, headers)
        if isinstance(verdict, Continue):
            return window, verdicts
        assert len(verdicts) < 3, verdicts


def canonical_tail(node: Node, window: BlockWindow, confirmations: int) -> tuple[Header, ...]:
    target = confirmed_head(node.head, confirmations)
    return tuple(node.chain[max(0, target - window.size + 1):target + 1])


STEP = st.one_of(
    st.tuples(st.just("mine"), st.integers(1, 5), st.just(0)),
    st.tuples(st.just("reorg"), st.integers(1, 12), st.integers(0, 4)),
)


@given(size=st.integers(1, 6), confirmations=st.integers(0, 3), steps=st.lists(STEP, max_size=25))
def test_random_fork_sequences(
    size: int, confirmations: int, steps: list[tuple[str, int, int]]
) -> None:
    node = Node()
    node.mine(confirmations)
    window, _ = capture(BlockWindow(size), node, confirmations)
    for kind, n, extra in steps:
        start, cursor = window.start, window.cursor
        assert start is not None and cursor is not None
        if kind == "mine":
            node.mine(n)
            fork = cursor
        else:
            fork = node.reorg(n, extra)
        if fork < start:
            target = confirmed_head(node.head, confirmations)
            verdict = window.check(node.headers(start, target))
            assert verdict == TooDeep(depth_at_least=cursor - start + 1)
            with pytest.raises(DeepReorgError, match="capture halted"):
                window.apply(verdict, [])
            return
        window, verdicts = capture(window, node, confirmations)
        if fork >= cursor:
            assert len(verdicts) == 1
        else:
            first = verdicts[0]
            assert isinstance(first, Reorg)
            assert first.common_ancestor == fork
            assert first.depth == cursor - fork
            assert [h.number for h in first.dropped_blocks] == list(range(fork + 1, cursor + 1))
        assert window.headers == canonical_tail(node, window, confirmations)


@given(size=st.integers(1, 8), confirmations=st.integers(0, 4), depth=st.integers(1, 20))
def test_reorg_depth_against_window(size: int, confirmations: int, depth: int) -> None:
    node = Node()
    node.mine(size + confirmations + 25)
    window, _ = capture(BlockWindow(size), node, confirmations)
    cursor = confirmed_head(node.head, confirmations)
    node.reorg(depth, 0)
    target = confirmed_head(node.head, confirmations)
    verdict = window.check(node.headers(window.fetch_start(0), target))
    if depth <= confirmations:
        assert verdict == Continue(capture_to=cursor)
    elif depth - confirmations <= size - 1:
        assert isinstance(verdict, Reorg)
        assert verdict.depth == depth - confirmations
        assert verdict.common_ancestor == node.head - depth
    else:  # the fork point is below the window: deeper than we can verify
        assert verdict == TooDeep(depth_at_least=size)


@given(size=st.integers(2, 6), mined=st.integers(0, 6), data=st.data())
def test_broken_parent_link_is_a_reorg_signal(size: int, mined: int, data: st.DataObject) -> None:
    node = Node()
    node.mine(size + 3)
    window, _ = capture(BlockWindow(size), node, 0)
    start, cursor = window.start, window.cursor
    assert start is not None and cursor is not None
    node.mine(mined)
    headers = node.headers(start, node.head)
    j = data.draw(st.integers(start + 1, node.head))
    bad = headers[j - start]
    headers[j - start] = Header(bad.number, bad.hash, "0x" + "ee" * 8)
    verdict = window.check(headers)
    trusted = j - 2
    if trusted >= cursor:
        assert verdict == Continue(capture_to=trusted)
    elif trusted >= start:
        assert isinstance(verdict, Reorg)
        assert verdict.common_ancestor == trusted
    else:
        assert isinstance(verdict, TooDeep)


def test_head_below_cursor_is_backwards_not_a_reorg() -> None:
    node = Node()
    node.mine(10)
    window, _ = capture(BlockWindow(4), node, 0)
    assert window.cursor == 10
    lagging = node.headers(7, 8)
    lagging[-1] = Header(8, "0x" + "ab" * 8, lagging[-2].hash)  # a lagging node on another fork
    verdict = window.check(lagging)
    assert verdict == Backwards(head=8, cursor=10)
    assert window.apply(verdict, lagging) is window
    assert window.check([]) == Backwards(head=6, cursor=10)


def test_headers_must_start_at_the_window_and_be_contiguous() -> None:
    node = Node()
    node.mine(10)
    window, _ = capture(BlockWindow(4), node, 0)
    with pytest.raises(ValueError, match="window start 7"):
        window.check(node.headers(8, 10))
    with pytest.raises(ValueError, match="not contiguous"):
        window.check([*node.headers(7, 8), *node.headers(10, 10)])
    with pytest.raises(ValueError, match="no headers"):
        BlockWindow(4).check([])


def test_empty_window_starts_at_the_first_block() -> None:
    node = Node()
    node.mine(20)
    window = BlockWindow(5)
    assert window.fetch_start(12) == 12
    verdict = window.check(node.headers(12, 18))
    assert verdict == Continue(capture_to=18)
    window = window.apply(verdict, node.headers(12, 18))
    assert window.headers == tuple(node.chain[14:19])
    assert (window.start, window.cursor) == (14, 18)


def test_confirmed_head() -> None:
    assert confirmed_head(100, 12) == 88
    assert confirmed_head(100, 0) == 100
    assert confirmed_head(5, 12) == -1
    with pytest.raises(ValueError):
        confirmed_head(5, -1)


@given(size=st.integers(1, 6), mined=st.integers(0, 12))
def test_window_round_trips_through_json(size: int, mined: int) -> None:
    node = Node()
    node.mine(mined)
    window, _ = capture(BlockWindow(size), node, 0)
    restored = BlockWindow.from_dict(json.loads(json.dumps(window.to_dict())))
    assert restored == window


@pytest.mark.parametrize("record", [
    {},
    {"size": "4", "headers": []},
    {"size": 4, "headers": [[1, "0xa"]]},
    {"size": 4, "headers": [[1, "0xa", 7]]},
    {"size": 1, "headers": [[1, "0xa", "0x0"], [2, "0xb", "0xa"]]},
    {"size": 4, "headers": [[1, "0xa", "0x0"], [2, "0xb", "0xWRONG"]]},
    {"size": 4, "headers": [[1, "0xa", "0x0"], [3, "0xb", "0xa"]]},
])
def test_malformed_stored_window_is_a_state_error(record: dict[str, object]) -> None:
    with pytest.raises(StateError, match="reorg window is malformed"):
        BlockWindow.from_dict(record)

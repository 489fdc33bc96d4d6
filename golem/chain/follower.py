"""Follow a chain's confirmed blocks safely: one capture round at a time.

A round reads the head, takes the blocks at least `confirmations` deep, checks
the stored reorg window against what the node reports now (reorg.BlockWindow),
and then either hands back the watched logs of the newly confirmed blocks with
the window to commit after them (`Captured`), or the rewind a reorg needs
(`Rewound`), or nothing (`Idle`: no new confirmed block, or the node's view is
not settled). The follower keeps nothing durable itself; the caller writes the
data, commits the window, then calls `accept`. A block hash commits to all of
its ancestors, so when the node's block at our cursor still has our hash the
stored window is taken as it is and only the new headers are fetched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from golem.chain.decoding import RawLog
from golem.chain.ranges import LogRangePlanner
from golem.chain.reader import ChainReader, LogRangeRefused
from golem.chain.reorg import (
    Backwards,
    BlockWindow,
    Continue,
    Header,
    Reorg,
    TooDeep,
    confirmed_head,
)
from golem.chain.watch import WatchList


@dataclass(frozen=True)
class Captured:
    """Logs of blocks first..last, all on the chain the window now records."""

    logs: tuple[RawLog, ...]
    first: int
    last: int
    head: int
    window: BlockWindow
    first_block: int


@dataclass(frozen=True)
class Rewound:
    """A reorg: delete what was captured above `common_ancestor`, commit `window`."""

    common_ancestor: int
    depth: int
    head: int
    window: BlockWindow
    first_block: int


@dataclass(frozen=True)
class Idle:
    head: int
    reason: str
    normal: bool = False  # the chain simply has nothing new (vs. a node that looks wrong)


Round = Captured | Rewound | Idle


class ChainFollower:
    def __init__(self, reader: ChainReader, watch: WatchList, *, window: BlockWindow,
                 first_block: int | None, confirmations: int, max_blocks: int,
                 max_log_span: int, max_logs: int = 10**9) -> None:
        self.reader = reader
        self.watch = watch
        self.window = window
        self.first_block = first_block  # None: start at the confirmed head of the first round
        self.confirmations = confirmations
        self.max_blocks = max_blocks
        self.max_logs = max_logs
        self.planner = LogRangePlanner(max_span=max_log_span)
        self.last_head: int | None = None

    @property
    def cursor(self) -> int | None:
        return self.window.cursor

    async def poll(self) -> Round:
        head = await self.reader.head_number()
        backwards = self.last_head is not None and head < self.last_head
        self.last_head = head
        fetched = await self._headers(head, backwards)
        if isinstance(fetched, Idle):
            return fetched
        first, headers = fetched
        cursor = self.window.cursor
        verdict = self.window.check(headers)
        match verdict:
            case Continue(capture_to=capture_to):
                lo = first if cursor is None else cursor + 1
                if capture_to < lo:
                    return Idle(head, "the node's headers do not link up yet")
                expect = {h.number: h.hash for h in headers}
                logs = await self._logs(lo, capture_to, expect)
                if any(expect.get(log.block_number) != log.block_hash for log in logs):
                    return Idle(head, "logs came from another branch; the chain moved")
                logs, capture_to = bound_logs(logs, capture_to, self.max_logs)
                return Captured(tuple(logs), lo, capture_to, head,
                                self.window.apply(Continue(capture_to), headers), first)
            case Reorg(common_ancestor=ancestor, depth=depth):
                return Rewound(ancestor, depth, head, self.window.apply(verdict, headers), first)
            case TooDeep():
                self.window.apply(verdict, headers)  # raises DeepReorgError
                raise AssertionError("unreachable")
            case Backwards(head=top_seen):
                return Idle(head, f"node reports block {top_seen} below our cursor {cursor}")

    async def _headers(self, head: int, backwards: bool) -> tuple[int, list[Header]] | Idle:
        """(first block of capture, headers to check) for this round, or why not now."""
        target = confirmed_head(head, self.confirmations)
        cursor = self.window.cursor
        if cursor is None:
            first = self.first_block if self.first_block is not None else max(target, 0)
            if target < first:
                return Idle(head, f"waiting for block {first} to be confirmed", normal=True)
            return first, await self.reader.headers(first, min(target, first + self.max_blocks - 1))
        first = self.first_block if self.first_block is not None else cursor + 1
        if head < cursor:
            return Idle(head, f"node head {head} is below our cursor {cursor} "
                              "(a lagging or faulty node); waiting")
        if target <= cursor:
            return (Idle(head, f"node head moved backwards to {head}") if backwards
                    else Idle(head, "no new confirmed block", normal=True))
        top = min(target, cursor + self.max_blocks)
        headers = await self.reader.headers(cursor, top)
        if headers[0].hash == self.window.headers[-1].hash:
            return first, [*self.window.headers[:-1], *headers]
        return first, await self.reader.headers(self.window.headers[0].number, top)

    async def _logs(self, lo: int, hi: int, expect: Mapping[int, str]) -> list[RawLog]:
        out: list[RawLog] = []
        cursor = lo
        while (span := self.planner.next_range(cursor, hi)) is not None:
            try:
                logs = await self.reader.get_logs(span[0], span[1], self.watch, expect)
            except LogRangeRefused:
                self.planner.on_refused()  # raises RangeRefusedError at the minimum span
                continue
            self.planner.on_success()
            out.extend(logs)
            cursor = span[1] + 1
        return out

    def accept(self, round_: Captured | Rewound) -> None:
        """The caller committed the round's data and window: make it the current state."""
        self.window = round_.window
        self.first_block = round_.first_block


def bound_logs(logs: list[RawLog], capture_to: int, max_logs: int) -> tuple[list[RawLog], int]:
    """Keep whole blocks, oldest first, while the count stays within `max_logs` (always
    at least the first block), so one tick's work is bounded during catch-up; the
    blocks left out are captured by the next rounds."""
    ordered = sorted(logs, key=lambda log: (log.block_number, log.log_index))
    if len(ordered) <= max_logs:
        return ordered, capture_to
    cut = ordered[max_logs].block_number  # the first block that does not fit whole
    if cut == ordered[0].block_number:
        cut += 1  # one block alone is over the bound: take it whole anyway
    return [log for log in ordered if log.block_number < cut], cut - 1

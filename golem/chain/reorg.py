"""Reorg detection over a window of captured block headers (pure: no I/O, no clock).

Gamma captures only confirmed blocks, but "confirmed" is a bet, not a proof: a
reorg deeper than the confirmation depth can still orphan blocks we captured.
`BlockWindow` keeps (number, hash, parent_hash) for the last `size` captured
blocks so that every round can compare them with what the node reports now.

Capture-loop protocol (one round, the adapter's side):

1. `head = eth_blockNumber`; `target = confirmed_head(head, confirmations)`.
2. Fetch headers for `[window.fetch_start(first_block), target]` in ascending
   order (`fetch_start` is the window's lowest block, or `first_block`, the
   configured start, while the window is empty; with an empty window and
   `target < first_block` there is nothing to check yet: wait for the head).
3. `verdict = window.check(headers)`, then:
   - `Continue(capture_to)`: fetch logs for `[window.cursor + 1, capture_to]`
     (chunked by `LogRangePlanner`). Drop the round if any log's `blockHash`
     differs from the header hash of its block (the chain moved under us; the
     next round sees it). Write the episodes, then in one SQLite transaction
     commit `window.apply(verdict, headers)` (its `to_dict()`) together with
     the cursor `capture_to`. Data first, cursor after.
   - `Reorg(common_ancestor, depth, dropped)`: delete episodes with
     `block_number > common_ancestor`, then commit `window.apply(verdict,
     headers)` and the cursor `common_ancestor` in one transaction, emit
     `chain:reorg` with `depth`, and start the next round at once: it
     re-fetches, gets `Continue` (or a deeper `Reorg` if the node moved again)
     and re-captures. Episode ids come from (chain id, block hash, log index),
     so a block captured twice never duplicates.
   - `TooDeep(depth_at_least)`: halt capture with a loud error
     (`window.apply` raises `DeepReorgError`); history is never rewritten
     silently past the window.
   - `Backwards(head)`: the node reports a head below our cursor. A faulty or
     lagging node, not progress and not a reorg: write nothing, back off, retry
     (or switch nodes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from golem.errors import EXIT_SOFTWARE, GolemError, StateError


class DeepReorgError(GolemError):
    """A reorg reached below the reorg window: capture halts instead of guessing."""

    exit_code = EXIT_SOFTWARE


@dataclass(frozen=True, slots=True)
class Header:
    """The three fields of a block header that reorg detection needs."""

    number: int
    hash: str
    parent_hash: str


@dataclass(frozen=True, slots=True)
class Continue:
    """Stored hashes match: capture blocks up to `capture_to` (may equal the cursor)."""

    capture_to: int


@dataclass(frozen=True, slots=True)
class Reorg:
    """Blocks above `common_ancestor` are orphaned: delete and re-capture them."""

    common_ancestor: int
    depth: int
    dropped_blocks: tuple[Header, ...]


@dataclass(frozen=True, slots=True)
class TooDeep:
    """No stored block still matches: the reorg is deeper than the window."""

    depth_at_least: int


@dataclass(frozen=True, slots=True)
class Backwards:
    """The node's head is below our cursor: a faulty node, not progress."""

    head: int
    cursor: int


ReorgVerdict = Continue | Reorg | TooDeep | Backwards


def confirmed_head(head_number: int, confirmations: int) -> int:
    """Highest block at least `confirmations` deep (head itself is depth 0); -1 if none."""
    if head_number < 0 or confirmations < 0:
        raise ValueError("head_number and confirmations must be >= 0")
    return max(head_number - confirmations, -1)


def _check_contiguous(headers: Sequence[Header]) -> None:
    for prev, cur in pairwise(headers):
        if cur.number != prev.number + 1:
            raise ValueError(f"headers not contiguous at block {cur.number}")


@dataclass(frozen=True, slots=True)
class BlockWindow:
    """The last `size` captured headers, contiguous and parent-linked, oldest first."""

    size: int
    headers: tuple[Header, ...] = ()

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError("window size must be >= 1")
        if len(self.headers) > self.size:
            raise ValueError("more headers than the window size")
        _check_contiguous(self.headers)
        for prev, cur in pairwise(self.headers):
            if cur.parent_hash != prev.hash:
                raise ValueError(f"stored headers not parent-linked at block {cur.number}")

    @property
    def cursor(self) -> int | None:
        """Highest captured block, or None before the first capture."""
        return self.headers[-1].number if self.headers else None

    @property
    def start(self) -> int | None:
        """Lowest block still held, or None when empty."""
        return self.headers[0].number if self.headers else None

    def fetch_start(self, first_block: int) -> int:
        """First block whose header the next round must fetch."""
        return self.headers[0].number if self.headers else first_block

    def check(self, new_headers: Sequence[Header]) -> ReorgVerdict:
        """Compare what the node reports now for [start, target] with what we stored.

        A header that does not link to the one before it (parent_hash mismatch)
        means one of the two is stale; neither is trusted this round, so a break
        at block j trusts the node's view only up to j - 2.
        """
        new = tuple(new_headers)
        _check_contiguous(new)
        cursor = self.cursor
        if cursor is None:
            if not new:
                raise ValueError("no headers to check")
            return Continue(capture_to=self._trusted_top(new))
        if new and new[0].number != self.headers[0].number:
            raise ValueError(
                f"headers must start at the window start {self.headers[0].number}, "
                f"got {new[0].number}"
            )
        top = new[-1].number if new else self.headers[0].number - 1
        if top < cursor:
            return Backwards(head=top, cursor=cursor)
        trusted = self._trusted_top(new)
        if trusted >= cursor:
            return Continue(capture_to=trusted)
        if trusted < self.headers[0].number:
            return TooDeep(depth_at_least=cursor - self.headers[0].number + 1)
        dropped = tuple(h for h in self.headers if h.number > trusted)
        return Reorg(common_ancestor=trusted, depth=len(dropped), dropped_blocks=dropped)

    def _trusted_top(self, new: tuple[Header, ...]) -> int:
        """Highest block of `new` that matches storage and sits below any parent break."""
        stored = {h.number: h.hash for h in self.headers}
        top = new[0].number - 1
        for i, h in enumerate(new):
            if i > 0 and h.parent_hash != new[i - 1].hash:
                return min(top, h.number - 2)
            if h.number in stored and stored[h.number] != h.hash:
                return top
            top = h.number
        return top

    def apply(self, verdict: ReorgVerdict, new_headers: Sequence[Header]) -> BlockWindow:
        """The window after acting on `verdict` (from `check(new_headers)`)."""
        match verdict:
            case Continue(capture_to=capture_to):
                cursor = self.cursor
                fresh = tuple(
                    h for h in new_headers
                    if (cursor is None or h.number > cursor) and h.number <= capture_to
                )
                kept = (*self.headers, *fresh)[-self.size:]
                return BlockWindow(self.size, kept)
            case Reorg(common_ancestor=ancestor):
                return BlockWindow(
                    self.size, tuple(h for h in self.headers if h.number <= ancestor)
                )
            case TooDeep(depth_at_least=depth):
                raise DeepReorgError(
                    f"chain reorg at least {depth} blocks deep, beyond the reorg window "
                    f"of {self.size} blocks (captured up to block {self.cursor}); "
                    "capture halted: the captured history cannot be verified"
                )
            case Backwards():
                return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form, persisted with the capture cursor."""
        return {
            "size": self.size,
            "headers": [[h.number, h.hash, h.parent_hash] for h in self.headers],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BlockWindow:
        """Inverse of `to_dict`; a malformed record is a StateError, not a guess."""
        try:
            size = data["size"]
            rows = data["headers"]
            if not isinstance(size, int) or not isinstance(rows, list):
                raise TypeError("size must be an int and headers a list")
            headers = []
            for row in rows:
                number, block_hash, parent_hash = row
                if not (isinstance(number, int) and isinstance(block_hash, str)
                        and isinstance(parent_hash, str)):
                    raise TypeError(f"bad header row {row!r}")
                headers.append(Header(number, block_hash, parent_hash))
            return cls(size, tuple(headers))
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"stored reorg window is malformed: {exc}") from exc

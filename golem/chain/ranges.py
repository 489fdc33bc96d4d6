"""Chunked eth_getLogs planning: adapt the block span to what the node accepts (pure).

Nodes refuse `eth_getLogs` over too many blocks or with too many results, with
limits that differ per provider and per contract. The planner starts at
`max_span`, halves on each refusal, and grows back slowly after successes, so a
busy stretch of chain costs a few retries rather than a failed capture.

Use: `rng = planner.next_range(cursor, target)`; request it; then call
`on_success()` and move the cursor past `rng[1]`, or `on_refused()` and ask
again with the same cursor (a smaller range comes back).
"""

from __future__ import annotations

from golem.errors import EXIT_TEMPFAIL, GolemError


class RangeRefusedError(GolemError):
    """The node refused a log range already at the minimum span: a real error."""

    exit_code = EXIT_TEMPFAIL


class LogRangePlanner:
    """Picks contiguous block ranges of an adaptive span between min_span and max_span."""

    def __init__(self, max_span: int, min_span: int = 1, grow_after: int = 4) -> None:
        if min_span < 1 or max_span < min_span:
            raise ValueError("need 1 <= min_span <= max_span")
        if grow_after < 1:
            raise ValueError("grow_after must be >= 1")
        self.max_span = max_span
        self.min_span = min_span
        self.grow_after = grow_after
        self._span = max_span
        self._successes = 0
        self._last: tuple[int, int] | None = None

    @property
    def span(self) -> int:
        """Blocks the next full range will cover."""
        return self._span

    def next_range(self, cursor: int, target: int) -> tuple[int, int] | None:
        """Inclusive (from, to) starting at `cursor`, the first block not yet fetched.

        None once `cursor` is past `target`: nothing left to fetch.
        """
        if cursor > target:
            self._last = None
            return None
        self._last = (cursor, min(cursor + self._span - 1, target))
        return self._last

    def on_success(self) -> None:
        """The last range was served; after `grow_after` in a row the span doubles."""
        self._successes += 1
        if self._successes >= self.grow_after:
            self._successes = 0
            self._span = min(self.max_span, self._span * 2)

    def on_refused(self) -> None:
        """The node refused the last range: halve it, or raise at the minimum span."""
        self._successes = 0
        asked = self._span
        if self._last is not None:
            asked = min(asked, self._last[1] - self._last[0] + 1)
        if asked <= self.min_span:
            where = f"blocks {self._last[0]}..{self._last[1]}" if self._last else "a range"
            raise RangeRefusedError(
                f"node refused eth_getLogs for {where} at the minimum span of "
                f"{self.min_span} block(s); the node or the watch list is misconfigured"
            )
        self._span = max(self.min_span, asked // 2)

"""What Gamma hands Theta: the price tape and the escalation queue.

Wiring creates one `GammaHandoff` and gives it to both loops: Gamma's capture
writes it (`record_price`, `escalate`, `drop_orphaned`), Theta reads it
(`latest_feed`, `drain`). Theta imports this module only, never Gamma's
capture. Both loops run on the daemon's event loop thread, so the hand-off
needs no lock; it holds no I/O and no clock.

Invariants: the escalation queue keeps at most `queue_size` entries, the newest
(an older one is dropped when it is full); `drain` returns and removes them in
arrival order; an escalation of a block a reorg orphaned is never handed over.

`to_dict` / `restore` carry the tape and the queue across a restart (Gamma's capture
commits them with its cursor, in one transaction), so the first ticks after a start,
even after a kill, see what they would have seen had the golem not stopped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from golem.grimoire.records import Episode, Pad, Provenance, Source
from golem.perception.market import PricePoint, record


@dataclass(frozen=True)
class Escalation:
    """An event perception thinks Theta should look at. It carries the episode Gamma
    stored for it, so Theta's Governor needs no store read to show it (None only for
    escalations made up by tests and benchmarks)."""

    episode_id: str
    curiosity: float
    reason: str
    episode: Episode | None = None


class GammaHandoff:
    """The price tape (recent answers per price feed) and the escalation queue."""

    def __init__(self, queue_size: int) -> None:
        if queue_size < 1:
            raise ValueError(f"queue_size: must be at least 1, got {queue_size}")
        self._escalations: deque[Escalation] = deque(maxlen=queue_size)
        self._prices: dict[str, tuple[PricePoint, ...]] = {}

    # --- Gamma's side -----------------------------------------------------------------

    def record_price(self, feed: str, point: PricePoint) -> tuple[PricePoint, ...]:
        """Add a feed's answer to its tape (bounded by perception.market.record);
        returns the feed's tape."""
        tape = record(self._prices.get(feed, ()), point)
        self._prices[feed] = tape
        return tape

    def escalate(self, escalations: Iterable[Escalation]) -> None:
        """Queue escalations for Theta's next tick (the oldest drop when full)."""
        self._escalations.extend(escalations)

    def drop_orphaned(self, chain_id: int, common_ancestor: int) -> int:
        """Forget queued escalations of blocks a reorg orphaned (above ``common_ancestor``
        on ``chain_id``): Theta must not be shown an event the chain undid. Returns how
        many."""
        orphaned = [e for e in self._escalations if e.episode is not None
                    and e.episode.chain_id == chain_id
                    and e.episode.block_number > common_ancestor]
        for escalation in orphaned:
            self._escalations.remove(escalation)
        return len(orphaned)

    # --- both -------------------------------------------------------------------------

    def tape(self, feed: str) -> tuple[PricePoint, ...]:
        """A feed's recent answers, oldest first (empty for an unknown feed)."""
        return self._prices.get(feed, ())

    # --- Theta's side -----------------------------------------------------------------

    def latest_feed(self) -> tuple[str | None, tuple[PricePoint, ...]]:
        """The feed Theta reasons about (the first by address, so the choice is stable)
        and its tape; (None, ()) before any answer was seen."""
        if not self._prices:
            return None, ()
        feed = min(self._prices)
        return feed, self._prices[feed]

    # --- across a restart ----------------------------------------------------------

    def to_dict(self, pending: Iterable[Escalation] = ()) -> dict[str, Any]:
        """The tape and the queue (with `pending` escalations queued after it, as
        `escalate` would) as JSON-ready data."""
        queue = deque(self._escalations, maxlen=self._escalations.maxlen)
        queue.extend(pending)
        return {"prices": {feed: [[p.time, p.price] for p in tape]
                           for feed, tape in sorted(self._prices.items())},
                "escalations": [{"episode_id": e.episode_id, "curiosity": e.curiosity,
                                 "reason": e.reason,
                                 "episode": None if e.episode is None else asdict(e.episode)}
                                for e in queue]}

    def restore(self, data: Mapping[str, Any]) -> None:
        """Take back what `to_dict` returned (KeyError, TypeError, ValueError if it is not)."""
        prices = {str(feed): tuple(PricePoint(float(t), float(p)) for t, p in tape)
                  for feed, tape in data["prices"].items()}
        queue = [Escalation(str(e["episode_id"]), float(e["curiosity"]), str(e["reason"]),
                            None if e["episode"] is None else _episode(e["episode"]))
                 for e in data["escalations"]]
        self._prices = prices
        self._escalations.clear()
        self._escalations.extend(queue)

    def drain(self) -> list[Escalation]:
        """Every queued escalation, oldest first; the queue is empty afterwards."""
        taken = list(self._escalations)
        self._escalations.clear()
        return taken


def _episode(data: Mapping[str, Any]) -> Episode:
    fields = dict(data)
    prov = fields.pop("provenance")
    fields["provenance"] = Provenance(**{**prov, "source": Source(prov["source"])})
    fields["pad"] = Pad(**fields["pad"])
    fields["identifiers"] = tuple(fields["identifiers"])
    return Episode(**fields)

"""Facts that change mid-life in the simulated market (each off unless asked for).

A golem that learned how the market was must notice when it changes: these changes turn
what it learned into stale knowledge. Every time below counts golem seconds from the
market's first step (its birth), as ``PlantedDrops.swap_after_s`` does; 0 means never.

- ``stale_oracle_at_s`` / ``stale_oracle_for_s``: from birth + at for ``for`` seconds
  the ETH/USD feed stops answering (no ``update`` transaction, so no AnswerUpdated log)
  while the true price goes on moving (the arbitrageur keeps the pools near it; the
  lending market prices collateral at the stale answer). Then the feed resumes with the
  current price.
- ``drain_at_s`` / ``drain_share``: at birth + at the market's owner, the provider of
  most of the WETH/USDC V2 pool's liquidity, burns its shares (a real ``burn``: Transfer,
  Sync and Burn logs) and adds back what keeps the pool at ``1 - drain_share`` of its
  reserves (Transfer, Mint, Sync). If the owner holds less than ``drain_share`` of the
  pool by then, it removes all it holds; the recorded share is what left.
- ``honeypot_at_s``: HONEY trades normally from birth (its owner points the token's
  blocked destination at the zero address, and buyers' sells are real swaps) until
  birth + at, when the owner points it back at the HONEY/WETH pair: from then on every
  sell's transfer reverts. Off (0), HONEY is a honeypot from the start, as it always was.
- ``fee_change_at_s`` / ``fee_change_to``: at birth + at the market's owner sets the
  swap fee of the WETH/USDC V2 pool (pair state, 0.30% from deployment: golem.chain.fees)
  to ``fee_change_to``, a fraction (0.01: 1%) in whole basis points from 0 to 0.1 that
  differs from 0.003: a real ``setFee`` transaction, whose FeeAdjustment log carries the
  old and the new fee. Every actor quotes its swaps at the pool's current fee.

Each change that happened is a `FactChange` row (golem time, first block of the step,
kind, details), the ground truth beside the regime switches. Kinds: ``oracle_stale``
(feed, since, until), ``oracle_resumed`` (feed, silent_s), ``liquidity_drained`` (pool,
share, reserves before and after), ``honeypot_turned`` (token, pool, normal_since),
``fee_changed`` (pool, fee_before, fee_after: fractions, as the pool's ``fee()`` read
before and after the transaction).

``FactChanges`` decides when (pure: no chain, no clock, no random numbers, so the same
seed gives the same market); the simulator executes. ``describe`` is the stable string a
data dir records of its chain (a market without a fee change describes itself as it did
before the fee change existed, so its data dirs keep opening); ``state`` /
``restore_state`` carry what happened across a restart.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from golem.chain.fees import V2_FEE_PIPS, fee_pips

STALE, RESUMED, DRAINED, TURNED = ("oracle_stale", "oracle_resumed", "liquidity_drained",
                                   "honeypot_turned")
FEE = "fee_changed"
OPENED = "honeypot_opened"  # the set-up at birth: an action, not a change (not recorded)
KINDS = (STALE, RESUMED, DRAINED, TURNED, FEE)
_FEE_FIELDS = ("fee_change_at_s", "fee_change_to")


@dataclass(frozen=True)
class FactChange:
    """One change that happened: at ``golem_time``, from block ``block_number`` on."""

    golem_time: float
    block_number: int
    kind: str
    details: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"golem_time": self.golem_time, "block_number": self.block_number,
                "kind": self.kind, "details": self.details}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FactChange:
        """The inverse of `to_dict` (KeyError, TypeError, ValueError otherwise)."""
        details = data["details"]
        if not isinstance(details, dict):
            raise TypeError("details must be an object")
        return cls(float(data["golem_time"]), int(data["block_number"]), str(data["kind"]),
                   dict(details))


@dataclass
class FactChanges:
    """When each change happens (the parameters: see the module's docstring; ValueError
    for values out of range) and which already did. Pure: the simulator asks `due` at
    the start of every step, takes the actions, and reports each with `done`."""

    stale_oracle_at_s: float = 0.0
    stale_oracle_for_s: float = 0.0
    drain_at_s: float = 0.0
    drain_share: float = 0.8
    honeypot_at_s: float = 0.0
    fee_change_at_s: float = 0.0
    fee_change_to: float = 0.01
    happened: list[FactChange] = field(default_factory=list, init=False, repr=False)
    _born: float | None = field(default=None, init=False, repr=False)
    _done: set[str] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        if min(self.stale_oracle_at_s, self.stale_oracle_for_s, self.drain_at_s,
               self.honeypot_at_s, self.fee_change_at_s) < 0:
            raise ValueError("fact change times must be >= 0 (0: never)")
        if (self.stale_oracle_at_s > 0) != (self.stale_oracle_for_s > 0):
            raise ValueError("stale_oracle_at_s and stale_oracle_for_s go together")
        if not 0 < self.drain_share < 1:
            raise ValueError(f"drain_share must be in (0, 1), got {self.drain_share}")
        try:
            pips = fee_pips(self.fee_change_to)
        except ValueError as exc:
            raise ValueError(f"fee_change_to: {exc}") from None
        if pips == V2_FEE_PIPS and self.fee_change_at_s > 0:
            raise ValueError("fee_change_to must differ from the pool's fee (0.003)")

    @property
    def any(self) -> bool:
        """Whether any change is asked for (none: the market as it always was)."""
        return (self.stale_oracle_at_s > 0 or self.drain_at_s > 0 or self.honeypot_at_s > 0
                or self.fee_change_at_s > 0)

    @property
    def honeypot_turns(self) -> bool:
        return self.honeypot_at_s > 0

    def due(self, time: float) -> list[str]:
        """The actions the step at ``time`` must take, in this order (the first step is
        the birth): OPENED at birth when the honeypot turns later, then the kinds whose
        time has come and that did not happen yet. Call `done` for each one taken."""
        if self._born is None:
            self._born = time
        age = time - self._born
        out = []
        if self.honeypot_turns and OPENED not in self._done:
            out.append(OPENED)
        starts = {STALE: self.stale_oracle_at_s,
                  RESUMED: self.stale_oracle_at_s + self.stale_oracle_for_s,
                  DRAINED: self.drain_at_s, TURNED: self.honeypot_at_s,
                  FEE: self.fee_change_at_s}
        for kind in KINDS:
            at = starts[kind]
            if self.stale_oracle_at_s <= 0 and kind in (STALE, RESUMED):
                continue
            if at > 0 and age >= at and kind not in self._done:
                out.append(kind)
        return out

    def done(self, kind: str, change: FactChange | None = None) -> None:
        """Mark ``kind`` taken; ``change``: the ground-truth row it made (None for OPENED)."""
        self._done.add(kind)
        if change is not None:
            self.happened.append(change)

    def oracle_silent(self, time: float) -> bool:
        """Whether the feed stays silent at ``time`` (inside the stale window)."""
        if self._born is None or self.stale_oracle_at_s <= 0:
            return False
        age = time - self._born
        return self.stale_oracle_at_s <= age < self.stale_oracle_at_s + self.stale_oracle_for_s

    def at(self, after_s: float) -> float:
        """The golem time ``after_s`` seconds after birth (birth must have happened)."""
        assert self._born is not None
        return self._born + after_s

    @property
    def fee_change_pips(self) -> int:
        """The fee the pool is set to, in pips (golem.chain.fees)."""
        return fee_pips(self.fee_change_to)

    def describe(self) -> str:
        """The parameters, one stable string (what a data dir records of its chain); the
        fee change's only when it is asked for."""
        skip = () if self.fee_change_at_s > 0 else _FEE_FIELDS
        return ",".join(f"{f.name}:{getattr(self, f.name)}" for f in fields(self)
                        if f.init and f.name not in skip)

    def state(self) -> dict[str, Any]:
        """What the next steps depend on, and what happened, as JSON-ready data."""
        return {"born": self._born, "done": sorted(self._done),
                "happened": [c.to_dict() for c in self.happened]}

    def restore_state(self, state: dict[str, Any]) -> None:
        """Take back what ``state`` returned (KeyError, TypeError, ValueError otherwise)."""
        self._born = None if state["born"] is None else float(state["born"])
        self._done = {str(k) for k in state["done"]}
        self.happened = [FactChange.from_dict(c) for c in state["happened"]]

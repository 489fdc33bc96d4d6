"""A planted regularity for the simulated market (off unless a test or an experiment asks).

``PlantedDrops``: when the oracle price has moved ``drop`` or more over the last
``lookback_s`` (and less than ``max_drop``), a planted move starts: over the next
``horizon_s`` the price is pulled by ``pull`` (a log-return, spread evenly over the
horizon) back against the move if the regime at the start is ``revert_in``, and further
along it if the regime is ``continue_in``; other regimes get nothing. A large drop thus
reverts within the horizon in one regime and continues in the other; large rises
mirror drops, so the planted pulls add no trend of their own. After a planted move,
none starts for ``lookback_s``: each move is planted once, and a continuing move cannot
feed itself. No random numbers of its own: the same seed gives the same market. This is
ground truth a golem can learn (conditional outcomes per perceived regime and move) and
a golem without memory cannot know.

``swap_after_s`` (0: never) makes the fact change mid-life: from that many golem seconds
after the first step on, ``revert_in`` and ``continue_in`` trade places, so what a golem
learned about the two regimes becomes wrong and must be unlearned. ``state`` and
``restore_state`` carry everything the next steps depend on across a restart.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class PlantedDrops:
    drop: float = 0.015
    max_drop: float = 0.1
    lookback_s: float = 600.0
    horizon_s: float = 300.0
    pull: float = 0.02
    revert_in: str = "volatile"
    continue_in: str = "calm"
    swap_after_s: float = 0.0
    _born: float | None = field(default=None, init=False, repr=False)
    _times: list[float] = field(default_factory=list, init=False, repr=False)
    _prices: list[float] = field(default_factory=list, init=False, repr=False)
    _until: float = field(default=-math.inf, init=False, repr=False)
    _quiet_until: float = field(default=-math.inf, init=False, repr=False)
    _sign: float = field(default=0.0, init=False, repr=False)

    def drift(self, regime: str, time: float, price: float, dt: float) -> float:
        """The log-drift to add to the step that starts at ``time`` with ``price`` and
        lasts ``dt`` seconds (the price is remembered for later steps' trailing move)."""
        if self._born is None:
            self._born = time
        self._times.append(time)
        self._prices.append(price)
        cut = bisect.bisect_left(self._times, time - 2 * self.lookback_s)
        if cut > 0:
            del self._times[:cut], self._prices[:cut]
        if time >= self._until and time >= self._quiet_until:
            self._start(regime, time, price)
        if time >= self._until:
            return 0.0
        return self._sign * self.pull * max(dt, 1.0) / self.horizon_s

    def _start(self, regime: str, time: float, price: float) -> None:
        back = bisect.bisect_right(self._times, time - self.lookback_s) - 1
        revert_in, continue_in = self.regimes_at(time)
        if back < 0 or regime not in (revert_in, continue_in):
            return
        move = price / self._prices[back] - 1.0
        if not self.drop <= abs(move) < self.max_drop:
            return
        along = 1.0 if move > 0 else -1.0
        self._sign = -along if regime == revert_in else along
        self._until = time + self.horizon_s
        self._quiet_until = self._until + self.lookback_s

    def describe(self) -> str:
        """The parameters, one stable string (what a data dir records of its chain)."""
        return ",".join(f"{f.name}:{getattr(self, f.name)}" for f in fields(self)
                        if f.init)

    def regimes_at(self, time: float) -> tuple[str, str]:
        """(the regime where large moves revert, the one where they continue) at ``time``."""
        swapped = (self.swap_after_s > 0 and self._born is not None
                   and time - self._born >= self.swap_after_s)
        return (self.continue_in, self.revert_in) if swapped else \
            (self.revert_in, self.continue_in)

    def state(self) -> dict[str, Any]:
        """What the next steps depend on, as JSON-ready data."""
        return {"born": self._born, "times": list(self._times), "prices": list(self._prices),
                "until": finite_or_none(self._until),
                "quiet_until": finite_or_none(self._quiet_until), "sign": self._sign}

    def restore_state(self, state: dict[str, Any]) -> None:
        """Take back what ``state`` returned (KeyError, TypeError, ValueError otherwise)."""
        self._born = None if state["born"] is None else float(state["born"])
        self._times = [float(t) for t in state["times"]]
        self._prices = [float(p) for p in state["prices"]]
        self._until = _infinite(state["until"])
        self._quiet_until = _infinite(state["quiet_until"])
        self._sign = float(state["sign"])


def finite_or_none(value: float) -> float | None:
    """``value``, or None for an infinity (JSON has none): what a state file records."""
    return None if math.isinf(value) else value


def _infinite(value: float | None) -> float:
    return -math.inf if value is None else float(value)

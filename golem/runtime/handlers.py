"""Tick handlers: the work each loop does, registered by the parts that own it.

The runtime itself does no domain work. Capture (Gamma), cognition (Theta)
and consolidation (Delta) register handlers here as they are built; until then
a loop ticks with whatever is registered, and ``golem status`` shows exactly that.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from golem.config import LOOP_NAMES, LoopName
from golem.events import EventBus
from golem.runtime.clock import Clock

TickCounters = Mapping[str, int | float]


@dataclass(frozen=True)
class TickContext:
    """What a handler gets for one tick. ``rng`` is seeded by (seed, loop, tick)."""

    loop: LoopName
    tick: int
    scheduled_at: float
    deadline_at: float
    clock: Clock
    events: EventBus
    seed: int
    logger: Any

    @cached_property
    def log(self) -> Any:
        """A logger bound to this loop and tick."""
        return self.logger.bind(loop=self.loop, tick=self.tick)

    @cached_property
    def rng(self) -> random.Random:
        return tick_rng(self.seed, self.loop, self.tick)


class TickHandler(Protocol):
    """A named async callable; may return counters that go into the tick's log line."""

    @property
    def name(self) -> str: ...

    async def __call__(self, ctx: TickContext) -> TickCounters | None: ...


@dataclass
class HandlerRegistry:
    """Handlers per loop, run in registration order (a later one may rely on an earlier)."""

    _handlers: dict[str, list[TickHandler]] = field(
        default_factory=lambda: {name: [] for name in LOOP_NAMES})

    def register(self, loop: LoopName, handler: TickHandler) -> None:
        if loop not in self._handlers:
            raise ValueError(f"unknown loop {loop!r}; loops are {', '.join(LOOP_NAMES)}")
        names = [h.name for h in self._handlers[loop]]
        if handler.name in names:
            raise ValueError(f"handler {handler.name!r} is already registered on {loop}")
        self._handlers[loop].append(handler)

    def for_loop(self, loop: LoopName) -> tuple[TickHandler, ...]:
        return tuple(self._handlers[loop])

    def describe(self) -> dict[str, list[str]]:
        return {loop: [h.name for h in handlers] for loop, handlers in self._handlers.items()}


def tick_rng(seed: int, loop: str, tick: int) -> random.Random:
    return random.Random(f"{seed}:{loop}:{tick}")  # noqa: S311 - simulation, not crypto

"""Scripted tick handlers for driving the real runtime in tests."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from golem.runtime.handlers import TickContext, TickCounters

if TYPE_CHECKING:
    from contextlib import AsyncExitStack

    from golem.gamma.capture import GammaCapture
    from golem.runtime.daemon import Setup, SetupContext


@dataclass
class RecordingHandler:
    """Remembers (loop, tick, golem time) of every call."""

    name: str = "record"
    calls: list[tuple[str, int, float]] = field(default_factory=list)

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        self.calls.append((ctx.loop, ctx.tick, ctx.clock.now()))
        return {"calls": len(self.calls)}


@dataclass
class ClockSleepHandler:
    """Takes ``seconds`` of golem time on the given ticks (all ticks when ``ticks`` is None)."""

    seconds: float
    ticks: frozenset[int] | None = None
    name: str = "clock-sleep"

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        if self.ticks is None or ctx.tick in self.ticks:
            await ctx.clock.sleep_until(ctx.clock.now() + self.seconds)
        return None


@dataclass
class FailingHandler:
    """Raises on the given ticks; ``secret`` sits in a local to prove logs never show locals."""

    ticks: frozenset[int]
    name: str = "failing"
    secret: str = "sk-test-do-not-log-0123456789abcdef"  # noqa: S105 - a decoy, not a key

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        api_key = self.secret  # a local a careless traceback renderer would print
        if ctx.tick in self.ticks:
            raise RuntimeError(f"scripted failure on {ctx.loop} tick {ctx.tick} ({len(api_key)})")
        return None


@dataclass
class WallSleepHandler:
    """Takes ``seconds`` of wall time and leaves marker files, for lifecycle tests.

    Writes ``<marker_dir>/<loop>-<tick>.started`` when it begins and
    ``.finished`` when it completes, so a test can tell whether a tick in
    flight was allowed to finish or was cancelled.
    """

    seconds: float
    marker_dir: Path
    name: str = "wall-sleep"

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        stem = self.marker_dir / f"{ctx.loop}-{ctx.tick}"
        stem.with_suffix(".started").write_text(f"{time.time()}\n")
        await anyio.sleep(self.seconds)
        stem.with_suffix(".finished").write_text(f"{time.time()}\n")
        return None


@dataclass
class ThreadBlockHandler:
    """Blocks a worker thread for ``seconds``; cancellation cannot interrupt it.

    Stands in for a wedged blocking call, so tests can see the watchdog
    withhold its ping while a tick is stuck past its deadline.
    """

    seconds: float
    name: str = "thread-block"

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        await anyio.to_thread.run_sync(time.sleep, self.seconds)
        return None


class Escalator:
    """Gamma's stand-in stimulus: one very curious escalation per tick, so Theta calls the
    strong tier every tick (the simulated market escalates only a few events an hour).
    Register it on "gamma" after setup and point ``capture`` at the real capture."""

    name = "test-escalator"

    def __init__(self, curiosity: float = 0.95, *, alternate_ticks: int = 0) -> None:
        """``alternate_ticks`` > 0: escalate for that many Gamma ticks, then not for as
        many, and so on (so Theta alternates between a model tier and the offline one)."""
        self.capture: GammaCapture | None = None
        self.curiosity = curiosity
        self.alternate_ticks = alternate_ticks

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        from golem.gamma.handoff import Escalation  # noqa: PLC0415

        assert self.capture is not None, "Escalator.capture was never set"
        if self.alternate_ticks and (ctx.tick // self.alternate_ticks) % 2:
            return None
        self.capture.to_theta.escalate([Escalation(f"escalated-{ctx.tick}", self.curiosity,
                                                    "test")])
        return None


def escalating(setup: Setup, escalator: Escalator | None = None) -> Setup:
    """The build's `setup`, plus an Escalator on Gamma pointed at the real capture."""
    extra = escalator or Escalator()

    async def wired(ctx: SetupContext, stack: AsyncExitStack) -> None:
        from golem.gamma.capture import GammaCapture  # noqa: PLC0415 - loads the chain stack

        await setup(ctx, stack)
        capture = ctx.registry.for_loop("gamma")[0]
        assert isinstance(capture, GammaCapture), "escalating() needs chain capture on"
        extra.capture = capture
        ctx.registry.register("gamma", extra)
    return wired

"""Golem time.

Everything that waits or reads the time goes through a clock, so one daemon
can run on the wall clock in production and on virtual time in simulations
and tests. The virtual clock jumps to the next due wake-up as soon as every
participant (every tick loop) is asleep on it, so a month of ticks runs in
seconds, and wake-ups due at the same instant fire in a fixed order (by
participant rank, then registration), one participant at a time: the next one
wakes only once every participant is asleep again, so a participant never runs
beside another one's work of the same instant (Theta at 12:00 reads the chain and
the memory Gamma's 12:00 tick left, whatever the threads' timing). A participant's
sleep until a time already reached waits its turn the same way. So the same inputs
give the same run.

Contract of the virtual clock: only participants drive time. Work inside a
tick takes no golem time unless it sleeps on the clock; a participant may
have one clock sleep in flight at a time.
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Protocol

import anyio
import anyio.lowlevel

_NON_PARTICIPANT_RANK = 1 << 30


class Clock(Protocol):
    """What the runtime needs from time."""

    @property
    def simulated(self) -> bool: ...

    def now(self) -> float:
        """Golem time in epoch seconds."""
        ...

    async def sleep_until(self, when: float) -> None: ...

    def deadline(self, seconds: float) -> AbstractContextManager[anyio.CancelScope]:
        """A cancel scope that is cancelled once ``seconds`` of golem time have passed."""
        ...

    def participant(self, rank: int) -> AbstractContextManager[None]:
        """Register the current task as one that drives (virtual) time."""
        ...

    async def run(self) -> None:
        """Drive time; returns at once for the wall clock."""
        ...


class WallClock:
    """Real time. Sleeps are monotonic; ``now`` is the wall clock for timestamps."""

    simulated = False

    def now(self) -> float:
        return time.time()

    async def sleep_until(self, when: float) -> None:
        delay = when - time.time()
        if delay > 0:
            await anyio.sleep(delay)
        else:
            await anyio.lowlevel.checkpoint()

    @contextmanager
    def deadline(self, seconds: float) -> Iterator[anyio.CancelScope]:
        with anyio.CancelScope(deadline=anyio.current_time() + seconds) as scope:
            yield scope

    @contextmanager
    def participant(self, rank: int) -> Iterator[None]:
        yield

    async def run(self) -> None:
        return None


@dataclass(eq=False)
class _Participant:
    rank: int
    waiter: _Timer | None = None


@dataclass(eq=False)
class _Timer:
    when: float
    rank: int
    seq: int
    owner: _Participant | None
    event: anyio.Event | None = None
    scope: anyio.CancelScope | None = None
    done: bool = field(default=False)

    def __lt__(self, other: _Timer) -> bool:
        return (self.when, self.rank, self.seq) < (other.when, other.rank, other.seq)


_current: contextvars.ContextVar[_Participant | None] = contextvars.ContextVar(
    "golem_clock_participant", default=None
)


class VirtualClock:
    """Simulated time starting at ``start`` (epoch seconds).

    ``speed`` None means as fast as possible; a number paces virtual time at
    that many golem seconds per wall second while everything is idle.
    """

    simulated = True

    def __init__(self, start: float, speed: float | None = None) -> None:
        self._start = start
        self._elapsed = 0.0
        self._speed = speed
        self._heap: list[_Timer] = []
        self._seq = itertools.count()
        self._participants = 0
        self._sleeping = 0
        self._idle: anyio.Event | None = None
        self.jumps = 0

    def now(self) -> float:
        return self._start + self._elapsed

    async def sleep_until(self, when: float) -> None:
        owner = _current.get()
        if when <= self.now():
            if owner is None:
                await anyio.lowlevel.checkpoint()
                return
            when = self.now()  # a participant waits its turn at this instant
        timer = self._push(when, owner, event=anyio.Event())
        if owner is not None:
            if owner.waiter is not None:
                timer.done = True
                raise RuntimeError("a clock participant may have one sleep in flight at a time")
            owner.waiter = timer
            self._sleeping += 1
            self._check_idle()
        try:
            assert timer.event is not None
            await timer.event.wait()
        finally:
            if owner is not None and owner.waiter is timer:
                owner.waiter = None
                self._sleeping -= 1
            timer.done = True

    @contextmanager
    def deadline(self, seconds: float) -> Iterator[anyio.CancelScope]:
        scope = anyio.CancelScope()
        timer = self._push(self.now() + seconds, _current.get(), scope=scope)
        try:
            with scope:
                yield scope
        finally:
            timer.done = True

    @contextmanager
    def participant(self, rank: int) -> Iterator[None]:
        me = _Participant(rank)
        token = _current.set(me)
        self._participants += 1
        try:
            yield
        finally:
            _current.reset(token)
            self._participants -= 1
            self._check_idle()

    async def run(self) -> None:
        """Advance time whenever every participant sleeps; runs until cancelled."""
        while True:
            self._idle = anyio.Event()
            self._check_idle()
            await self._idle.wait()
            while self._all_asleep():
                top = self._peek()
                if top is None:
                    break
                if self._speed is not None and top.when > self.now():
                    await anyio.sleep((top.when - self.now()) / self._speed)
                    if not (self._all_asleep() and self._peek() is top):
                        continue
                self._fire_due(top.when)
                # Let woken tasks (and any non-participant) run before time moves again.
                await anyio.lowlevel.checkpoint()

    def _push(
        self,
        when: float,
        owner: _Participant | None,
        event: anyio.Event | None = None,
        scope: anyio.CancelScope | None = None,
    ) -> _Timer:
        rank = owner.rank if owner is not None else _NON_PARTICIPANT_RANK
        timer = _Timer(when, rank, next(self._seq), owner, event=event, scope=scope)
        heapq.heappush(self._heap, timer)
        return timer

    def _peek(self) -> _Timer | None:
        while self._heap and self._heap[0].done:
            heapq.heappop(self._heap)
        return self._heap[0] if self._heap else None

    def _all_asleep(self) -> bool:
        return self._participants > 0 and self._sleeping == self._participants

    def _check_idle(self) -> None:
        if self._idle is not None and self._all_asleep():
            self._idle.set()

    def _fire_due(self, when: float) -> None:
        """Move to `when` and fire what is due, up to the first participant it wakes."""
        if when > self.now():
            self._elapsed = when - self._start
            self.jumps += 1
        while (top := self._peek()) is not None and top.when <= when:
            heapq.heappop(self._heap)
            top.done = True
            if top.scope is not None:
                top.scope.cancel()
            if top.event is not None:
                top.event.set()
            owner = top.owner
            if owner is not None and owner.waiter is not None and (
                owner.waiter is top or top.scope is not None
            ):
                # The owner wakes now: from its own sleep, or cancelled out of it by a deadline.
                waiter = owner.waiter
                owner.waiter = None
                self._sleeping -= 1
                waiter.done = True
                if waiter.event is not None:
                    waiter.event.set()
                return

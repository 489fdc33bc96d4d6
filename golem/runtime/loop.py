"""One tick loop (Gamma, Theta or Delta).

A loop wakes at fixed slots of its interval and runs its handlers under a
deadline. An exception fails that tick only; the loop logs it with its name
and tick number and carries on, backing off when failures repeat. A tick that
runs past its slot makes the loop skip the slots it missed, and counts them.
Each tick logs one line: its duration, outcome, the handlers' counters and each
handler's wall milliseconds (``<handler>.ms``).
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
import structlog

from golem.config import LoopName, LoopSection
from golem.events import EventBus, TickCompleted, TickFailed, TickSkipped
from golem.runtime.clock import Clock
from golem.runtime.handlers import TickContext, TickHandler
from golem.runtime.schedule import NextTick, backoff_delay, plan_next, slot_time
from golem.runtime.state import ErrorRecord, LoopCounters
from golem.runtime.stopwatch import ms_since

log = structlog.get_logger("golem.loop")

_WATCHDOG_MARGIN_S = 5.0
_MESSAGE_LIMIT = 500


class LoopState(enum.Enum):
    STARTING = "starting"
    SLEEPING = "sleeping"
    TICKING = "ticking"
    STOPPED = "stopped"


@dataclass(frozen=True)
class TickReport:
    loop: LoopName
    tick: int
    outcome: str  # ok | failed | deadline | cancelled
    duration_ms: float
    error: ErrorRecord | None


@dataclass(frozen=True)
class LoopHealth:
    """One loop as the health check sees it: golem times (``last_tick_at``, ``started_at``;
    None before the first tick / before the loop ran) and whether a tick in flight is
    stuck past its deadline (``stuck``)."""

    name: str
    interval_s: float
    deadline_s: float
    state: str
    ticks: int
    last_tick_at: float | None
    last_outcome: str | None
    last_duration_ms: float | None
    started_at: float | None
    stuck: bool


class TickLoop:
    def __init__(
        self,
        *,
        name: LoopName,
        rank: int,
        section: LoopSection,
        clock: Clock,
        handlers: tuple[TickHandler, ...],
        counters: LoopCounters,
        events: EventBus,
        seed: int,
        on_tick: Callable[[TickReport], None],
    ) -> None:
        self.name = name
        self.rank = rank
        self.section = section
        self.counters = counters
        self.state = LoopState.STARTING
        self._clock = clock
        self._handlers = handlers
        self._events = events
        self._seed = seed
        self._on_tick = on_tick
        self._stopping = False
        self._forced = False
        self._sleep_scope: anyio.CancelScope | None = None
        self._tick_scope: anyio.CancelScope | None = None
        self._tick_started_wall = 0.0
        self._counters_out: dict[str, Any] = {}
        self._started_at: float | None = None

    @property
    def stopping(self) -> bool:
        return self._stopping

    def stop(self) -> None:
        """Start no more ticks; a tick in flight may finish."""
        self._stopping = True
        if self._sleep_scope is not None:
            self._sleep_scope.cancel()

    def force(self) -> None:
        """Cancel the tick in flight."""
        self.stop()
        self._forced = True
        if self._tick_scope is not None:
            self._tick_scope.cancel()

    def healthy(self) -> bool:
        """False only when a tick has run well past its deadline (cancellation is not working)."""
        if self.state is not LoopState.TICKING:
            return True
        elapsed = time.monotonic() - self._tick_started_wall
        deadline = self.section.deadline_s
        return elapsed <= deadline + min(deadline, _WATCHDOG_MARGIN_S)

    def tick_age(self) -> float:
        return time.monotonic() - self._tick_started_wall

    def health(self) -> LoopHealth:
        """A snapshot for /healthz and the dashboard (read on the event loop; no I/O)."""
        c = self.counters
        return LoopHealth(self.name, self.section.interval_s, self.section.deadline_s,
                          self.state.value, c.ticks, c.last_tick_at, c.last_outcome,
                          c.last_duration_ms, self._started_at, not self.healthy())

    async def run(self, stop_at: float | None) -> None:
        interval = self.section.interval_s
        with self._clock.participant(self.rank):
            now = self._clock.now()
            self._started_at = now
            # Resume the persisted schedule, but never wait longer than one interval for it
            # (the interval may have shrunk, or the wall clock stepped back, since it was saved).
            anchor = max(now, min(self.counters.next_due or now, now + interval))
            index = 0
            try:
                while not self._stopping:
                    at = slot_time(anchor, interval, index)
                    self.counters.next_due = at
                    if stop_at is not None and at >= stop_at:
                        await self._sleep(stop_at)
                        break
                    await self._sleep(at)
                    if self.stopping:
                        break
                    report = await self._tick(at)
                    if report.outcome == "cancelled":
                        break
                    plan = self._plan(anchor, index)
                    self._log_tick(report, plan)
                    index = plan.index
                    # saved now, so a stop before the next sleep resumes at the next slot
                    # (not at this one again, nor off the grid at the restart's golem time)
                    self.counters.next_due = slot_time(anchor, interval, index)
            finally:
                self.state = LoopState.STOPPED

    async def _sleep(self, until: float) -> None:
        self.state = LoopState.SLEEPING
        with anyio.CancelScope() as scope:
            self._sleep_scope = scope
            if self._stopping:
                scope.cancel()
            await self._clock.sleep_until(until)
        self._sleep_scope = None

    async def _tick(self, scheduled_at: float) -> TickReport:
        self.counters.ticks += 1
        tick = self.counters.ticks
        deadline = self.section.deadline_s
        started = self._clock.now()
        ctx = TickContext(
            loop=self.name, tick=tick, scheduled_at=scheduled_at,
            deadline_at=started + deadline, clock=self._clock, events=self._events,
            seed=self._seed, logger=log,
        )
        self.state = LoopState.TICKING
        self._tick_started_wall = time.monotonic()
        self._counters_out = {}
        outcome = "ok"
        failure: BaseException | None = None
        # On virtual time the golem-time deadline alone would never fire for work that
        # burns wall time, so the same number of wall seconds is a backstop.
        wall_deadline = anyio.current_time() + deadline if self._clock.simulated else math.inf
        with anyio.CancelScope(deadline=wall_deadline) as tick_scope:
            self._tick_scope = tick_scope
            with self._clock.deadline(deadline) as golem_scope:
                try:
                    for handler in self._handlers:
                        began = time.perf_counter()
                        result = await handler(ctx)
                        for key, value in (result or {}).items():
                            self._counters_out[f"{handler.name}.{key}"] = value
                        self._add_handler_ms(handler.name, began)
                except Exception as exc:
                    outcome, failure = "failed", exc
            if golem_scope.cancel_called:
                outcome = "deadline"
        self._tick_scope = None
        # cancel_called, not cancelled_caught: work that could not be interrupted (a
        # blocking thread) and finished late still missed its deadline.
        if tick_scope.cancel_called:
            outcome = "cancelled" if self._forced else "deadline"
        duration_ms = (time.monotonic() - self._tick_started_wall) * 1000.0
        error = self._record(tick, outcome, duration_ms, failure)
        report = TickReport(self.name, tick, outcome, duration_ms, error)
        self._events.emit(TickCompleted(self.name, tick, round(duration_ms, 3), outcome))
        if outcome == "cancelled":
            self._log_tick(report, None)
        self._on_tick(report)
        return report

    def _add_handler_ms(self, name: str, began: float) -> None:
        """The tick line's ``<handler>.ms``: the wall milliseconds the handler took this
        tick (handlers sharing a name add up); a handler that raised has none."""
        key = f"{name}.ms"
        self._counters_out[key] = round(float(self._counters_out.get(key, 0.0))
                                        + ms_since(began), 2)

    def _record(self, tick: int, outcome: str, duration_ms: float,
                failure: BaseException | None) -> ErrorRecord | None:
        c = self.counters
        c.last_tick_at = self._clock.now()
        c.last_duration_ms = round(duration_ms, 3)
        c.last_outcome = outcome
        if outcome == "ok":
            c.ok += 1
            c.consecutive_failures = 0
            return None
        if outcome == "cancelled":
            c.cancelled += 1
            return None
        c.consecutive_failures += 1
        if outcome == "deadline":
            c.timed_out += 1
            kind = "deadline"
            message = f"tick exceeded its {self.section.deadline_s:g}s deadline"
        else:
            c.failed += 1
            assert failure is not None
            kind = type(failure).__name__
            message = str(failure)[:_MESSAGE_LIMIT]
        log.error("tick failed", loop=self.name, tick=tick, outcome=outcome,
                  consecutive_failures=c.consecutive_failures, exc_info=failure)
        self._events.emit(TickFailed(self.name, tick, outcome, kind, message,
                                     c.consecutive_failures))
        return ErrorRecord(self._clock.now(), time.time(), self.name, tick, kind, message)

    def _plan(self, anchor: float, index: int) -> NextTick:
        s = self.section
        delay = backoff_delay(self.counters.consecutive_failures, s.interval_s, s.backoff_max_s)
        plan = plan_next(anchor, s.interval_s, index, self._clock.now(), delay)
        self.counters.skipped_overrun += plan.skipped_overrun
        self.counters.skipped_backoff += plan.skipped_backoff
        if plan.skipped_overrun:
            self._events.emit(TickSkipped(self.name, self.counters.ticks,
                                          plan.skipped_overrun, "overrun"))
        if plan.skipped_backoff:
            self._events.emit(TickSkipped(self.name, self.counters.ticks,
                                          plan.skipped_backoff, "backoff"))
        return plan

    def _log_tick(self, report: TickReport, plan: NextTick | None) -> None:
        fields: dict[str, Any] = {
            "loop": self.name,
            "tick": report.tick,
            "golem_time": iso(self._clock.now()),
            "duration_ms": round(report.duration_ms, 3),
            "outcome": report.outcome,
            "handlers": len(self._handlers),
            "consecutive_failures": self.counters.consecutive_failures,
            "skipped_total": self.counters.skipped_overrun + self.counters.skipped_backoff,
        }
        if plan is not None and (plan.skipped_overrun or plan.skipped_backoff):
            fields["skipping_next"] = plan.skipped_overrun + plan.skipped_backoff
        fields.update(self._counters_out)
        log.info("tick", **fields)


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")

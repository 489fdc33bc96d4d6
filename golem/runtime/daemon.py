"""The daemon's lifecycle: start, run three loops, stop cleanly.

Start-up order matters: the config is already valid, then the data dir is
locked, the state store opened and the previous run's counters loaded; only
then does systemd hear READY=1. On SIGTERM or SIGINT no new tick starts,
ticks in flight get ``runtime.shutdown_grace_s`` to finish, a second signal
or the end of the grace period cancels them, and the final flush runs
shielded under ``runtime.cleanup_timeout_s``.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import structlog
from anyio import TASK_STATUS_IGNORED
from anyio.abc import TaskStatus

from golem.config import LOOP_NAMES, Config, speed_label
from golem.errors import EXIT_CANTCREAT, EXIT_OK, GolemError, StateError
from golem.events import (
    EVENTS_FILE,
    EventBus,
    EventLog,
    RuntimeStarted,
    RuntimeStopped,
    RuntimeStopping,
)
from golem.runtime.clock import Clock, VirtualClock, WallClock
from golem.runtime.handlers import HandlerRegistry
from golem.runtime.heap import long_lived_heap, resident_mb, trim_heap
from golem.runtime.lock import DataDirLock
from golem.runtime.loop import LoopHealth, TickLoop, TickReport, iso
from golem.runtime.notify import SystemdNotifier
from golem.runtime.state import ErrorRecord, LoopCounters, StateStore

log = structlog.get_logger("golem.runtime")

# What a failed write says when the disk is full, across SQLite, LanceDB and the OS.
_NO_SPACE = ("no space left on device", "database or disk is full", "disk quota exceeded",
             "[errno 28]", "enospc")


def out_of_space(message: str) -> bool:
    """Whether an error message says the disk is full."""
    text = message.lower()
    return any(marker in text for marker in _NO_SPACE)


@dataclass(frozen=True)
class SetupContext:
    """What components get at start-up: config, golem clock, event bus, the registry."""

    config: Config
    clock: Clock
    events: EventBus
    registry: HandlerRegistry
    # The graceful stop (as on SIGTERM): the death protocol calls it once the golem is dead.
    stop: Callable[[str], None] | None = None
    # Each loop's health, for the operator API: empty until the loops run (after set-up).
    loops: Callable[[], list[LoopHealth]] = lambda: []


Setup = Callable[[SetupContext, AsyncExitStack], Awaitable[None]]


@dataclass
class _Pending:
    errors: list[ErrorRecord] = field(default_factory=list)
    dirty: bool = False


class Daemon:
    """One run of the golem. Construct, then ``await run()``; returns the exit status."""

    def __init__(
        self,
        config: Config,
        registry: HandlerRegistry,
        *,
        stop_after: float | None = None,
        stop_at: float | None = None,
        notifier: SystemdNotifier | None = None,
        setup: Setup | None = None,
        admit: Callable[[Path], None] | None = None,
    ) -> None:
        """``admit``: called with the data dir once its lock is held and before anything in
        it is opened or written; it refuses a run by raising a GolemError (the CLI passes
        mortality's check that a dead golem's data dir stays dead). ``stop_after``: stop
        that many golem seconds after this start; ``stop_at``: stop at that golem time,
        however many restarts came before (it wins over ``stop_after``)."""
        self.config = config
        self.admit = admit
        self.registry = registry
        self.setup = setup
        self.stop_after = stop_after
        self.stop_at = stop_at
        self.notifier = notifier or SystemdNotifier(None, None)
        self.loops: list[TickLoop] = []
        self.stop_reason: str | None = None
        self._pending = _Pending()
        self._db = anyio.CapacityLimiter(1)
        self._store: StateStore | None = None
        self._events_log: EventLog | None = None
        self._clock: Clock | None = None
        self._bus: EventBus | None = None
        self._forced = False
        self._tg: anyio.abc.TaskGroup | None = None
        self._startup: anyio.CancelScope | None = None
        self.exit_code = EXIT_OK
        self.exit_reason = ""  # why exit_code is not 0, for the operator's one line

    @property
    def clock(self) -> Clock:
        assert self._clock is not None, "clock exists once run() has started"
        return self._clock

    async def run(self) -> int:
        """Run until stopped; returns the exit status: 0 after a requested stop (also
        during start-up: whatever opened is closed, nothing half-written blocks the next
        start), 73 when the data dir ran out of space (``runtime.min_free_mb``)."""
        code, error = EXIT_OK, None
        async with anyio.create_task_group() as tg:
            self._tg = tg
            # Signals are ours from the first moment: a SIGTERM while the model loads or
            # the market replays stops cleanly instead of killing the process.
            await tg.start(self._watch_signals)
            try:
                with anyio.CancelScope() as startup:
                    self._startup = startup
                    code = await self._run_locked()
                if startup.cancelled_caught:
                    log.info("golem stopped during start-up", reason=self.stop_reason)
                    code = EXIT_OK
            except Exception as exc:  # raised as itself, not inside an ExceptionGroup
                error = exc
            finally:
                tg.cancel_scope.cancel()
        if error is not None:
            raise error
        return code

    async def _run_locked(self) -> int:
        data_dir = self.config.data_dir
        try:
            data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise GolemError(f"cannot create data dir {data_dir}: {exc.strerror}") from None
        lock = DataDirLock(data_dir)
        lock.acquire()
        try:
            if self.admit is not None:
                self.admit(data_dir)
            self._store = await anyio.to_thread.run_sync(StateStore.open, data_dir)
            try:
                return await self._run_opened(self._store)
            finally:
                self._store.close()
        finally:
            lock.release()

    async def _run_opened(self, store: StateStore) -> int:
        cfg = self.config
        counters = await self._call(store.load_loops)
        meta = await self._call(store.all_meta)
        self._clock = self._make_clock(meta.get("golem_time"))
        self._events_log = EventLog(cfg.data_dir / EVENTS_FILE, cfg.events.max_bytes,
                                    cfg.events.keep)
        self._bus = EventBus(self.clock.now, self._events_log)
        components = AsyncExitStack()
        try:
            if self.setup is not None:
                # Components (the Grimoire, ...) open before READY=1 and register their
                # tick handlers; they close after the loops have stopped.
                await self.setup(SetupContext(cfg, self.clock, self._bus, self.registry,
                                              self.request_stop, self.loop_health), components)
            return await self._run_loops(store, counters, meta)
        finally:
            # Shielded: a stop during start-up cancels the set-up, and what it opened
            # must still close.
            with anyio.CancelScope(shield=True):
                await components.aclose()

    async def _run_loops(self, store: StateStore, counters: dict[str, LoopCounters],
                         meta: dict[str, Any]) -> int:
        cfg = self.config
        assert self._bus is not None
        for rank, name in enumerate(LOOP_NAMES):
            self.loops.append(TickLoop(
                name=name, rank=rank, section=cfg.loop(name), clock=self.clock,
                handlers=self.registry.for_loop(name),
                counters=counters.get(name) or LoopCounters(name), events=self._bus,
                seed=cfg.golem.seed, on_tick=self._on_tick,
            ))
        if self.stop_reason is not None:  # stopped during set-up (a death resumed there)
            for loop in self.loops:
                loop.stop()
        run_number = int(meta.get("runs", 0)) + 1
        started = {
            "runs": run_number,
            "handlers": self.registry.describe(),
            "last_run": {"pid": os.getpid(), "started_wall": time.time(),
                         "started_golem": self.clock.now(), "clock": self._clock_label()},
            "clean_shutdown": False,
            "golem_time": self.clock.now(),
        }
        if "created_wall" not in meta:
            started["created_wall"] = time.time()
        await self._call(store.save, [loop.counters for loop in self.loops], started)
        stop_at = self.stop_at if self.stop_at is not None else \
            (self.clock.now() + self.stop_after if self.stop_after else None)

        self._bus.emit(RuntimeStarted(run_number, os.getpid(), self._clock_label(),
                                      self.registry.describe()))
        log.info("golem started", name=cfg.golem.name, run=run_number,
                 data_dir=str(cfg.data_dir), clock=self._clock_label(),
                 golem_time=iso(self.clock.now()),
                 stop_at=iso(stop_at) if stop_at else None,
                 handlers=self.registry.describe(),
                 resumed_ticks={lp.name: lp.counters.ticks for lp in self.loops})
        self._startup = None  # from here a signal stops the loops, not the start-up
        try:
            with long_lived_heap():
                await self._loops_until_stopped(stop_at)
        except Exception as exc:
            await self._shutdown(crash=exc)
            raise
        await self._shutdown()
        return self.exit_code

    async def _loops_until_stopped(self, stop_at: float | None) -> None:
        cfg = self.config
        async with anyio.create_task_group() as outer:
            self.notifier.ready(self._status_line())
            if cfg.runtime.min_free_mb:
                outer.start_soon(self._watch_disk)
            outer.start_soon(self.clock.run)
            outer.start_soon(self._flush_periodically)
            if cfg.runtime.heap_trim_interval_s:
                outer.start_soon(self._trim_periodically, cfg.runtime.heap_trim_interval_s)
            if self.notifier.watchdog_period_s:
                outer.start_soon(self._watchdog, self.notifier.watchdog_period_s)
            async with anyio.create_task_group() as loops:
                for loop in self.loops:
                    loops.start_soon(loop.run, stop_at)
            outer.cancel_scope.cancel()

    def loop_health(self) -> list[LoopHealth]:
        """Each loop's health snapshot; empty before the loops are built or once stopping
        has begun is not special-cased (a stopped loop reports state "stopped")."""
        return [loop.health() for loop in self.loops]

    def request_stop(self, reason: str) -> None:
        """First call: graceful stop. Second call: cancel ticks in flight. Called during
        set-up (a death resumed there), the loops stop as soon as they start."""
        if self.stop_reason is not None:
            self.force_stop(f"{reason} again")
            return
        self.stop_reason = reason
        grace = self.config.runtime.shutdown_grace_s
        log.info("golem stopping", reason=reason, grace_s=grace,
                 ticking=[lp.name for lp in self.loops if lp.state.value == "ticking"])
        self.notifier.stopping(f"stopping: {reason}")
        if self._bus is not None:
            self._bus.emit(RuntimeStopping(reason))
        for loop in self.loops:
            loop.stop()
        if self._tg is not None:
            self._tg.start_soon(self._grace_timer, grace)

    def force_stop(self, reason: str) -> None:
        if self._forced:
            return
        self._forced = True
        busy = [lp.name for lp in self.loops if lp.state.value == "ticking"]
        log.warning("cancelling ticks in flight", reason=reason, loops=busy)
        for loop in self.loops:
            loop.force()

    async def _grace_timer(self, grace: float) -> None:
        await anyio.sleep(grace)
        self.force_stop("shutdown grace period over")

    async def _watch_signals(self, *, task_status: TaskStatus[None] = TASK_STATUS_IGNORED) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            task_status.started()
            async for signum in signals:
                name = signal.Signals(signum).name
                if self._startup is None:
                    self.request_stop(name)
                    continue
                # Start-up is cancelled: what has opened closes (shielded), nothing else
                # runs; a blocking step in a worker thread finishes first.
                self.stop_reason = self.stop_reason or name
                log.info("stop requested during start-up; closing what has opened",
                         reason=name)
                self._startup.cancel()

    async def _flush_periodically(self) -> None:
        interval = self.config.runtime.state_flush_interval_s
        while True:
            await anyio.sleep(interval)
            if self._pending.dirty:
                try:
                    await self._flush()
                except (StateError, OSError) as exc:
                    log.error("state flush failed; will retry", error=str(exc))
                    continue
                self.notifier.status(self._status_line())

    @staticmethod
    async def _trim_periodically(period: float) -> None:
        """Every ``period`` wall seconds, glibc's free pages go back to the OS (a worker
        thread: the trim takes each arena's lock in turn, the event loop goes on). Logged
        at debug with the resident memory before and after."""
        while True:
            await anyio.sleep(period)
            before = resident_mb()
            released = await anyio.to_thread.run_sync(trim_heap)
            log.debug("heap trimmed", released=released, rss_mb_before=before,
                      rss_mb_after=resident_mb())

    async def _watchdog(self, period: float) -> None:
        withholding = False
        while True:
            stuck = [lp for lp in self.loops if not lp.healthy()]
            if stuck and not withholding:
                log.warning("watchdog ping withheld: tick stuck past its deadline",
                            loops={lp.name: round(lp.tick_age(), 1) for lp in stuck})
            elif not stuck and withholding:
                log.info("watchdog pings resumed")
            withholding = bool(stuck)
            if not stuck:
                self.notifier.watchdog()
            await anyio.sleep(period)

    def _on_tick(self, report: TickReport) -> None:
        self._pending.dirty = True
        if report.error is not None:
            self._pending.errors.append(report.error)
            if out_of_space(report.error.message):
                self._stop_for_space(f"{report.error.loop} tick failed: "
                                     f"{report.error.message}")

    async def _watch_disk(self) -> None:
        """Stop before the disk is full: below ``runtime.min_free_mb`` free on the data
        dir's filesystem, no new tick starts (checked every wall second)."""
        floor = self.config.runtime.min_free_mb << 20
        while True:
            try:
                free = shutil.disk_usage(self.config.data_dir).free
            except OSError as exc:
                log.warning("cannot read free disk space", error=str(exc))
            else:
                if free < floor:
                    self._stop_for_space(f"{free >> 20} MB free on the data dir's disk, "
                                         f"below runtime.min_free_mb = "
                                         f"{self.config.runtime.min_free_mb}")
            await anyio.sleep(1.0)

    def _stop_for_space(self, why: str) -> None:
        """Out of space: stop (exit 73) rather than let ticks fail while the golem clock
        runs on. Free space, then start again: nothing written is lost."""
        if self.exit_code == EXIT_CANTCREAT:
            return
        self.exit_code = EXIT_CANTCREAT
        self.exit_reason = f"disk full, stopped: {why}; free space and start again"
        log.error("disk full: stopping; free space on the data dir's disk and start again",
                  data_dir=str(self.config.data_dir), why=why)
        self.request_stop("disk full")

    async def _flush(self, final: dict[str, Any] | None = None) -> None:
        store = self._store
        assert store is not None
        errors, self._pending.errors = self._pending.errors, []
        self._pending.dirty = False
        meta: dict[str, Any] = {"golem_time": self.clock.now(), **(final or {})}
        counters = [LoopCounters(**vars(loop.counters)) for loop in self.loops]
        try:
            await self._call(store.save, counters, meta, errors)
        except BaseException:
            self._pending.errors[:0] = errors
            self._pending.dirty = True
            raise
        if self._events_log is not None:
            await self._call(self._events_log.flush)

    async def _shutdown(self, crash: Exception | None = None) -> None:
        reason = self.stop_reason or "stop-after reached"
        if crash is not None:
            reason = f"crashed: {type(crash).__name__}"
        with anyio.CancelScope(shield=True), anyio.move_on_after(
                self.config.runtime.cleanup_timeout_s) as bounded:
            if self.stop_reason is None:
                self.notifier.stopping(f"stopping: {reason}")
                if self._bus is not None:
                    self._bus.emit(RuntimeStopping(reason))
            ticks: dict[str, int] = {lp.name: lp.counters.ticks for lp in self.loops}
            if self._bus is not None:
                self._bus.emit(RuntimeStopped(reason, ticks))
            try:
                await self._flush({"clean_shutdown": crash is None, "last_stop": {
                    "reason": reason, "wall": time.time(), "golem": self.clock.now()}})
            except (StateError, OSError) as exc:  # a full disk: the last flush stands
                log.error("final state flush failed; counters lag by the last interval",
                          error=str(exc))
        if bounded.cancelled_caught:
            log.error("final flush did not finish in time; state may lag",
                      timeout_s=self.config.runtime.cleanup_timeout_s)
        log.info("golem stopped", reason=reason, golem_time=iso(self.clock.now()),
                 ticks={lp.name: lp.counters.ticks for lp in self.loops})
        self.notifier.close()

    async def _call(self, fn: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._db)

    def _make_clock(self, persisted_time: float | None) -> Clock:
        cfg = self.config.clock
        if cfg.mode == "real":
            return WallClock()
        start = cfg.start.timestamp()
        if persisted_time is not None and persisted_time > start:
            start = persisted_time
        speed = None if cfg.speed == "max" else float(cfg.speed)
        return VirtualClock(start, speed)

    def _clock_label(self) -> str:
        if self.config.clock.mode == "real":
            return "real"
        return f"simulated ({speed_label(self.config)})"

    def _status_line(self) -> str:
        ticks = " ".join(f"{lp.name}={lp.counters.ticks}" for lp in self.loops)
        return f"ticks {ticks}; golem time {iso(self.clock.now())}"

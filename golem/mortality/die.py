"""Where death comes from: vitality's terminal callback, the operator (`golem die`), or
an unfinished death found at start-up. All of them run the one Thanatopsis protocol.

In a daemon, ``DeathKeeper`` is the Delta handler that takes an operator's request
file, and its ``on_terminal`` is what the vitality check calls; once the golem is dead
it asks the daemon for the same graceful stop SIGTERM gets. Without a daemon, `golem
die` takes the data dir lock and runs the protocol in-process.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

import anyio
import anyio.to_thread
import structlog

from golem.actions.opening import Settle
from golem.config import Config
from golem.errors import EXIT_OK, LockHeldError
from golem.events import EVENTS_FILE, EventBus, EventLog
from golem.mortality.death import (
    DeathRecord,
    accepting_new_positions,
    life_spend_limit_usd,
    pending_request,
    read_death,
    request_death,
)
from golem.mortality.death_journal import DeathJournal, notice_owed, unfinished_death
from golem.mortality.thanatopsis import DeathServices, Thanatopsis, VaultExport
from golem.mortality.vault import exporter
from golem.runtime.clock import WallClock
from golem.runtime.handlers import TickContext, TickCounters, TickHandler
from golem.runtime.lock import DataDirLock, lock_holder
from golem.runtime.state import cli_golem_now

if TYPE_CHECKING:
    from golem.cognition.model import ModelCognition
    from golem.grimoire.grimoire import Grimoire
    from golem.runtime.daemon import SetupContext

log = structlog.get_logger("golem.mortality")


class DeathKeeper:
    """One death per data dir, whoever asks first; later triggers join it."""

    name = "thanatopsis"

    def __init__(self, services: DeathServices, stop: Callable[[str], None] | None) -> None:
        self.services, self.stop = services, stop
        self.record: DeathRecord | None = None
        self._lock = anyio.Lock()

    async def on_terminal(self, cause: str) -> None:
        """Vitality reached Terminal (or a component hit zero)."""
        await self.die(cause, "vitality")

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        """Delta tick: an operator's request (or an unfinished death) runs the protocol."""
        del ctx
        if self.record is not None:
            return {"dead": 1}
        data_dir = self.services.config.data_dir
        reason = await anyio.to_thread.run_sync(pending_request, data_dir)
        if reason is not None:
            await self.die(reason, "operator")
            return {"died": 1}
        return {"died": 1} if await self.resume_if_unfinished() is not None else None

    async def resume_if_unfinished(self) -> DeathRecord | None:
        """At start-up: a journal with an unfinished death resumes it instead of living."""
        death = await anyio.to_thread.run_sync(unfinished_death, self.services.config.data_dir)
        if death is None:
            return None
        return await self.die(death.cause, death.trigger)

    async def die(self, cause: str, trigger: str) -> DeathRecord:
        async with self._lock:
            if self.record is None:
                self.record = await run_protocol(self.services, cause, trigger)
        if self.stop is not None:
            self.stop(f"died: {self.record.cause}")
        return self.record


async def run_protocol(services: DeathServices, cause: str, trigger: str) -> DeathRecord:
    journal = await anyio.to_thread.run_sync(DeathJournal.open, services.config.data_dir)
    try:
        return await Thanatopsis(services, journal).run(cause, trigger)
    finally:
        journal.close()


@dataclass
class WhileAlive:
    """A Delta handler that stops running once the golem has died (nothing learns after
    the testament is written)."""

    inner: TickHandler
    keeper: DeathKeeper

    @property
    def name(self) -> str:
        return self.inner.name

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        if self.keeper.record is not None:
            return None
        return await self.inner(ctx)


def open_death_keeper(ctx: SetupContext, grimoire: Grimoire, model: ModelCognition | None,
                      settle: Settle | None = None,
                      vault_export: VaultExport | None = None) -> DeathKeeper:
    """For wiring.setup: register the result on "delta" and hand ``on_terminal`` to vitality;
    call ``resume_if_unfinished()`` before the loops start."""
    return DeathKeeper(DeathServices(ctx.config, grimoire, ctx.clock.now, ctx.events, model,
                                     settle, vault_export or exporter(ctx.config)), ctx.stop)


def run_die_command(config: Config, reason: str, out: TextIO) -> int:
    """`golem die --reason TEXT`: request death from a running daemon, or die here."""
    data_dir = config.data_dir
    record = read_death(data_dir) if data_dir.exists() else None
    owed = record is not None and bool(config.mortality.webhook_url) and notice_owed(data_dir)
    if record is not None and unfinished_death(data_dir) is None and not owed:
        out.write(f"{config.golem.name} is already dead ({record.cause}); testament "
                  f"{record.testament_path}\n")
        return EXIT_OK
    if not data_dir.exists():
        data_dir.mkdir(parents=True, mode=0o700)
    lock = DataDirLock(data_dir)
    try:
        lock.acquire()
    except LockHeldError:
        return _request(config, reason, out)
    try:
        record = anyio.run(_die_here, config, reason, backend_options={"use_uvloop": True})
    finally:
        lock.release()
    out.write(f"{record.name} died ({record.cause}); testament {record.testament_path} "
              f"(reflection: {record.reflection_source}, settled: {record.settled})\n")
    return EXIT_OK


def _request(config: Config, reason: str, out: TextIO) -> int:
    pid = lock_holder(config.data_dir)
    path = request_death(config.data_dir, reason, WallClock().now())
    out.write(f"golem {config.golem.name} is running (pid {pid or '?'}): death requested in "
              f"{path}; it runs the death protocol on its next Delta tick (every "
              f"{config.loop('delta').interval_s:g}s of golem time) and then stops\n")
    return EXIT_OK


async def _die_here(config: Config, reason: str) -> DeathRecord:
    """Open what the protocol needs (Grimoire, model if configured, event log), die, close."""
    from golem.actions.opening import open_settle  # noqa: PLC0415 - loads the EVM stack
    from golem.cognition.opening import open_model  # noqa: PLC0415
    from golem.grimoire.grimoire import Grimoire  # noqa: PLC0415 - heavy, only when dying

    now = await anyio.to_thread.run_sync(cli_golem_now, config)
    events_log = EventLog(config.data_dir / EVENTS_FILE, config.events.max_bytes,
                          config.events.keep)
    bus = EventBus(now, events_log)
    async with AsyncExitStack() as stack:
        grimoire = await Grimoire.open(config, now=now, events=bus)
        stack.push_async_callback(grimoire.close)
        model = open_model(config, stack, grimoire, now,
                           life_limit_usd=life_spend_limit_usd(config.mortality))
        settle = await open_settle(  # rebuilds a simulated chain
            config, stack, grimoire, now,
            accepting=lambda: accepting_new_positions(config.data_dir))
        services = DeathServices(config, grimoire, now, bus, model, settle,
                                 vault_export=exporter(config))
        try:
            return await run_protocol(services, reason, "operator")
        finally:
            await anyio.to_thread.run_sync(events_log.flush)

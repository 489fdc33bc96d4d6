"""What this build runs: the components a daemon opens and the tick handlers they register.

The Grimoire opens at start-up (so a missing embedding model stops the golem
before READY, with the set-up command in the message). Gamma captures the
in-process market (``chain.mode = "simulated"``) or a node (``"rpc"``); Theta
assembles a workspace with the Context Governor and decides with the offline
tier or a model; Delta consolidates, curates, dreams and rewrites MEMORY.md
(``[consolidation]``), then maintains the stores, then (``[mortality]``) computes
vitality, whose phase feeds Theta's policy, tier routing and token budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from golem.config import Config
from golem.runtime.daemon import SetupContext
from golem.runtime.handlers import HandlerRegistry, TickHandler

if TYPE_CHECKING:
    from golem.actions.execution import Executor
    from golem.cognition.model import ModelCognition
    from golem.gamma.capture import GammaCapture
    from golem.grimoire.grimoire import Grimoire
    from golem.mortality.die import DeathKeeper
    from golem.mortality.vitality_check import VitalityCheck
    from golem.mortality.vitality_store import Reading
    from golem.runtime.jobs import Job

def build_registry(config: Config) -> HandlerRegistry:
    """An empty registry; components fill it in ``setup``."""
    del config
    return HandlerRegistry()


async def setup(ctx: SetupContext, stack: AsyncExitStack) -> None:
    """Open this build's components and register their handlers."""
    from golem.grimoire.grimoire import Grimoire  # noqa: PLC0415 - heavy imports, run only
    from golem.grimoire.maintenance import GrimoireMaintenance  # noqa: PLC0415
    from golem.mortality.die import WhileAlive  # noqa: PLC0415

    grimoire = await Grimoire.open(ctx.config, now=ctx.clock.now, events=ctx.events)
    stack.push_async_callback(grimoire.close)
    from golem.mortality.succession import boot as boot_lineage  # noqa: PLC0415

    # Identity first: a successor imports its testament once, before any loop runs.
    await boot_lineage(ctx.config, grimoire, now=ctx.clock.now())
    capture = await _setup_capture(ctx, stack, grimoire) if ctx.config.chain.mode != "off" \
        else None
    from golem.cognition.opening import open_model  # noqa: PLC0415
    from golem.mortality.death import life_spend_limit_usd  # noqa: PLC0415

    model = open_model(ctx.config, stack, grimoire, ctx.clock.now,
                       life_limit_usd=life_spend_limit_usd(ctx.config.mortality))
    vitality = await _open_vitality(ctx, stack, model) if ctx.config.mortality.enabled \
        else None
    executor = await _setup_theta(
        ctx, stack, grimoire, capture, model,
        vitality_reader=vitality.store.latest_reading if vitality else None)
    if capture is not None and executor is not None:
        from golem.chain.names import OWN_WALLET  # noqa: PLC0415

        capture.name_addresses({executor.wallet.address: OWN_WALLET})
    keeper = _open_death(ctx, grimoire, model, executor)
    # Mortality runs first in a Delta tick, so a failing consolidation stage never stops the
    # golem from ageing or dying; consolidation does not run once it is dead.
    ctx.registry.register("delta", keeper)
    if vitality is not None:
        if executor is not None:
            vitality.equity = executor.equity_usd
        vitality.on_terminal = keeper.on_terminal
        ctx.registry.register("delta", vitality)
    cons = ctx.config.consolidation
    maintenance = GrimoireMaintenance(
        grimoire, optimize_every=cons.optimize_every, decay=not cons.enabled and cons.forgetting,
        disk_cap_bytes=cons.disk_cap_mb << 20, version_retention_s=cons.version_retention_s,
        version_retention_max=cons.version_retention_max,
        scheduled=True)
    if cons.enabled:
        from golem.consolidation.delta import open_delta  # noqa: PLC0415

        learning: TickHandler = await open_delta(
            ctx.config, grimoire, maintenance, stack, ctx.events, model=model,
            prepare=maintenance.prepare)
    else:
        learning = maintenance
    ctx.registry.register("delta", WhileAlive(learning, keeper))
    from golem.integrity.check import integrity_job  # noqa: PLC0415

    _schedule_jobs(ctx, stack, [*maintenance.jobs(ctx.config.loop("delta").interval_s),
                                integrity_job(ctx.config.data_dir)], keeper)
    from golem.mortality.inherited_replay import InheritedReplay  # noqa: PLC0415

    replay = await InheritedReplay.open(ctx.config, grimoire)
    if replay is not None:
        ctx.registry.register("delta", WhileAlive(replay, keeper))
    # An unfinished death found at start-up resumes now, before any loop ticks.
    await keeper.resume_if_unfinished()
    if ctx.config.api.enabled:  # the operator's HTTP surface ([api]; off by default)
        from golem.api.server import open_api  # noqa: PLC0415

        await open_api(ctx, stack, grimoire, model=model, executor=executor)


def _schedule_jobs(ctx: SetupContext, stack: AsyncExitStack, jobs: Sequence[Job],
                   keeper: DeathKeeper) -> None:
    """Calendar jobs: apscheduler on the wall clock in real mode; in simulated mode a Delta
    handler runs them on the golem clock (and, like learning, only while alive)."""
    from golem.mortality.die import WhileAlive  # noqa: PLC0415
    from golem.runtime.jobs import CalendarJobs, GolemClockJobs  # noqa: PLC0415

    if ctx.config.clock.mode == "real":
        calendar = CalendarJobs(jobs)
        calendar.start()
        stack.callback(calendar.shutdown)
    else:
        ctx.registry.register("delta", WhileAlive(GolemClockJobs(jobs), keeper))


async def _open_vitality(ctx: SetupContext, stack: AsyncExitStack,
                         model: ModelCognition | None) -> VitalityCheck:
    """The mortality check. Equity is the wallet marked to market when there is one (else the
    starting budget, so the economic clock counts model spend only)."""
    from golem.mortality.vitality_check import open_vitality  # noqa: PLC0415

    now = ctx.clock.now
    spent = (lambda: model.ledger.totals(now=now()).lifetime_usd) if model else None
    return await open_vitality(ctx.config, now(), stack, spent=spent)


def _open_death(ctx: SetupContext, grimoire: Grimoire, model: ModelCognition | None,
                executor: Executor | None) -> DeathKeeper:
    """Thanatopsis, for vitality's Terminal and the operator's `golem die`. Settle closes the
    wallet's positions on chain (nothing to settle without an executor or in a dry run)."""
    from golem.actions.opening import settle_with  # noqa: PLC0415
    from golem.mortality.die import open_death_keeper  # noqa: PLC0415

    return open_death_keeper(ctx, grimoire, model,
                             settle=settle_with(executor, ctx.clock.now))


async def _setup_capture(ctx: SetupContext, stack: AsyncExitStack,
                         grimoire: Grimoire) -> GammaCapture:
    """Gamma's capture over the simulated market or a node over RPC."""
    import anyio.to_thread  # noqa: PLC0415

    from golem.chain.cursor import CaptureStore  # noqa: PLC0415
    from golem.chain.market import load_market  # noqa: PLC0415
    from golem.chain.names import Names, market_names  # noqa: PLC0415
    from golem.chain.options import market_options  # noqa: PLC0415
    from golem.chain.source import SimulatedSource  # noqa: PLC0415
    from golem.chain.watch import WatchList  # noqa: PLC0415
    from golem.gamma.capture import COMMIT_EVERY_AT_MAX_SPEED, GammaCapture  # noqa: PLC0415

    chain = ctx.config.chain
    store = await anyio.to_thread.run_sync(CaptureStore.open, ctx.config.data_dir / "chain")
    stack.callback(store.close)
    if chain.mode == "simulated":
        source = await anyio.to_thread.run_sync(
            partial(SimulatedSource.create, **market_options(chain)),
            ctx.config.golem.seed, ctx.clock.now(), store)
        capture = GammaCapture(grimoire, source.reader, source.watch, store,
                               ctx.config.data_dir, chain, ctx.events, market=source,
                               first_block=source.first_block,
                               names=market_names(source.market))
    else:
        from golem.chain.rpc import open_reader  # noqa: PLC0415 - aiohttp, websockets

        rpc = chain.rpc
        reader = open_reader(rpc.url, rpc.timeout_s, WatchList.build(rpc.addresses, rpc.events))
        stack.push_async_callback(reader.aclose)
        market_file = ctx.config.actions.market_file
        capture = GammaCapture(grimoire, reader, WatchList.build(rpc.addresses, rpc.events),
                               store, ctx.config.data_dir, chain, ctx.events,
                               first_block=None if rpc.start_block < 0 else rpc.start_block,
                               expected_chain_id=rpc.chain_id,
                               names=market_names(load_market(Path(market_file)))
                               if market_file else Names())
    clock = ctx.config.clock
    if clock.mode == "simulated" and clock.speed == "max":
        capture.commit_every = COMMIT_EVERY_AT_MAX_SPEED
    stack.push_async_callback(capture.stop)  # after the loops stopped, before stores close
    ctx.registry.register("gamma", capture)
    return capture


async def _setup_theta(ctx: SetupContext, stack: AsyncExitStack, grimoire: Grimoire,
                       capture: GammaCapture | None, model: ModelCognition | None, *,
                       vitality_reader: Callable[[], Reading] | None = None,
                       ) -> Executor | None:
    """Theta's decision cycle: the Governor, the offline tier, the cage, the journal, and
    (actions.enabled; over RPC with actions.market_file) the executor, returned for vitality
    and Settle."""
    import anyio.to_thread  # noqa: PLC0415

    from golem.actions.opening import build_cage, open_actions  # noqa: PLC0415
    from golem.cognition import offline  # noqa: PLC0415
    from golem.cognition.journal import DecisionJournal  # noqa: PLC0415
    from golem.cognition.theta import ThetaCycle  # noqa: PLC0415
    from golem.governor.governor import ContextGovernor  # noqa: PLC0415
    from golem.governor.policy_store import PolicyStore  # noqa: PLC0415
    from golem.mortality.death import accepting_new_positions  # noqa: PLC0415
    from golem.runtime.state import StateStore  # noqa: PLC0415

    data_dir = ctx.config.data_dir
    journal = await anyio.to_thread.run_sync(DecisionJournal.open, data_dir)
    stack.callback(journal.close)
    state = await anyio.to_thread.run_sync(StateStore.open, data_dir)
    try:
        policies = PolicyStore.open(state)
    finally:
        state.close()
    stack.callback(policies.close)
    watched = tuple(capture.watch.addresses) if capture else ()
    cage = build_cage(ctx.config, watched)
    governor = ContextGovernor(grimoire, ctx.config.theta_context.total_budget,
                               phase_scaled=vitality_reader is not None,
                               recall=ctx.config.theta_context.memory)
    executor = await open_actions(
        ctx.config, stack, grimoire, cage, source=capture.market, now=ctx.clock.now,
        accepting=lambda: accepting_new_positions(data_dir)) if capture is not None else None
    theta = ThetaCycle(
        governor, journal, policies, cage, capture.to_theta if capture else None, ctx.events,
        loop2_every=ctx.config.theta_context.loop2_every, model=model,
        t2_curiosity=ctx.config.cognition.t2_curiosity, vitality_reader=vitality_reader,
        executor=executor, memory=ctx.config.theta_context.memory,
        horizon_s=offline.HORIZON_TICKS * ctx.config.theta.interval_s)
    stack.callback(theta.save_state)  # after the loops stopped, before the journal closes
    ctx.registry.register("theta", theta)
    return executor

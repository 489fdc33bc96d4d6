"""What this build runs: the components a daemon opens and the tick handlers they register.

The Grimoire opens at start-up (so a missing embedding model stops the golem
before READY, with the set-up command in the message). Gamma captures the
in-process market (``chain.mode = "simulated"``) or a node (``"rpc"``); Theta
assembles a workspace with the Context Governor and decides with the offline
tier or a model; Delta consolidates, curates, dreams and rewrites MEMORY.md
(``[consolidation]``), then maintains the stores. Mortality is not built yet,
and ``golem status`` says so.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

from golem.config import Config
from golem.runtime.daemon import SetupContext
from golem.runtime.handlers import HandlerRegistry

if TYPE_CHECKING:
    from golem.chain.capture import GammaCapture
    from golem.cognition.model import ModelCognition
    from golem.grimoire.grimoire import Grimoire

# What each loop will do once its part exists; shown by `golem status`.
PLANNED: dict[str, str] = {
    "gamma": "chain capture and triage (chain.mode = \"off\")",
    "theta": "context governor and cognition",
    "delta": "mortality: vitality and Thanatopsis (not built yet)",
}


def build_registry(config: Config) -> HandlerRegistry:
    """An empty registry; components fill it in ``setup``."""
    del config
    return HandlerRegistry()


async def setup(ctx: SetupContext, stack: AsyncExitStack) -> None:
    """Open this build's components and register their handlers."""
    from golem.grimoire.grimoire import Grimoire  # noqa: PLC0415 - heavy imports, run only
    from golem.grimoire.maintenance import GrimoireMaintenance  # noqa: PLC0415

    grimoire = await Grimoire.open(ctx.config, now=ctx.clock.now, events=ctx.events)
    stack.push_async_callback(grimoire.close)
    capture = await _setup_capture(ctx, stack, grimoire) if ctx.config.chain.mode != "off" \
        else None
    model = _open_model(ctx, stack, grimoire)
    await _setup_theta(ctx, stack, grimoire, capture, model)
    cons = ctx.config.consolidation
    maintenance = GrimoireMaintenance(
        grimoire, optimize_every=cons.optimize_every, decay=not cons.enabled,
        disk_cap_bytes=cons.disk_cap_mb << 20, version_retention_s=cons.version_retention_s)
    if cons.enabled:
        from golem.consolidation.delta import open_delta  # noqa: PLC0415

        ctx.registry.register("delta", await open_delta(
            ctx.config, grimoire, maintenance, stack, ctx.events, model=model))
    else:
        ctx.registry.register("delta", maintenance)


async def _setup_capture(ctx: SetupContext, stack: AsyncExitStack,
                         grimoire: Grimoire) -> GammaCapture:
    """Gamma's capture over the simulated market or a node over RPC."""
    import anyio.to_thread  # noqa: PLC0415

    from golem.chain.capture import GammaCapture  # noqa: PLC0415
    from golem.chain.cursor import CaptureStore  # noqa: PLC0415
    from golem.chain.rpc import open_reader  # noqa: PLC0415
    from golem.chain.source import SimulatedSource  # noqa: PLC0415
    from golem.chain.watch import WatchList  # noqa: PLC0415

    chain = ctx.config.chain
    store = await anyio.to_thread.run_sync(CaptureStore.open, ctx.config.data_dir / "chain")
    stack.callback(store.close)
    if chain.mode == "simulated":
        source = await anyio.to_thread.run_sync(
            SimulatedSource.create, ctx.config.golem.seed, ctx.clock.now(), store)
        capture = GammaCapture(grimoire, source.reader, source.watch, store,
                               ctx.config.data_dir, chain, ctx.events, market=source,
                               first_block=source.first_block)
    else:
        rpc = chain.rpc
        reader = open_reader(rpc.url, rpc.timeout_s, WatchList.build(rpc.addresses, rpc.events))
        stack.push_async_callback(reader.aclose)
        capture = GammaCapture(grimoire, reader, WatchList.build(rpc.addresses, rpc.events),
                               store, ctx.config.data_dir, chain, ctx.events,
                               first_block=None if rpc.start_block < 0 else rpc.start_block,
                               expected_chain_id=rpc.chain_id)
    ctx.registry.register("gamma", capture)
    return capture


def _open_model(ctx: SetupContext, stack: AsyncExitStack,
                grimoire: Grimoire) -> ModelCognition | None:
    """The model tiers, when configured: one instance, one spend ledger, shared by Theta's
    decisions and Delta's consolidation, rewrite and Loop 3 calls."""
    if ctx.config.cognition.provider != "anthropic":
        return None
    from golem.cognition.keys import load_api_key  # noqa: PLC0415
    from golem.cognition.model import LEDGER_FILE, ModelCognition  # noqa: PLC0415

    model = ModelCognition.open(ctx.config.cognition, load_api_key(ctx.config),
                                ctx.config.data_dir / "cognition" / LEDGER_FILE, grimoire,
                                ctx.clock.now)
    stack.push_async_callback(model.aclose)
    return model


async def _setup_theta(ctx: SetupContext, stack: AsyncExitStack, grimoire: Grimoire,
                       capture: GammaCapture | None, model: ModelCognition | None) -> None:
    """Theta's decision cycle: the Governor, the offline tier, the cage, the journal."""
    import anyio.to_thread  # noqa: PLC0415

    from golem.cognition.cage import Cage  # noqa: PLC0415
    from golem.cognition.journal import DecisionJournal  # noqa: PLC0415
    from golem.cognition.theta import ThetaCycle  # noqa: PLC0415
    from golem.governor.governor import ContextGovernor  # noqa: PLC0415
    from golem.governor.policy_store import PolicyStore  # noqa: PLC0415
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
    cfg = ctx.config.cage
    contracts = cfg.allowed_contracts or (tuple(capture.watch.addresses) if capture else ())
    cage = Cage(frozenset(contracts), frozenset(cfg.allowed_assets), cfg.max_notional_usd,
                cfg.max_position_usd, cfg.max_drawdown, cfg.max_approval)
    governor = ContextGovernor(grimoire, ctx.config.theta_context.total_budget)
    ctx.registry.register("theta", ThetaCycle(
        governor, journal, policies, cage, capture, ctx.events,
        loop2_every=ctx.config.theta_context.loop2_every, model=model,
        t2_curiosity=ctx.config.cognition.t2_curiosity))


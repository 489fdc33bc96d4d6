"""What this build runs: the components a daemon opens and the tick handlers they register.

Gamma's capture, Theta's cognition and Delta's consolidation plug in here as
they are built. Today the Grimoire opens at start-up (so a missing embedding
model stops the golem before READY, with the set-up command in the message)
and registers its store maintenance on Delta; with ``chain.mode = "simulated"``
the in-process market is deployed and Gamma captures it. Theta has nothing
registered yet, and ``golem status`` says so.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from golem.config import Config
from golem.runtime.daemon import SetupContext
from golem.runtime.handlers import HandlerRegistry

# What each loop will do once its part exists; shown by `golem status`.
PLANNED: dict[str, str] = {
    "gamma": "chain capture and triage (chain.mode = \"off\")",
    "theta": "context governor and cognition (not built yet)",
    "delta": "consolidation, curator, dreams, mortality (not built yet)",
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
    if ctx.config.chain.mode == "simulated":
        import anyio.to_thread  # noqa: PLC0415

        from golem.chain.capture import GammaCapture  # noqa: PLC0415
        from golem.chain.source import SimulatedSource  # noqa: PLC0415

        source = await anyio.to_thread.run_sync(
            SimulatedSource.create, ctx.config.golem.seed, ctx.clock.now())
        ctx.registry.register("gamma", GammaCapture(
            grimoire, source, ctx.config.data_dir, ctx.config.chain.escalation_queue))
    ctx.registry.register("delta", GrimoireMaintenance(grimoire))

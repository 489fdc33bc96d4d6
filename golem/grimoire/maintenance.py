"""Delta-tick store maintenance: decay and forgetting, ANN index refresh, compaction.

Consolidation, the curator and dreams are later parts; this is the upkeep the
stores need from day one. Decay runs every Delta tick (it is computed from each
entry's reinforcement point, so cadence does not change the result); the ANN
index is checked every tick and rebuilt only when the table has grown enough;
compaction and old-version cleanup run every ``optimize_every`` Delta ticks.
"""

from __future__ import annotations

from dataclasses import dataclass

from golem.grimoire.grimoire import Grimoire
from golem.runtime.handlers import TickContext, TickCounters


@dataclass
class GrimoireMaintenance:
    grimoire: Grimoire
    optimize_every: int = 144  # Delta ticks: daily at the default 10-minute interval
    name: str = "grimoire-maintenance"

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        decay = await self.grimoire.apply_decay()
        indexed = await self.grimoire.refresh_index()
        optimized = 0
        if ctx.tick % self.optimize_every == 0:
            await self.grimoire.optimize()
            optimized = 1
        return {"decayed": decay.decayed, "forgotten": decay.forgotten,
                "indexed": int(indexed), "optimized": optimized}

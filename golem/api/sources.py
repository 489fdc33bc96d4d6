"""What the operator surface reads from a running golem, in one place.

Wiring hands over the components it opened (the Grimoire, the model with its spend
ledger, the executor with its wallet); this module turns them into the plain readings the
metrics, the history and the dashboard need. Every read runs off the event loop or
through the component's own async API; none writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio.to_thread

from golem.config import Config
from golem.mortality.vitality import death_reserve_usd
from golem.runtime.loop import LoopHealth

if TYPE_CHECKING:
    from golem.actions.execution import Executor
    from golem.cognition.model import ModelCognition
    from golem.grimoire.grimoire import Grimoire

VITALITY_COMPONENTS = ("economic", "epistemic", "stochastic", "composite")


@dataclass
class Vitality:
    """The newest vitality reading seen on the event bus (None before the first)."""

    components: dict[str, float] = field(default_factory=dict)
    phase: str | None = None
    ttl_s: float | None = None


@dataclass(frozen=True)
class Money:
    """Model spend and the wallet, in USD; ``equity_usd`` None without a wallet."""

    spent_usd: float
    tokens: dict[str, int]
    equity_usd: float | None
    budget_remaining_usd: float
    pnl_usd: float


@dataclass
class Sources:
    config: Config
    now: Callable[[], float]
    loops: Callable[[], list[LoopHealth]]
    grimoire: Grimoire
    model: ModelCognition | None = None
    executor: Executor | None = None
    vitality: Vitality = field(default_factory=Vitality)

    async def money(self) -> Money:
        """Spend from the ledger, equity from the wallet marked to market. Budget remaining
        is what economic vitality counts: equity (or the starting budget without a wallet)
        less model spend less the death reserve. P&L is equity less the starting budget
        (0 without a wallet)."""
        mort = self.config.mortality
        spent, tokens = 0.0, {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
        if self.model is not None:
            ledger = self.model.ledger
            now = self.now()
            spent = (await anyio.to_thread.run_sync(lambda: ledger.totals(now=now))).lifetime_usd
            tokens = await anyio.to_thread.run_sync(ledger.token_totals)
        equity = await self.executor.equity_usd() if self.executor is not None else None
        base = equity if equity is not None else mort.starting_budget_usd
        reserve = death_reserve_usd(mort.starting_budget_usd, mort.reserve_floor_usd,
                                    mort.reserve_fraction)
        return Money(spent, tokens, equity, base - spent - reserve,
                     0.0 if equity is None else equity - mort.starting_budget_usd)

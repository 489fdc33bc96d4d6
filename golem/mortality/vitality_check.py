"""Delta's mortality check: compute vitality every Delta tick, record it, announce phase
changes, and start the death protocol when the golem is terminal.

Inputs come in as callables so the check does not know where they live: equity (wallet
plus positions marked to market; until the wallet exists, the starting budget), the
lifetime model spend from the spend ledger, and the decision journal's newest verdicts
(whether predictions beat the no-knowledge reference: `recent_verdicts`). Age is golem
time since the store's birth. The hazard draw is seeded by (golem seed, Delta tick), and a
tick's shock is stored with its sample, so a restart neither re-rolls nor loses it.

`on_terminal(cause)` is called once per process, on the first tick that reads Terminal
or finds a component at zero (after a restart it is called again: the death protocol
resumes from its own journal). The cause is the one recorded at the first Terminal
reading.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio.to_thread
import structlog

from golem.events import PhaseTransition, VitalityUpdated
from golem.governor.categories import Phase
from golem.mortality import vitality as v
from golem.mortality.vitality_store import TREND_POINTS, Sample, VitalityStore
from golem.runtime.handlers import TickContext, TickCounters

if TYPE_CHECKING:
    from golem.config import Config, MortalitySection

log = structlog.get_logger("golem.mortality")

EquitySource = Callable[[], Awaitable[float]]
OnTerminal = Callable[[str], Awaitable[None]]
DAY_S = 86_400.0


def constant_equity(usd: float) -> EquitySource:
    """Equity that never moves (before the wallet exists: the starting budget), so the
    economic component reflects model spend only."""
    async def equity() -> float:
        return usd
    return equity


@dataclass
class VitalityCheck:
    store: VitalityStore
    settings: MortalitySection
    equity: EquitySource
    seed: int
    spent: Callable[[], float] | None = None  # lifetime model spend, USD (blocking)
    # the newest N epistemic verdicts, oldest first (blocking;
    # DecisionJournal.recent_verdicts)
    verdicts: Callable[[int], Sequence[bool]] | None = None
    on_terminal: OnTerminal | None = None
    name: str = "vitality"
    terminal_called: bool = field(default=False, init=False)

    async def __call__(self, ctx: TickContext) -> TickCounters:
        now = ctx.clock.now()
        sample, previous, shock = await self.measure(ctx.tick, now)
        changed = previous is None or previous.phase is not sample.phase
        await anyio.to_thread.run_sync(lambda: self.store.record(
            sample, transition_from=previous.phase if previous else None, changed=changed,
            shock=shock))
        recent = await anyio.to_thread.run_sync(self.store.recent, TREND_POINTS)
        ttl = v.time_to_terminal([(s.t, s.composite) for s in recent])
        ctx.events.emit(VitalityUpdated(
            ctx.tick, round(sample.economic, 6), round(sample.epistemic, 6),
            round(sample.stochastic, 6), round(sample.composite, 6), sample.phase.value,
            sample.cause, sample.unproven, None if ttl is None else round(ttl, 1)))
        if changed:
            was = previous.phase.value if previous else None
            ctx.events.emit(PhaseTransition(ctx.tick, was, sample.phase.value,
                                            round(sample.composite, 6), sample.cause))
            log.info("vitality phase changed", from_phase=was, to_phase=sample.phase.value,
                     composite=round(sample.composite, 4), cause=sample.cause)
        if shock is not None:
            log.info("hazard shock taken", size=shock, stochastic=round(sample.stochastic, 4))
        dying = sample.phase is Phase.TERMINAL or \
            min(sample.economic, sample.epistemic, sample.stochastic) <= 0.0
        if dying:
            await self._terminal(ctx.tick, sample)
        return {"composite": round(sample.composite, 4),
                "phase": v.PHASE_RANK[sample.phase],
                "economic": round(sample.economic, 4),
                "epistemic": round(sample.epistemic, 4),
                "stochastic": round(sample.stochastic, 4),
                "shock": int(shock is not None),
                "terminal": int(dying)}

    async def measure(self, tick: int, now: float) -> tuple[Sample, Sample | None, float | None]:
        """This tick's sample, the previous one and the shock drawn (nothing written)."""
        cfg = self.settings
        equity = await self.equity()
        spent = await anyio.to_thread.run_sync(self.spent) if self.spent else 0.0
        verdicts = await anyio.to_thread.run_sync(self.verdicts, cfg.epistemic_window) \
            if self.verdicts else []
        previous, birth, shocks = await anyio.to_thread.run_sync(self._history, tick)
        since = now - (previous.t if previous else birth)
        shock = cfg.hazard_shock if cfg.hazard_shock > 0 and v.hazard_draw(
            v.hazard_rng(self.seed, tick), cfg.hazard_per_day, since) else None
        taken = [s for _, s in shocks] + ([shock] if shock is not None else [])
        lifespan = cfg.lifespan_days * DAY_S
        age = max(0.0, now - birth)
        reserve = v.death_reserve_usd(cfg.starting_budget_usd, cfg.reserve_floor_usd,
                                      cfg.reserve_fraction)
        ep = v.epistemic(verdicts, min_samples=cfg.epistemic_min_samples,
                         threshold=cfg.senescence_threshold,
                         checks_below=previous.senescent_streak if previous else 0)
        state = v.VitalityState(
            economic=v.economic(equity, spent, cfg.starting_budget_usd, reserve),
            epistemic=ep.value, stochastic=v.stochastic(age, lifespan, taken),
            unproven=ep.unproven, senescent=ep.senescent,
            hayflick_ratio=v.hayflick_ratio(age, lifespan), shock_factor=v.shock_factor(taken))
        streak = (previous.senescent_streak + 1 if previous else 1) if ep.senescent else 0
        sample = Sample(tick, now, state.economic, state.epistemic, state.stochastic,
                        state.composite, state.phase, state.cause(), state.unproven, streak,
                        state.hayflick_ratio, state.shock_factor)
        return sample, previous, shock

    def _history(self, tick: int) -> tuple[Sample | None, float, list[tuple[int, float]]]:
        return self.store.latest(before_tick=tick), self.store.birth(), \
            self.store.shocks(before_tick=tick)

    async def _terminal(self, tick: int, sample: Sample) -> None:
        await anyio.to_thread.run_sync(self.store.mark_terminal, tick, sample.cause)
        recorded = await anyio.to_thread.run_sync(self.store.terminal)
        cause = recorded[1] if recorded else sample.cause
        if self.terminal_called:
            return
        self.terminal_called = True
        log.warning("vitality is terminal: the death protocol starts", cause=cause,
                    composite=round(sample.composite, 4), tick=tick)
        if self.on_terminal is not None:
            await self.on_terminal(cause)


async def open_vitality(config: Config, now: float, stack: AsyncExitStack, *,
                        equity: EquitySource | None = None,
                        spent: Callable[[], float] | None = None,
                        on_terminal: OnTerminal | None = None) -> VitalityCheck:
    """Open the store (its birth is now, the first time) and a journal reader; both close
    with `stack`. The lead's wiring passes the wallet's equity and Thanatopsis."""
    from golem.cognition.journal import DecisionJournal  # noqa: PLC0415

    store = await anyio.to_thread.run_sync(VitalityStore.open, config.data_dir, now)
    stack.callback(store.close)
    journal = await anyio.to_thread.run_sync(DecisionJournal.open, config.data_dir)
    stack.callback(journal.close)
    cfg = config.mortality
    return VitalityCheck(store, cfg, equity or constant_equity(cfg.starting_budget_usd),
                         config.golem.seed, spent=spent, verdicts=journal.recent_verdicts,
                         on_terminal=on_terminal)

"""Delta's tick: the slow-learning stages in their order, each isolated from the others.

Every Delta tick: reinforcement from scored decisions (the testing effect), then
consolidation (replay, extraction, decay and eviction). Every ``curator_every``
ticks the curator cycle. When idle or on schedule, a dream cycle (NREM replay,
REM counterfactuals with Loop 3) followed by the working-memory rewrite. Then
store maintenance. A failing stage is logged and the others still run; the tick
then fails naming it, so the operator sees it in the tick log and ``golem status``.
Each stage that ran adds its wall milliseconds to the tick's counters (``<stage>_ms``).

Cursors (the last scored tick reinforced, the last dream) live in
data/consolidation/delta.db so a restart neither repeats nor skips them.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
import structlog

from golem.cognition.journal import JOURNAL_DB, JOURNAL_DIR, JournalReader
from golem.config import Config
from golem.errors import GolemError
from golem.events import EventBus
from golem.governor.policy_store import PolicyStore
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import EntryType, FactKind, Status
from golem.runtime.handlers import TickContext, TickCounters
from golem.runtime.state import StateStore, connect_durable, durable_write
from golem.runtime.stopwatch import ms_since

from .curator import CuratorParams
from .curator_cycle import CuratorCycle
from .dream_cycle import DreamCycle, DreamSettings
from .engine import ConsolidationEngine, EngineParams
from .loop3 import Loop3Settings
from .memory_cycle import WorkingMemoryCycle
from .model_assist import AssistSettings, ModelAssist
from .model_seams import ModelEvaluator, memory_writer
from .mutations import STATE_DIR, MutationLab
from .recall_feedback import RecallFeedback
from .replay import ReplayParams
from .retention import DAY_S, RetentionParams
from .retention_cycle import EpisodeRetention, RetentionReport

if TYPE_CHECKING:
    from golem.cognition.model import ModelCognition

log = structlog.get_logger("golem.consolidation.delta")

DELTA_DB = "delta.db"
_SCHEMA = "CREATE TABLE IF NOT EXISTS cursors (name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
MAX_INSIGHTS = 8  # handed to the working-memory rewrite per dream


class DeltaStageFailed(GolemError):
    """One or more Delta stages raised; the others ran."""


class Cursors:
    """Named integer cursors in one small durable SQLite file."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / DELTA_DB
        self._conn: sqlite3.Connection = connect_durable(self.path, "the Delta cursors",
                                                         _SCHEMA)

    def get(self, name: str) -> int | None:
        row = self._conn.execute("SELECT value FROM cursors WHERE name = ?", (name,)).fetchone()
        return None if row is None else int(row[0])

    def set(self, name: str, value: int) -> None:
        with durable_write(self._conn, self.path, "the Delta cursors") as conn:
            conn.execute("INSERT OR REPLACE INTO cursors VALUES (?, ?)", (name, value))

    def close(self) -> None:
        self._conn.close()


@dataclass
class DeltaCycle:
    engine: ConsolidationEngine
    feedback: RecallFeedback
    curator: CuratorCycle
    dreams: DreamCycle
    memory: WorkingMemoryCycle | None
    maintenance: Callable[[TickContext], Awaitable[TickCounters | None]]
    cursors: Cursors
    assist: ModelAssist | None = None  # the engine's model pass; its counters join ours
    retention: EpisodeRetention | None = None
    # run first in each tick, so that maintenance's slow start overlaps the stages before
    # it (GrimoireMaintenance.prepare: a due fold's process starts)
    prepare: Callable[[], Awaitable[Mapping[str, Any]]] | None = None
    idle_new_episodes: int = 50  # fewer new episodes than this in a tick counts as idle
    name: str = "delta"

    def __post_init__(self) -> None:
        self.dreams.last_tick = self.cursors.get("dream")

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        counters: dict[str, int | float] = {}
        failed: list[str] = []
        now = ctx.clock.now()

        async def stage(name: str, fn: Callable[[], Awaitable[Mapping[str, Any] | None]]) -> None:
            began = time.perf_counter()
            try:
                out = await fn()
            except Exception as exc:  # one stage's failure must not starve the others
                failed.append(f"{name}: {type(exc).__name__}: {exc}")
                log.error("delta stage failed", stage=name, error=type(exc).__name__,
                          message=str(exc)[:300], exc_info=not isinstance(exc, GolemError))
                return
            finally:
                counters[f"{name}_ms"] = ms_since(began)
            for key, value in (out or {}).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    counters[f"{name}_{key}"] = value

        if self.prepare is not None:
            await stage("prepare", self.prepare)
        await stage("feedback", self._feedback)
        new_episodes = 0

        async def consolidate() -> Mapping[str, Any]:
            nonlocal new_episodes
            report = await self.engine.run(ctx.tick, now)
            new_episodes = report.new_episodes
            return {"new": report.new_episodes, "replayed": report.replayed,
                    "created": report.created, "reinforced": report.reinforced,
                    "forgotten": report.forgotten,
                    **(self.assist.last.counters() if self.assist is not None else {})}

        await stage("consolidation", consolidate)
        if self.curator.due(ctx.tick):
            await stage("curator", lambda: self._curate(ctx.tick, now))
        if self.dreams.due(ctx.tick, idle=new_episodes < self.idle_new_episodes):
            await stage("dream", lambda: self._dream(ctx.tick, now))
            if self.memory is not None:
                await stage("memory", lambda: self._rewrite(now))
        if self.retention is not None and self.retention.due(ctx.tick):
            retention = self.retention
            await stage("retention", lambda: _counters(retention.run(ctx.tick, now)))
        await stage("maintenance", lambda: self.maintenance(ctx))
        if failed:
            raise DeltaStageFailed("; ".join(failed))
        return counters

    async def _feedback(self) -> Mapping[str, Any]:
        after = await anyio.to_thread.run_sync(self.cursors.get, "feedback") or 0
        report = await self.feedback.run(after)
        if report.last_tick > after:
            await anyio.to_thread.run_sync(self.cursors.set, "feedback", report.last_tick)
        return {"ticks": report.ticks, "useful": report.useful}

    async def _curate(self, tick: int, now: float) -> Mapping[str, Any]:
        report = await self.curator.run(tick, now)
        return report.counters()

    async def _dream(self, tick: int, now: float) -> Mapping[str, Any]:
        report = await self.dreams.run(tick, now)
        await anyio.to_thread.run_sync(self.cursors.set, "dream", tick)
        return {"staged": report.hypotheses_staged, "mutations": report.mutations_staged}

    async def _rewrite(self, now: float) -> Mapping[str, Any]:
        assert self.memory is not None
        insights = await self._insights(now)
        report = await self.memory.run(now, insights=insights)
        return {"accepted": int(report.accepted), "consumed": report.notes_consumed}

    async def _insights(self, now: float) -> list[tuple[str, str, float]]:
        """What the dream brought to mind: the newest dream hypotheses and the most confident
        knowledge consolidated since the last day, for Emerging Skills / Curiosity Gaps."""
        grimoire = self.memory.grimoire if self.memory is not None else None
        if grimoire is None:
            return []
        recent = await grimoire.entries(
            statuses=(Status.ACTIVE, Status.STAGED),
            where=lambda e: (e.entry_type is not EntryType.ANTI_KNOWLEDGE
                             and e.fact_kind is not FactKind.BASELINE  # statistics, not skills
                             and e.provenance.process in ("dream", "consolidation")
                             and (e.last_reinforced or e.created_at) >= now - 86_400.0))
        recent.sort(key=lambda e: (-e.confidence, e.id))
        return [(e.id, e.text, e.confidence) for e in recent[:MAX_INSIGHTS]]


async def _counters(report: Awaitable[RetentionReport]) -> Mapping[str, Any]:
    return (await report).counters()


def _mandate(config: Config) -> str:
    """The golem's standing orders, as MEMORY.md states them."""
    acting = (" and acted on within the policy cage (a dry run: nothing is sent)"
              if config.dry_run else " and acted on within the policy cage"
              ) if config.actions.enabled else ", checked by the policy cage, not executed " \
        "(actions are off)"
    return f"Learn the {config.chain.mode} market it watches; decisions are recorded{acting}"


async def open_delta(config: Config, grimoire: Grimoire,
                     maintenance: Callable[[TickContext], Awaitable[TickCounters | None]],
                     stack: AsyncExitStack, events: EventBus | None = None, *,
                     model: ModelCognition | None = None,
                     prepare: Callable[[], Awaitable[Mapping[str, Any]]] | None = None,
                     ) -> DeltaCycle:
    """Build Delta's stages from config; their files close with ``stack``. ``model`` (the
    one Theta uses, same ledger): consolidation, the MEMORY.md rewrite and Loop 3 consult
    its cheap tier; None: they run without one, and nothing pretends otherwise.
    ``prepare``: maintenance's first step, run at the start of each tick."""
    cons = config.consolidation
    model = model if cons.model_assist else None
    state_dir = config.data_dir / STATE_DIR
    journal_path = config.data_dir / JOURNAL_DIR / JOURNAL_DB
    cursors = await anyio.to_thread.run_sync(Cursors, state_dir)
    stack.callback(cursors.close)
    assist = None if model is None else ModelAssist(
        grimoire, model, settings=AssistSettings(max_run_usd=cons.model_max_run_usd),
        load=cursors.get, save=cursors.set)
    engine = await anyio.to_thread.run_sync(lambda: ConsolidationEngine(
        grimoire, state_dir, events=events, assist=assist, params=EngineParams(
            replay=ReplayParams(batch_size=cons.replay_budget,
                                recent_fraction=cons.recent_share),
            seed=config.golem.seed, decay=cons.forgetting,
            forget_at_random=cons.forget_at_random)))
    stack.callback(engine.close)
    lab = None
    if cons.loop3:
        state = await anyio.to_thread.run_sync(StateStore.open, config.data_dir)
        try:
            policies = PolicyStore.open(state)
        finally:
            state.close()
        stack.callback(policies.close)
        lab = await anyio.to_thread.run_sync(lambda: MutationLab(
            grimoire, policies, journal_path=journal_path, state_dir=state_dir,
            total_budget=config.theta_context.total_budget, settings=Loop3Settings(),
            events=events, evaluator=None if model is None else ModelEvaluator(
                model, grimoire, missing_weight=Loop3Settings().missing_weight)))
        stack.callback(lab.close)
    dreams = DreamCycle(grimoire, settings=DreamSettings(
        every_ticks=cons.dream_every, idle_min_ticks=cons.idle_dream_every),
        lab=lab, events=events)
    memory = WorkingMemoryCycle(
        grimoire, grimoire.memory_path, events, name=config.golem.name,
        mandate=_mandate(config),
        model=None if model is None else memory_writer(model),
    ) if cons.memory_rewrite else None
    return DeltaCycle(
        engine=engine,
        feedback=RecallFeedback(grimoire, JournalReader(journal_path),
                                useful_quality=cons.useful_quality),
        curator=CuratorCycle(grimoire, events=events, every=cons.curator_every,
                             params=CuratorParams(
                                 anti_knowledge_floor=grimoire.cfg.anti_knowledge_floor,
                                 quarantine_confidence=grimoire.cfg.quarantine_confidence,
                                 forget=cons.forgetting),
                             at_random=cons.forget_at_random, seed=config.golem.seed),
        dreams=dreams, memory=memory, maintenance=maintenance, prepare=prepare,
        cursors=cursors, assist=assist,
        retention=None if not cons.forgetting else EpisodeRetention(
            grimoire, cursor=engine.cursor, journal=JournalReader(journal_path),
            every=cons.retention_every, params=RetentionParams(
                horizon_s=cons.episode_horizon_days * DAY_S,
                failure_horizon_s=cons.failure_horizon_days * DAY_S,
                salient_horizon_s=cons.salient_horizon_days * DAY_S,
                max_episodes=cons.max_episodes, protected_share=cons.protected_share,
                max_per_run=cons.retention_max_per_run),
            at_random=cons.forget_at_random, seed=config.golem.seed))

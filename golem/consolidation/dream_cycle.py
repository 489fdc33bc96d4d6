"""The dream cycle (Delta, when idle or on a schedule): NREM replay, then REM counterfactuals.

NREM replays a utility-weighted sample of recent episodes against the BASELINE facts and
stages what surprised it as dream hypotheses: STAGED entries at confidence 0.2-0.3 with a
confirm window and an expiry, written with a content-derived id. Dreaming is not
consolidation (seed 001): it proposes, the curator decides. A hypothesis already stored is
never overwritten (Grimoire.remember on an existing id replaces the whole row, status and
all): new supporting episodes only grow its episode_count, which the curator counts as
reinforcement. Dreams only read episodes; their replay_count belongs to consolidation.
REM runs Loop 3 (mutations.MutationLab) when one is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import structlog

from golem.events import DreamCycleComplete, EventBus
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import (
    DecayClass,
    EntryType,
    FactKind,
    InsightCategory,
    MemoryType,
    Provenance,
    SemanticEntry,
    Status,
)

from . import dreams as d
from .mutations import MutationLab

log = structlog.get_logger("golem.consolidation.dreams")


@dataclass(frozen=True)
class DreamSettings:
    every_ticks: int = 12  # Delta ticks between scheduled dreams (~2 h at 10 min, seed 004)
    idle_min_ticks: int = 3  # when idle, dream at most this often
    lookback_s: float = 7 * 86_400.0  # episodes considered for replay
    window_limit: int = 5000  # recent episodes the replay sample is drawn from
    replay_k: int = 256  # episodes replayed per NREM pass
    threshold_z: float = 3.0  # |z| that makes a residual
    confirm_window_s: float = 86_400.0  # a hypothesis must be reinforced within this
    max_hypotheses: int = 20  # written per NREM pass
    weights: d.ReplayWeights = field(default_factory=d.ReplayWeights)


@dataclass(frozen=True)
class DreamReport:
    tick: int
    replayed: int
    compared: int
    residuals: int
    hypotheses_staged: int
    hypotheses_reinforced: int
    mutations_staged: int
    mutations_trialled: int
    mutations_validated: int
    mutations_refuted: int


class DreamCycle:
    def __init__(self, grimoire: Grimoire, *, settings: DreamSettings = DreamSettings(),
                 lab: MutationLab | None = None, events: EventBus | None = None,
                 last_tick: int | None = None) -> None:
        self.grimoire = grimoire
        self.s = settings
        self.lab = lab
        self._events = events
        self.last_tick = last_tick

    def due(self, tick: int, idle: bool) -> bool:
        """On schedule every ``every_ticks``; sooner when idle, but not more often than
        ``idle_min_ticks``. The first call after start is due."""
        if self.last_tick is None:
            return True
        since = tick - self.last_tick
        return since >= self.s.every_ticks or (idle and since >= self.s.idle_min_ticks)

    async def run(self, tick: int, now: float) -> DreamReport:
        self.last_tick = tick
        replayed, compared, found, staged, reinforced = await self.nrem(tick, now)
        rem = await self.lab.run(tick, now) if self.lab is not None else None
        report = DreamReport(
            tick, replayed, compared, found, staged, reinforced,
            rem.staged if rem else 0, rem.trialled if rem else 0,
            rem.validated if rem else 0, rem.refuted if rem else 0)
        log.info("dream cycle", **report.__dict__)
        if self._events is not None:
            self._events.emit(DreamCycleComplete(tick, replayed, found, staged,
                                                 report.mutations_staged))
        return report

    async def nrem(self, tick: int, now: float) -> tuple[int, int, int, int, int]:
        """(replayed, compared with a baseline, residuals, staged, reinforced)."""
        facts = await self.grimoire.entries(statuses=(Status.ACTIVE,), where=_is_baseline)
        baselines = [b for e in facts if (b := d.baseline_of(e.id, e.fact)) is not None]
        if not baselines:
            return 0, 0, 0, 0, 0
        episodes = await self.grimoire.episodes_window(now - self.s.lookback_s, now,
                                                       self.s.window_limit)
        utilities = {e.id: d.replay_utility(e.importance or 0.0, e.curiosity,
                                            now - e.observed_at, self.s.weights)
                     for e in episodes}
        chosen = set(d.sample_replay(utilities, self.s.replay_k, seed=tick))
        replay = [d.ReplayedEpisode(e.id, str(e.payload.get("address", "")).lower(),
                                    _str(e.payload.get("perceived_regime")) or "unknown",
                                    e.observed_at,
                                    d.episode_metrics(e.payload))
                  for e in episodes if e.id in chosen]
        compared, found = d.residuals(replay, baselines, self.s.threshold_z)
        hyps = d.hypotheses(self.grimoire.namespace, found, self.s.threshold_z,
                            self.s.confirm_window_s)
        hyps.sort(key=lambda h: (-h.max_abs_z, h.id))
        observed = {e.id: e.observed_at for e in episodes}
        staged = reinforced = 0
        for h in hyps[:self.s.max_hypotheses]:
            outcome = await self._write(h, now, [observed[i] for i in h.episode_ids])
            staged += outcome == "staged"
            reinforced += outcome == "reinforced"
        return len(replay), compared, len(found), staged, reinforced

    async def _write(self, h: d.Hypothesis, now: float, times: Sequence[float]) -> str:
        """"staged", "reinforced" or "" (already known, no longer open, or quarantined
        for contradicting a trusted entry)."""
        found = await self.grimoire.entries_by_ids([h.id])
        if found:
            old = found[0]
            new_ids = set(h.episode_ids) - set(old.source_episodes)
            open_ = old.status is Status.ACTIVE or (
                old.status is Status.STAGED and now < float(old.fact.get("expires_at", 0.0)))
            if not new_ids or not open_:
                return ""
            grown = replace(old, source_episodes=tuple(sorted({*old.source_episodes, *new_ids})),
                            episode_count=old.episode_count + len(new_ids),
                            observed_to=max([*times, old.observed_to or 0.0]),
                            confidence=max(old.confidence, min(h.confidence, d.MAX_CONFIDENCE)),
                            last_reinforced=now)
            await self.grimoire.write_entries([grown], checked=False)
            return "reinforced"
        ns = self.grimoire.namespace
        entry = SemanticEntry(
            id=h.id, namespace=ns, text=h.text, entry_type=EntryType.INSIGHT,
            memory_type=MemoryType.FACT, created_at=now, confidence=h.confidence,
            importance=0.3, category=InsightCategory.LIQUIDITY_CONDITIONS,
            fact=d.hypothesis_fact(h, now, self.s.confirm_window_s),
            episode_count=len(h.episode_ids), observed_from=min(times), observed_to=max(times),
            source_episodes=h.episode_ids, status=Status.STAGED,
            decay_class=DecayClass.TACTICAL, provenance=Provenance(author=ns, process="dream"))
        [stored] = await self.grimoire.write_entries([entry], checked=True)
        return "staged" if stored.status is Status.STAGED else ""


def _is_baseline(e: SemanticEntry) -> bool:
    return e.fact_kind is FactKind.BASELINE


def _str(value: object) -> str | None:
    return str(value) if value else None

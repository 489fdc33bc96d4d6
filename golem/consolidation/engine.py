"""The consolidation engine: one run per Delta tick (seed 000 ConsolidationEngine).

    engine = ConsolidationEngine(grimoire, data_dir / "consolidation", events=bus)
    report = await engine.run(tick, now)

A run reads the episodes captured since its cursor, passes them through the quality
gate, selects the replay set (recent by priority, older ones by Mattar-Daw utility;
their replay counts rise), clusters it when a model pass will read the clusters (only
then are the old replayed episodes and their vectors read), extracts fact candidates,
and reinforces the entries that already hold the same fact key or writes new ones
(contradictions quarantined). Conditional outcomes (``outcomes.py``) also read the
episodes of the outcome lookback and horizon before the cursor, as price history only:
an answer's outcome is counted in the run that first sees its horizon end, so a short
Delta interval still learns them. Causal relations are also linked in the causal graph
between the two pools' rate baselines. Then decay and eviction. A run with nothing new
replays nothing (old episodes are mixed into new ones, never re-counted alone) but still
decays. The cursor (the newest episode read) is committed last, in its own SQLite file,
so a crash mid-run repeats the run rather than skipping episodes.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import structlog

from golem.consolidation import clusters, extract, replay, verify
from golem.consolidation.baselines import pool_of, regime_of
from golem.consolidation.facts import FactCandidate, merge
from golem.events import ConsolidationCompleted, EventBus
from golem.grimoire.decay import DecayReport, seeded_pick
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import (
    Episode,
    MemoryMetadata,
    MemoryType,
    Provenance,
    SemanticEntry,
    Status,
)
from golem.runtime.state import connect_durable, durable_write

log = structlog.get_logger("golem.consolidation")

CURSOR_FILE = "consolidation.db"
BEFORE_ALL = -1e18  # the cursor before the first run: every episode is new
_SCHEMA = """
CREATE TABLE IF NOT EXISTS cursor (
    namespace TEXT PRIMARY KEY,
    observed_at REAL NOT NULL,
    runs INTEGER NOT NULL,
    updated_at REAL NOT NULL
);
"""


@dataclass(frozen=True)
class EngineParams:
    replay: replay.ReplayParams = field(default_factory=replay.ReplayParams)
    extract: extract.ExtractParams = field(default_factory=extract.ExtractParams)
    cluster_threshold: float = clusters.DEFAULT_THRESHOLD
    max_new_episodes: int = 50_000  # read per run; the rest waits for the next run
    old_pool: int = 5_000  # older verified episodes considered for interleaved replay
    old_horizon_s: float = 30 * 86400.0  # ... observed at most this long before the cursor
    max_window_s: float = 86400.0  # rate and lag statistics look at most this far back
    reinforce_step: float = 0.1  # confidence moves this share of the way to 1 per sighting
    seed: int = 0
    decay: bool = True  # False: entries never decay or fade out (consolidation.forgetting)
    forget_at_random: bool = False  # decay forgets as many, drawn at random


@dataclass(frozen=True)
class ConsolidationReport:
    tick: int
    new_episodes: int
    verified: int
    rejected: int
    replayed: int
    clusters: int
    created: int
    reinforced: int
    quarantined: int
    linked: int
    decayed: int
    forgotten: int
    window: tuple[float, float]
    duration_s: float


# After the statistics, before decay: (tick, now, replay clusters, replayed episodes by id)
# -> whether a model was consulted (model_assist.ModelAssist; it never raises).
Assist = Callable[[int, float, Sequence[clusters.Cluster], Mapping[str, Episode]],
                  Awaitable[bool]]


def entry_id(namespace: str, key: str) -> str:
    """A fact's entry id follows from its key: a rerun writes the same row."""
    return "fact-" + hashlib.sha256(f"{namespace}\n{key}".encode()).hexdigest()[:32]


class ConsolidationEngine:
    """Statistical consolidation over the Grimoire; a model only through ``assist``."""

    def __init__(self, grimoire: Grimoire, state_dir: Path, *,
                 params: EngineParams | None = None, events: EventBus | None = None,
                 predictions: Callable[[], Sequence[verify.PredictionOutcome]] | None = None,
                 timer: Callable[[], float] = time.perf_counter,
                 assist: Assist | None = None) -> None:
        self.grimoire = grimoire
        self.assist = assist
        self.params = params or EngineParams()
        self._events = events
        self._predictions = predictions
        self._timer = timer
        self._path = Path(state_dir) / CURSOR_FILE
        # What replay needs from an old episode's record and never changes (curiosity,
        # context), by id: the old pool is mostly the same episodes run after run, so
        # only those new to it are read in full. Kept for the current pool only.
        self._old_seen: dict[str, tuple[float, str]] = {}
        self._conn = connect_durable(self._path, "consolidation cursor", _SCHEMA)

    def close(self) -> None:
        self._conn.close()

    def cursor(self) -> float | None:
        """observed_at up to which episodes were consolidated; None before the first run."""
        row = self._conn.execute("SELECT observed_at FROM cursor WHERE namespace = ?",
                                 (self.grimoire.namespace,)).fetchone()
        return float(row[0]) if row else None

    def _commit_cursor(self, observed_at: float, now: float) -> None:
        with durable_write(self._conn, self._path, "consolidation cursor") as conn:
            conn.execute(
                "INSERT INTO cursor VALUES (?, ?, 1, ?) ON CONFLICT (namespace) DO UPDATE SET "
                "observed_at = excluded.observed_at, runs = runs + 1, "
                "updated_at = excluded.updated_at",
                (self.grimoire.namespace, observed_at, now))

    async def run(self, tick: int, now: float) -> ConsolidationReport:
        started = self._timer()
        g, p = self.grimoire, self.params
        cursor = await anyio.to_thread.run_sync(self.cursor)
        first = cursor is None
        after = BEFORE_ALL if cursor is None else cursor
        stamp = g.episodes_stamp()  # every id marked below is read after it
        new = await g.episodes_window(after, now, p.max_new_episodes)
        # The cursor moves to the newest episode read, not to now: Gamma may still be
        # writing episodes observed just before now.
        upto = max((e.observed_at for e in new), default=after)
        outcomes = list(self._predictions()) if self._predictions else []
        # The pure steps run in a worker thread: 10k episodes take CPU-seconds, and the
        # event loop must keep serving Gamma meanwhile.
        newly, rejected = await anyio.to_thread.run_sync(_gate, new, outcomes)
        if rejected:
            log.info("episodes failed the quality gate", count=len(rejected),
                     examples=rejected[:3])
        passed = set(newly)
        recent = [e for e in new if e.quality_verified or e.id in passed]
        start = min((e.observed_at for e in new), default=upto) if first else after
        window = (max(start, upto - p.max_window_s), upto)
        counts = {"replayed": 0, "clusters": 0, "created": 0, "reinforced": 0,
                  "quarantined": 0, "linked": 0}
        replay_ids: list[str] = []
        groups: list[clusters.Cluster] = []
        replayed: list[Episode] = []
        if recent:
            old = [] if first else await self._old_pool(after)
            context = [] if first else await g.episodes_window(
                after - p.extract.outcome_lookback_s - p.extract.outcome_horizon_s, after,
                p.max_new_episodes)
            candidates = [*old, *(_candidate(e, None if first else after) for e in recent)]
            replay_ids = await anyio.to_thread.run_sync(
                replay.select, candidates, now, p.replay, p.seed + tick)
            vectors: dict[str, Any] = {}
            if self.assist is not None:  # the clusters are the model pass's input only
                by_id = {e.id: e for e in recent}
                by_id.update({e.id: e for e in await g.episodes_by_ids(
                    [i for i in replay_ids if i not in by_id])})
                replayed = [by_id[i] for i in replay_ids if i in by_id]  # deleted: skipped
                replay_ids = [e.id for e in replayed]
                vectors = await g.episode_vectors(replay_ids)

            def learn() -> tuple[list[clusters.Cluster], list[FactCandidate]]:
                groups = clusters.cluster([(e.id, e.protocol, e.payload) for e in replayed],
                                          vectors, p.cluster_threshold) if replayed else []
                return groups, extract.extract(recent, window, p.extract, p.seed + tick,
                                               context=context,
                                               counted_after=None if first else after)

            groups, found = await anyio.to_thread.run_sync(learn)
            counts.update(await self._store(found, now))
            counts["replayed"], counts["clusters"] = len(replay_ids), len(groups)
        assisted = self.assist is not None and await self.assist(
            tick, now, groups, {e.id: e for e in replayed})
        await g.mark_episodes(verified=newly, replayed=replay_ids, as_of=stamp)
        pick = seeded_pick(f"decay-{p.seed}-{tick}") if p.forget_at_random else None
        decay = await g.apply_decay(pick) if p.decay else DecayReport(0, 0)
        if new:
            await anyio.to_thread.run_sync(self._commit_cursor, upto, now)
        report = ConsolidationReport(
            tick=tick, new_episodes=len(new), verified=len(newly), rejected=len(rejected),
            decayed=decay.decayed, forgotten=decay.forgotten, window=window,
            duration_s=self._timer() - started, **counts)
        self._emit(report, assisted)
        log.info("consolidation run", **{k: v for k, v in vars(report).items()
                                         if k != "window"})
        return report

    async def _old_pool(self, after: float) -> list[replay.ReplayCandidate]:
        """The older verified episodes replay may interleave (at most old_pool, observed
        within old_horizon_s before the cursor), as candidates: their ids, times,
        importance and replay counts read fresh, the rest remembered from one full read."""
        p = self.params
        refs = await self.grimoire.verified_episode_refs(after - p.old_horizon_s, after,
                                                         p.old_pool)
        missing = [r.id for r in refs if r.id not in self._old_seen]
        seen = {i: v for i in (r.id for r in refs) if (v := self._old_seen.get(i))}
        for e in await self.grimoire.episodes_by_ids(missing) if missing else []:
            seen[e.id] = (e.curiosity, _context(e))
        self._old_seen = seen
        return [replay.ReplayCandidate(r.id, r.observed_at, seen[r.id][0], r.importance,
                                       r.replay_count, recent=False, context=seen[r.id][1])
                for r in refs if r.id in seen]

    async def _store(self, found: Sequence[FactCandidate], now: float) -> dict[str, int]:
        """Reinforce what is already known, write what is new, link causal relations."""
        g, ns = self.grimoire, self.grimoire.namespace
        existing = await g.entries_by_fact_key([c.key for c in found])
        fresh: list[SemanticEntry] = []
        again: list[SemanticEntry] = []
        for cand in found:
            old = existing.get(cand.key)
            if old is None:
                fresh.append(self._new_entry(cand, ns, now))
                continue
            fact, text = extract.merge_fact(old.fact_kind, old.fact, cand)
            entry = merge(old, cand, now=now, step=self.params.reinforce_step,
                          merged_fact=fact, text=text)
            if entry.status == Status.PRUNED:  # forgotten, then seen again: relearned
                entry = replace(entry, status=Status.ACTIVE)
            again.append(entry)
        written = await g.write_entries(fresh, checked=True)
        await g.write_entries(again, checked=False)
        by_key = {e.fact.get("key"): e for e in [*written, *again]}
        linked = 0
        for cand in found:
            if cand.links is None:
                continue
            cause, effect = by_key.get(cand.links[0]), by_key.get(cand.links[1])
            if cause is None or effect is None or Status.QUARANTINED in (cause.status,
                                                                         effect.status):
                continue
            await g.link(cause.id, effect.id, lag_s=float(cand.fact["lag_s"]),
                         confidence=cand.confidence)
            linked += 1
        return {"created": len(written), "reinforced": len(again), "linked": linked,
                "quarantined": sum(e.status == Status.QUARANTINED for e in written)}

    def _new_entry(self, cand: FactCandidate, namespace: str, now: float) -> SemanticEntry:
        return SemanticEntry(
            id=entry_id(namespace, cand.key), namespace=namespace, text=cand.text,
            entry_type=cand.entry_type, memory_type=MemoryType.FACT, created_at=now,
            confidence=cand.confidence, importance=cand.importance,
            reinforced_confidence=cand.confidence, category=cand.category,
            fact_kind=cand.fact_kind, fact=dict(cand.fact), episode_count=cand.episodes,
            observed_from=cand.observed_from, observed_to=cand.observed_to,
            last_reinforced=now, source_episodes=cand.source_episodes,
            decay_class=cand.decay_class,
            metadata=MemoryMetadata(tokens=cand.tokens, protocols=cand.protocols),
            provenance=Provenance(author=namespace, process="consolidation", verified=True))

    def _emit(self, r: ConsolidationReport, assisted: bool) -> None:
        if self._events is not None:
            self._events.emit(ConsolidationCompleted(
                tick=r.tick, episodes_replayed=r.replayed, episodes_verified=r.verified,
                clusters=r.clusters, facts_created=r.created, facts_reinforced=r.reinforced,
                facts_quarantined=r.quarantined, decayed=r.decayed, forgotten=r.forgotten,
                model_assisted=assisted, duration_s=r.duration_s))


def _gate(new: Sequence[Episode], outcomes: Sequence[verify.PredictionOutcome],
          ) -> tuple[list[str], list[tuple[str, str]]]:
    """(ids that pass, (id, reason) of those that fail) among the not yet verified."""
    passed, failed = [], []
    for e in new:
        if e.quality_verified:
            continue
        ok, why = verify.verify(e, outcomes)
        if ok:
            passed.append(e.id)
        else:
            failed.append((e.id, why))
    return passed, failed


def _candidate(e: Episode, after: float | None) -> replay.ReplayCandidate:
    """An episode as a replay candidate; recent when observed after the cursor."""
    return replay.ReplayCandidate(
        e.id, e.observed_at, e.curiosity, e.importance, e.replay_count,
        recent=after is None or e.observed_at > after, context=_context(e))


def _context(e: Episode) -> str:
    return f"{pool_of(e)}|{regime_of(e)}"

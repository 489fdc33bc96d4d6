"""The Grimoire facade: the documented async API every other part uses.

    grimoire = await Grimoire.open(config, now=clock.now)
    entry = await grimoire.remember("Never LP in pools under $100k TVL", type="constraint",
                                    importance=0.9)
    result = await grimoire.recall("thin liquidity pools", k=5)
    if result.refused:
        ...  # memory has nothing close enough: do not guess
    for hit in result.hits:
        hit.score.final, hit.provenance, hit.uri
    await grimoire.close()

Stores are synchronous adapters (LanceDB, SQLite), private to this package; the
facade runs them in one worker thread at a time, and the embedder in its own, so
the event loop never blocks. Every write and read carries a namespace: writes go
to the golem's own, reads to its own plus explicit grants from config. The
knowledge-maintenance methods Delta and mortality use (scans, snapshots, atomic
read-modify-writes) are mixed in from knowledge.py.
"""

from __future__ import annotations

import functools
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import numpy as np
import structlog

from golem.config import Config, GrimoireSection
from golem.events import (
    EpisodesStored,
    Event,
    EventBus,
    GrimoireForget,
    GrimoireWrite,
    RecallCompleted,
)
from golem.grimoire import recall as rc
from golem.grimoire.agent_memory import render_recall
from golem.grimoire.decay import DecayReport, Pick, plan_and_apply_decay
from golem.grimoire.embedder import Embedder
from golem.grimoire.episode_files import EPISODES_DIR
from golem.grimoire.episodes import EpisodeStore
from golem.grimoire.errors import InvalidMemory, NamespaceRefused
from golem.grimoire.knowledge import KnowledgeMaintenance
from golem.grimoire.memory_file import MEMORY_FILE, read_text
from golem.grimoire.model_choice import load_embedder
from golem.grimoire.playbook import Playbook
from golem.grimoire.query_numbers import Anchor, read_intent
from golem.grimoire.query_words import (
    TimeWindow,
    content_words,
    mentions_time,
    time_window,
    topic_text,
)
from golem.grimoire.recall_engine import (
    RecallStores,
    anchor_window,
    run_recall,
    start_episode_text,
)
from golem.grimoire.records import (
    ENTRY_TYPE_FOR_MEMORY,
    CausalEdge,
    DecayClass,
    EntryType,
    Episode,
    EpisodeRef,
    InsightCategory,
    MemoryMetadata,
    MemoryType,
    Pad,
    Provenance,
    SemanticEntry,
    Status,
)
from golem.grimoire.scoring import REFUSAL_PHRASE
from golem.grimoire.scratch import ScratchLog, ScratchNote
from golem.grimoire.semantic import SemanticStore
from golem.grimoire.store_files import SEMANTIC_FILE
from golem.grimoire.validation import clean_text, enum_value, epoch, metadata_of, unit

log = structlog.get_logger("golem.grimoire")


T = TypeVar("T")


MEMORY_DIR = "memory"  # scratch.md, the working-memory write-ahead log
# The testing effect: confidence a recalled entry gains when it proved useful, loses when not.
REINFORCE_USEFUL = 0.05
REINFORCE_NOT_USEFUL = 0.02


class Grimoire(KnowledgeMaintenance):
    """Local memory: episodic (LanceDB), semantic (SQLite), working and procedural files.

    ``memory_path`` (MEMORY.md, which the dream cycle rewrites through memory_file) and
    ``playbook_path`` (PLAYBOOK.md as last written) are the files' paths, for readers
    that want them as they are on disk; the stores themselves are private.
    """

    def __init__(self, *, cfg: GrimoireSection, data_dir: Path, embedder: Embedder,
                 episodes: EpisodeStore, semantic: SemanticStore,
                 now: Callable[[], float], events: EventBus | None = None) -> None:
        self.cfg = cfg
        self.data_dir = data_dir
        self.embedder = embedder
        self._episodes = episodes
        self._semantic = semantic
        self._recall_stores = RecallStores(cfg, episodes, semantic)
        self.namespace = cfg.namespace
        self._now = now
        self._events = events
        self._stores = anyio.CapacityLimiter(1)
        # Episodes offered with defer=True, written before any other store call runs.
        self._pending: list[tuple[list[Episode], Any]] = []
        self._pending_lock = threading.Lock()
        # Working and procedural memory live as files beside the stores.
        self._scratch = ScratchLog(data_dir / MEMORY_DIR, cfg.max_text_chars)
        self._playbook = Playbook(data_dir)
        self.memory_path = data_dir / MEMORY_FILE
        self.playbook_path = self._playbook.path

    # --- lifecycle -------------------------------------------------------------------

    @classmethod
    async def open(cls, config: Config, now: Callable[[], float],
                   embedder: Embedder | None = None, events: EventBus | None = None, *,
                   owner: bool = True) -> Grimoire:
        """Load the model (golem.grimoire.model_choice says which graph) and open both stores
        (refusing a store built with another model).
        ``owner``: this process holds the data dir (the daemon, `golem die`); only an owner
        sweeps a killed write's leftovers, which beside a running golem would be its
        writes in flight (the memory CLI opens with False)."""
        cfg = config.grimoire
        if embedder is None:
            embedder = await anyio.to_thread.run_sync(load_embedder, config)
        data_dir = config.data_dir
        signature = embedder.signature

        def open_stores() -> tuple[EpisodeStore, SemanticStore]:
            data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            episodes = EpisodeStore.open(data_dir / EPISODES_DIR, signature,
                                         sweep_orphans=owner,
                                         index_min_rows=cfg.index_min_rows,
                                         index_cache_mb=cfg.lance_index_cache_mb,
                                         metadata_cache_mb=cfg.lance_metadata_cache_mb)
            semantic = SemanticStore.open(data_dir / SEMANTIC_FILE, signature.id, signature.dim)
            return episodes, semantic

        episodes, semantic = await anyio.to_thread.run_sync(open_stores)
        log.info("grimoire open", namespace=cfg.namespace, model=signature.model,
                 signature=signature.id, episodes=episodes.count(),
                 entries=semantic.count())
        return cls(cfg=cfg, data_dir=data_dir, embedder=embedder, episodes=episodes,
                   semantic=semantic, now=now, events=events)

    async def close(self) -> None:
        def close_stores() -> None:
            self._semantic.close()
            self._episodes.close()

        await self._store(close_stores)
        log.info("embedder totals", **self.embedder.totals())

    # --- writes ----------------------------------------------------------------------

    async def remember(
        self,
        text: str,
        *,
        type: MemoryType | str = MemoryType.FACT,
        importance: float = 0.5,
        namespace: str | None = None,
        timestamp: float | None = None,
        metadata: MemoryMetadata | Mapping[str, Any] | None = None,
        entry_type: EntryType | str | None = None,
        category: InsightCategory | str | None = None,
        decay_class: DecayClass | str = DecayClass.STRATEGIC,
        confidence: float | None = None,
        anchored: bool = False,
        pad: Pad | None = None,
        provenance: Provenance | None = None,
        staged: bool = False,
        entry_id: str | None = None,
    ) -> SemanticEntry:
        """Store a text memory; returns it as stored (QUARANTINED if it contradicts
        an anchored or high-confidence entry)."""
        ns = self._write_namespace(namespace)
        clean = self._clean_text(text)
        memory_type = enum_value(MemoryType, type, "type")
        importance = unit(importance, "importance")
        confidence = unit(confidence if confidence is not None else 0.5 + importance / 2,
                           "confidence")
        entry = SemanticEntry(
            id=entry_id or uuid.uuid4().hex,
            namespace=ns,
            text=clean,
            entry_type=(enum_value(EntryType, entry_type, "entry_type") if entry_type is not None
                        else ENTRY_TYPE_FOR_MEMORY[memory_type]),
            memory_type=memory_type,
            created_at=self._time(timestamp),
            confidence=confidence,
            importance=importance,
            category=(enum_value(InsightCategory, category, "category")
                      if category is not None else None),
            decay_class=enum_value(DecayClass, decay_class, "decay_class"),
            anchored=anchored,
            pad=pad or Pad(),
            metadata=metadata_of(metadata),
            provenance=provenance or Provenance(author=ns, process="api"),
            status=Status.STAGED if staged else Status.ACTIVE,
        )
        vector = (await self.embedder.aembed([clean]))[0]
        stored, report = await self._store(
            self._semantic.put_checked, entry, vector, self.cfg.quarantine_confidence, 0.75)
        log.info("memory remembered", id=stored.id, namespace=ns, type=memory_type.value,
                 status=stored.status.value, quarantined_against=list(report.against))
        self._emit(GrimoireWrite(
            id=stored.id, namespace=ns, entry_type=stored.entry_type.value,
            category=stored.category.value if stored.category else None,
            confidence=stored.confidence, source=stored.provenance.source.value,
            status=stored.status.value))
        return stored

    async def note(self, text: str, *, importance: float = 0.7,
                   source: str = "working_memory_note") -> ScratchNote:
        """working_memory_note: append to the scratch WAL (fsynced before returning) and
        index it at once, so recall finds it before the dream cycle consolidates it."""
        note = await anyio.to_thread.run_sync(
            self._scratch.append, self._clean_text(text), importance, self._now(), source)
        await self.remember(note.text, type=MemoryType.FACT, importance=note.importance,
                            decay_class=DecayClass.EPHEMERAL, entry_id=f"scratch-{note.id}",
                            provenance=Provenance(author=self.namespace, process=source))
        return note

    async def add_episodes(self, episodes: Sequence[Episode], *,
                           vectors: Any | None = None, defer: bool = False) -> int:
        """Embed and store episodes in one batched, idempotent write (an id already stored
        is left as it is); returns how many were offered. Each episode's shape (its text
        with the numbers masked, golem.grimoire.shapes) is embedded; its text, numbers
        and identifiers are indexed for full text beside it.
        ``vectors``: their embeddings, one row per episode, when the caller already has
        them from this golem's embedder (Embedder.embed_shapes; then nothing is embedded
        here); InvalidMemory for the wrong shape. ``defer``: embed now but write with the
        next store call (a read, another write, `flush_episodes`, `close`), in one write
        with every other deferred batch: every reader of this Grimoire still sees them,
        but they are durable only once `flush_episodes` (or that next call) has returned.
        A failed write keeps them pending for the next one."""
        if not episodes:
            return 0
        for episode in episodes:
            self._write_namespace(episode.namespace)
            self._clean_text(episode.text)
        if vectors is None:
            vectors = await self.embedder.aembed_shapes([e.text for e in episodes])
        if defer:
            with self._pending_lock:
                self._pending.append((list(episodes), vectors))
            offered = len({e.id for e in episodes})
        else:
            offered = await self._store(self._episodes.upsert, list(episodes), vectors)
        self._emit(EpisodesStored(self.namespace, offered))
        return offered

    async def flush_episodes(self) -> int:
        """Write the deferred episodes now (one write); returns how many ids were written.
        When it returns, every episode offered before the call is stored."""
        return await anyio.to_thread.run_sync(self._write_pending, limiter=self._stores)

    def _write_pending(self) -> int:
        """On the stores' thread: the deferred batches in one upsert; put back on failure."""
        with self._pending_lock:
            batches, self._pending = self._pending, []
        if not batches:
            return 0
        episodes = [e for batch, _ in batches for e in batch]
        vectors = np.concatenate([np.asarray(v, dtype=np.float32) for _, v in batches])
        try:
            written: int = self._episodes.upsert(episodes, vectors)
        except BaseException:
            with self._pending_lock:
                self._pending[:0] = batches
            raise
        return written

    async def write_entries(self, entries: Sequence[SemanticEntry], *,
                            checked: bool) -> list[SemanticEntry]:
        """Store fully formed entries (consolidation output) in one transaction.
        ``checked``: new claims, embedded in one batch and quarantined when they contradict
        a trusted entry (as remember does). Otherwise an upsert by id of an entry's new
        state (a reinforcement) that keeps its stored vector: the fact is the same, only
        its numbers moved; entries without one are embedded."""
        if not entries:
            return []
        for entry in entries:
            self._write_namespace(entry.namespace)
        clean = [replace(e, text=self._clean_text(e.text)) for e in entries]
        kept = {} if checked else await self._store(self._semantic.vectors,
                                                     [e.id for e in clean])
        missing = [e.text for e in clean if e.id not in kept]
        fresh = iter(await self.embedder.aembed(missing) if missing else [])
        vectors = [kept[e.id] if e.id in kept else next(fresh) for e in clean]

        def store() -> list[SemanticEntry]:
            if not checked:
                self._semantic.put(clean, vectors)
                return clean
            return self._semantic.put_checked_many(clean, vectors,
                                                   self.cfg.quarantine_confidence, 0.75)

        stored = await self._store(store)
        for entry in stored:
            self._emit(GrimoireWrite(
                id=entry.id, namespace=entry.namespace, entry_type=entry.entry_type.value,
                category=entry.category.value if entry.category else None,
                confidence=entry.confidence, source=entry.provenance.source.value,
                status=entry.status.value))
        return stored

    def episodes_stamp(self) -> int:
        """A stamp for mark_episodes' ``as_of``: it changes whenever episodes may have
        been removed (forgotten, orphaned by a reorg, a re-embedding's table switch)."""
        return self._episodes.removal_stamp()

    async def mark_episodes(self, *, verified: Sequence[str] = (),
                            replayed: Sequence[str] = (), as_of: int | None = None) -> None:
        """Set quality_verified on ``verified`` and replay_count += 1 on ``replayed``; ids
        no longer stored are skipped. ``as_of``: an episodes_stamp() taken before the
        reads that found every one of these ids; while none has been removed since, they
        are marked without looking each up again (an id the caller did not so read
        would be marked too)."""
        def mark() -> None:
            if verified:
                self._episodes.update(verified, as_of=as_of, quality_verified=True)
            if replayed:
                self._episodes.increment_replay(replayed, as_of=as_of)

        await self._store(mark)

    # --- reads -----------------------------------------------------------------------

    async def episodes_window(self, observed_after: float, until: float, limit: int,
                              ) -> list[Episode]:
        """This golem's episodes with observed_after < observed_at <= until, oldest first."""
        return await self._store(self._episodes.since, [self.namespace], observed_after,
                                 until, limit)

    async def verified_episode_refs(self, observed_after: float, until: float,
                                    limit: int) -> list[EpisodeRef]:
        """This golem's quality-verified episodes with observed_after < observed_at <=
        until, oldest first, as references (id, time, importance, replay count): what
        episodes_window would find among the verified ones, without their records.
        Past ``limit``, the first ``limit`` in storage order."""
        def read() -> list[EpisodeRef]:
            return self._episodes.since_refs([self.namespace], observed_after, until, limit,
                                             verified_only=True)

        return await self._store(read)

    async def episodes_by_ids(self, ids: Sequence[str]) -> list[Episode]:
        """This golem's episodes among ``ids``, in one store read (unknown ids skipped)."""
        found = await self._store(self._episodes.get, list(ids))
        return [e for e in found if e.namespace == self.namespace]

    async def episode_vectors(self, ids: Sequence[str]) -> dict[str, Any]:
        return await self._store(self._episodes.vectors, list(ids))

    async def entries_by_fact_key(self, keys: Sequence[str]) -> dict[str, SemanticEntry]:
        """This golem's entries by their ``fact["key"]`` identity."""
        return await self._store(self._semantic.by_fact_keys, self.namespace, list(keys))

    async def recall(
        self,
        query: str,
        *,
        k: int = 10,
        namespace: str | Sequence[str] | None = None,
        filters: rc.RecallFilters | None = None,
        pad: Pad | None = None,
    ) -> rc.RecallResult:
        """The one recall path. Returns Recall, or Refusal when memory has nothing close."""
        if not 1 <= k <= 1000:
            raise InvalidMemory(f"k: must be between 1 and 1000, got {k}")
        started = time.monotonic()
        result = await self._recall(query, k, namespace, filters, pad)
        self._emit(RecallCompleted(time.monotonic() - started, result.refused,
                                   0 if result.refused else len(result.hits)))
        return result

    async def _recall(self, query: str, k: int, namespace: str | Sequence[str] | None,
                      filters: rc.RecallFilters | None, pad: Pad | None) -> rc.RecallResult:
        clean = self._clean_text(query)
        namespaces = self._read_namespaces(namespace)
        if not content_words(clean):
            return rc.Refusal(query=clean, namespaces=namespaces, best_similarity=None,
                              threshold=self.cfg.refusal_threshold,
                              reason=f"the query has no content words. {REFUSAL_PHRASE}")
        now = self._now()
        intent = read_intent(clean)
        window = time_window(clean, now)
        # An event anchor's words name another event: when it is found, recall searches
        # without them.
        anchored = (await self._anchor_window(intent.anchor, namespaces, now)
                    if intent.anchor is not None and content_words(intent.rest) else None)
        searched = intent.rest if anchored is not None else clean
        window = anchored or window
        if window is not None:
            log.debug("recall query names a time window", phrase=window.phrase,
                      since=window.since, until=window.until)
        elif mentions_time(clean):
            log.debug("recall query's time words not read as a window; ignored")
        chosen = filters or rc.RecallFilters()
        if self._pending:  # the full-text search below runs beside the stores' thread
            await self.flush_episodes()
        # the query's function words left out ("When did ... last drop" asks about a drop):
        # what is embedded and what the full-text searches match
        topic = topic_text(searched)
        # The episode full-text search needs no vector: run it while the query embeds.
        episode_text = (start_episode_text(self._recall_stores, topic,
                                           max(self.cfg.candidates, k), namespaces, chosen)
                        if "episode" in chosen.kinds else None)
        vector = await self.embedder.aembed_query(topic)
        request = rc.RecallRequest(query=searched, vector=vector, k=k, namespaces=namespaces,
                                   filters=chosen, pad=pad, now=now,
                                   episode_text=episode_text, window=window, intent=intent)
        return await self._store(run_recall, self._recall_stores, request)

    async def _anchor_window(self, anchor: Anchor, namespaces: Sequence[str],
                             now: float) -> TimeWindow | None:
        """The window an event anchor names (recall_engine.anchor_window), or None (then
        logged at debug and ignored)."""
        vector = await self.embedder.aembed_query(anchor.words)
        window = await self._store(anchor_window, self._recall_stores, anchor, vector,
                                   namespaces, now)
        if window is None:
            log.debug("recall query's event anchor found no event; ignored",
                      phrase=anchor.phrase)
        else:
            log.debug("recall query names an event anchor", phrase=anchor.phrase,
                      since=window.since, until=window.until)
        return window

    async def get(self, id: str, namespace: str | None = None) -> SemanticEntry | Episode | None:
        namespaces = self._read_namespaces(namespace)

        def lookup() -> SemanticEntry | Episode | None:
            found: list[SemanticEntry | Episode] = [*self._semantic.get([id]),
                                                    *self._episodes.get([id])]
            return next((f for f in found if f.namespace in namespaces), None)

        return await self._store(lookup)

    async def stats(self, namespace: str | None = None) -> dict[str, Any]:
        namespaces = self._read_namespaces(namespace)

        def collect() -> dict[str, Any]:
            return {
                "namespace": namespaces[0],
                "signature": self.embedder.signature.id,
                "model": self.embedder.signature.model,
                "episodes": self._episodes.count(list(namespaces)),
                "entries": self._semantic.stats(namespaces[0]),
            }

        return await self._store(collect)

    async def entry_counts(self) -> dict[tuple[str, str], int]:
        """This golem's semantic entries per (status, entry type), in one store read."""
        return await self._store(self._semantic.counts_by_status_type, self.namespace)

    async def episode_count(self) -> int:
        """This golem's stored episodes."""
        return await self._store(self._episodes.count, [self.namespace])

    async def link(self, cause_id: str, effect_id: str, *, lag_s: float,
                   confidence: float) -> None:
        """Record cause -> effect between two of this golem's entries (the causal graph)."""
        edge = CausalEdge(self._write_namespace(None), cause_id, effect_id,
                          epoch(lag_s), unit(confidence, "confidence"))
        await self._store(self._semantic.add_edge, edge)

    async def causal_neighbors(self, entry_id: str, *, max_depth: int = 3,
                               direction: str = "out", namespace: str | None = None,
                               ) -> list[tuple[str, int, tuple[str, ...]]]:
        """Entries reachable through causal links within ``max_depth`` (bounded, cycle-safe)."""
        if direction not in ("out", "in", "both"):
            raise InvalidMemory(f"direction: must be out, in or both, got {direction!r}")
        namespaces = list(self._read_namespaces(namespace))
        return await self._store(self._semantic.causal_neighbors, entry_id, max_depth,
                                 namespaces, direction)

    # --- working and procedural memory (files beside the stores) ---------------------

    async def memory_text(self) -> str | None:
        """MEMORY.md as on disk (bytes that are not UTF-8 replaced), None before the
        first dream-cycle rewrite; StoreCorrupt when the file cannot be read."""
        return await anyio.to_thread.run_sync(
            lambda: read_text(self.memory_path, errors="replace"))

    async def scratch_notes(self) -> list[ScratchNote]:
        """The scratch notes not yet consumed, oldest first; damaged lines are logged
        and skipped."""
        return await anyio.to_thread.run_sync(self._scratch.read)

    async def consume_notes(self, ids: Sequence[str]) -> int:
        """Drop these notes from the scratch log in one atomic rewrite (damaged lines go
        too; unknown ids are ignored); returns how many notes were removed."""
        wanted = list(ids)
        return await anyio.to_thread.run_sync(lambda: self._scratch.consume(wanted))

    async def playbook_text(self) -> str:
        """PLAYBOOK.md; its latest snapshot if the file is gone; the starter playbook if
        there was never one. StoreCorrupt when it cannot be read as UTF-8."""
        return await anyio.to_thread.run_sync(self._playbook.read)

    async def rewrite_playbook(self, text: str, reason: str, *,
                               now: float | None = None) -> int:
        """Replace PLAYBOOK.md atomically, the new text kept first as the next numbered
        snapshot with ``reason`` and golem time ``now`` (default: the clock); returns the
        snapshot's number. WriterBusy when another writer holds the playbook; InvalidMemory
        for empty or oversized text, or a reason that is not one printable line."""
        at = self._time(now)
        return await anyio.to_thread.run_sync(self._playbook.rewrite, text, reason, at)

    # --- maintenance -----------------------------------------------------------------

    async def forget(self, id: str, reason: str, *, hard: bool = False,
                     namespace: str | None = None) -> bool:
        """Forget an entry or an episode; always logged with its reason."""
        ns = self._write_namespace(namespace)
        if not reason.strip():
            raise InvalidMemory("reason: forgetting needs a reason (it is logged)")

        def drop() -> bool:
            entries = [e for e in self._semantic.get([id]) if e.namespace == ns]
            if entries:
                self._semantic.forget([id], reason, self._now(), hard=hard)
                return True
            episodes = [e for e in self._episodes.get([id]) if e.namespace == ns]
            if episodes:
                self._episodes.delete([id])
                log.info("episode forgotten", id=id, namespace=ns, reason=reason)
                return True
            return False

        dropped = await self._store(drop)
        if dropped:
            self._emit(GrimoireForget([id], ns, reason))
        return dropped

    async def forget_episodes(self, ids: Sequence[str], reason: str) -> list[str]:
        """Delete a batch of this golem's episodes (episode retention); logged and emitted
        as one forgetting with its reason. Ids of other namespaces or already gone are
        skipped. Returns the ids deleted."""
        if not reason.strip():
            raise InvalidMemory("reason: forgetting needs a reason (it is logged)")
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []

        gone = await self._store(self._episodes.delete_owned, wanted, self.namespace)
        if gone:
            log.info("episodes forgotten", count=len(gone), namespace=self.namespace,
                     reason=reason, first=gone[0])
            self._emit(GrimoireForget(gone, self.namespace, reason))
        return gone

    async def drop_chain_episodes(self, chain_id: int, above_block: int) -> int:
        """Delete the episodes of blocks a chain reorg orphaned; logged like any forgetting."""
        ids = await self._store(self._episodes.delete_chain_above, chain_id, above_block)
        if ids:
            log.info("episodes of orphaned blocks forgotten", chain_id=chain_id,
                     above_block=above_block, count=len(ids))
            self._emit(GrimoireForget(ids, self.namespace, "chain reorg"))
        return len(ids)

    async def reinforce(self, id: str, *, useful: bool, namespace: str | None = None) -> None:
        """Testing effect: a recalled entry confirmed useful gains confidence (an unknown
        id changes nothing)."""
        await self.reinforce_many([(id, useful)], namespace=namespace)

    async def reinforce_many(self, items: Sequence[tuple[str, bool]], *,
                             namespace: str | None = None) -> list[bool]:
        """reinforce() for each (id, useful) in order, in one store call and one
        transaction; whether each entry was there (an unknown id changes nothing)."""
        self._write_namespace(namespace)
        if not items:
            return []
        changes = [(i, REINFORCE_USEFUL if useful else -REINFORCE_NOT_USEFUL, useful)
                   for i, useful in items]
        found = await self._store(self._semantic.reinforce_many, changes, self._now(),
                                  self.cfg.anti_knowledge_floor)
        return [entry is not None for entry in found]

    async def apply_decay(self, pick: Pick | None = None) -> DecayReport:
        """Ebbinghaus decay over this golem's entries; entries that fade below the
        eviction threshold are forgotten (soft, logged with the reason). ``pick``: as many
        are forgotten, drawn at random instead (decay.plan_and_apply_decay)."""
        report = await self._store(plan_and_apply_decay, self._semantic, self.cfg,
                                   self.namespace, self._now(), pick)
        if report.forgotten:
            log.info("memories forgotten by decay", count=report.forgotten,
                     namespace=self.namespace)
            self._emit(GrimoireForget(list(report.forgotten_ids), self.namespace,
                                      "decayed below the eviction threshold"))
        return report

    async def refresh_index(self, older_than_s: float = 3600.0, *,
                            max_versions: int | None = None) -> bool:
        """Fold new rows into the episode indexes and retrain the vector index when due
        (EpisodeStore.maybe_build_index); a fold drops versions older than
        ``older_than_s`` wall seconds or beyond the newest ``max_versions``. Returns
        whether it did any work."""
        return await self._store(functools.partial(
            self._episodes.maybe_build_index, older_than_s, max_versions=max_versions))

    async def prepare_fold(self) -> bool:
        """Start the episode store's next fold's process now if refresh_index would fold
        (EpisodeStore.prepare_fold): call it before other work, then refresh_index.
        Returns whether one was started."""
        return await self._store(self._episodes.prepare_fold)

    async def optimize(self, older_than_s: float = 3600.0, *,
                       max_versions: int | None = None) -> dict[str, Any]:
        """Compact the episode store; versions older than ``older_than_s`` wall seconds or
        beyond the newest ``max_versions`` go (old versions serve readers in other
        processes, e.g. `golem memory search`)."""
        stats = await self._store(functools.partial(
            self._episodes.optimize, older_than_s, max_versions=max_versions))
        log.info("episode store optimized", **stats)
        return stats

    def agent_memory(self, result: rc.RecallResult, budget_tokens: int) -> str:
        """The seed-003 ``<agent_memory>`` block for a recall, within ``budget_tokens``."""
        return render_recall(result, self._now(), budget_tokens)

    # --- helpers ---------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        if self._events is not None:
            self._events.emit(event)

    async def _store(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the stores' thread, serialised with every other store call
        (the stores' SQLite connection and LanceDB writer are not shared across threads),
        after the deferred episodes are written."""
        def call() -> T:
            self._write_pending()
            return fn(*args)

        return await anyio.to_thread.run_sync(call, limiter=self._stores)

    def _time(self, timestamp: float | None) -> float:
        return self._now() if timestamp is None else epoch(timestamp)

    def _clean_text(self, text: str) -> str:
        return clean_text(text, self.cfg.max_text_chars)

    def _write_namespace(self, namespace: str | None) -> str:
        ns = namespace or self.namespace
        if ns != self.namespace:
            raise NamespaceRefused(f"namespace {ns!r}: this golem writes only as "
                                   f"{self.namespace!r}")
        return ns

    def _read_namespaces(self, namespace: str | Sequence[str] | None) -> tuple[str, ...]:
        wanted = ([namespace] if isinstance(namespace, str)
                  else list(namespace) if namespace is not None else [self.namespace])
        allowed = {self.namespace, *self.cfg.read_grants}
        for ns in wanted:
            if ns not in allowed:
                raise NamespaceRefused(
                    f"namespace {ns!r}: no read grant (this golem is {self.namespace!r}; "
                    f"grants: {', '.join(self.cfg.read_grants) or 'none'}; "
                    "add it to grimoire.read_grants to allow)")
        if not wanted:
            raise InvalidMemory("namespace: at least one namespace is needed")
        return rc.namespaces_tuple(wanted)

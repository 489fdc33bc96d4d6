"""The Grimoire's knowledge-maintenance methods: what Delta and mortality read and change.

    snap = await grimoire.curation_snapshot(quarantine_limit=100_000)
    staged = await grimoire.entries(statuses=(Status.STAGED,),
                                    where=lambda e: e.provenance.process == "import")
    done = await grimoire.set_statuses_if_unchanged(changes, expected=before, now=now)

Mixed into ``Grimoire`` (grimoire.py holds the everyday API: remember, recall,
episodes, forgetting); these are the scans, snapshots and read-modify-writes of
consolidation, the curator, dreams and the death protocol. Every one runs on the
stores' thread as one store call, so a snapshot is consistent and a read-modify-write
is atomic with respect to every other store call (a recall's reinforcement cannot slip
in between). Reads cover this golem's own namespace only; writes change only entries
of its own namespace: entries of other namespaces are skipped, never changed. Caller
callbacks (``where``, ``revise``, ``until``, ``scan``) run on the stores' thread while
they hold it: they must be pure and quick, and must not call the Grimoire.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from golem.grimoire.errors import InvalidMemory
from golem.grimoire.records import Episode, EpisodeFacts, SemanticEntry, Status
from golem.grimoire.semantic_lifecycle import QuarantineRecord
from golem.grimoire.semantic_vectors import Vector
from golem.grimoire.validation import unit

if TYPE_CHECKING:
    from golem.grimoire.episodes import EpisodeStore
    from golem.grimoire.semantic import SemanticStore

T = TypeVar("T")
BEFORE_ALL = -1e18  # a time bound before every episode (the store wants finite bounds)


class StatusChange(Protocol):
    """A status to set on one entry, and why (the reason goes to the status log)."""

    @property
    def entry_id(self) -> str: ...

    @property
    def status(self) -> Status: ...

    @property
    def reason(self) -> str: ...


C = TypeVar("C", bound=StatusChange)


@dataclass(frozen=True)
class CurationSnapshot:
    """This golem's knowledge as the curator plans over it, read in one store call."""

    entries: list[SemanticEntry]  # own namespace, every status, in insertion order
    vectors: dict[str, Vector]  # the ACTIVE entries' stored vectors, by id
    quarantine: list[QuarantineRecord]  # own namespace's quarantine decisions, newest first


@dataclass(frozen=True)
class RetentionSnapshot:
    """What episode retention plans over, read in one store call."""

    total: int  # this golem's episodes in the store
    episodes: list[EpisodeFacts]  # those the plan reads (Grimoire.retention_snapshot)
    fact_sources: frozenset[str]  # episode ids cited as source_episodes by live entries


@dataclass(frozen=True)
class Neighbourhood:
    """What lies nearest one stored entry, by its stored vector, read in one store call."""

    vector: Vector  # the entry's own stored vector
    episodes: list[tuple[Episode, float]]  # own episodes by cosine, best first
    entries: list[tuple[SemanticEntry, float, Vector]]  # own ACTIVE entries, best first


class KnowledgeMaintenance:
    """Mixin of Grimoire (which provides the attributes declared here)."""

    namespace: str
    _semantic: SemanticStore
    _episodes: EpisodeStore
    _now: Callable[[], float]

    if TYPE_CHECKING:
        async def _store(self, fn: Callable[..., T], *args: Any) -> T:
            """Run ``fn(*args)`` on the stores' thread (Grimoire._store)."""
            raise NotImplementedError

    # --- reads -----------------------------------------------------------------------

    async def entries(self, *, statuses: Sequence[Status] | None = None,
                      where: Callable[[SemanticEntry], bool] | None = None,
                      ) -> list[SemanticEntry]:
        """This golem's entries (its own namespace, never granted ones) in insertion
        order: those with a status in ``statuses`` (every status when None) for which
        ``where`` holds. The store is streamed page by page and only the
        entries kept are held, so a narrow filter keeps the read small."""
        wanted = None if statuses is None else frozenset(statuses)

        def read() -> list[SemanticEntry]:
            return [e for e in self._semantic.iter_all()
                    if e.namespace == self.namespace
                    and (wanted is None or e.status in wanted)
                    and (where is None or where(e))]

        return await self._store(read)

    async def entries_by_ids(self, ids: Sequence[str]) -> list[SemanticEntry]:
        """This golem's entries among ``ids``, in the order asked, every status; unknown
        ids and other namespaces' entries are skipped."""
        return await self._store(self._own, ids)

    async def search_entries(self, vector: Any, k: int, *,
                             statuses: Sequence[Status] = (Status.ACTIVE,),
                             ) -> list[tuple[SemanticEntry, float]]:
        """Exact cosine top-``k`` among this golem's entries with a status in
        ``statuses``, best first, as (entry, cosine). Not recall: no lexical evidence,
        no scoring, no access counted. InvalidMemory for a vector of the wrong size."""
        return await self._store(self._search_entries, vector, k, statuses)

    async def curation_snapshot(self, quarantine_limit: int) -> CurationSnapshot:
        """Every entry of this golem, the ACTIVE ones' stored vectors and the newest
        ``quarantine_limit`` quarantine decisions of its namespace, in one store call."""
        def read() -> CurationSnapshot:
            entries = [e for e in self._semantic.iter_all() if e.namespace == self.namespace]
            vectors = self._semantic.vectors([e.id for e in entries
                                              if e.status == Status.ACTIVE])
            quarantine = self._semantic.quarantine_log(quarantine_limit, self.namespace)
            return CurationSnapshot(entries, vectors, quarantine)

        return await self._store(read)

    async def neighbourhood(self, entry_id: str, *, episodes: int,
                            entries: int) -> Neighbourhood | None:
        """The ``episodes`` episodes and ``entries`` ACTIVE entries of this golem nearest
        to the stored vector of one of its entries (the entry itself left out), each
        entry with its stored vector, in one store call. None when ``entry_id`` is not
        an entry of this golem."""
        def read() -> Neighbourhood | None:
            if not self._own([entry_id]):
                return None
            vector = self._semantic.vectors([entry_id]).get(entry_id)
            if vector is None:
                return None
            near_episodes = [(ep, s) for ep, s in self._episodes.search_vector(
                vector, episodes, [self.namespace]) if ep.namespace == self.namespace]
            near = [(e, s) for e, s in self._search_entries(vector, entries, (Status.ACTIVE,))
                    if e.id != entry_id]
            vectors = self._semantic.vectors([e.id for e, _ in near])
            return Neighbourhood(vector, near_episodes,
                                 [(e, s, vectors[e.id]) for e, s in near if e.id in vectors])

        return await self._store(read)

    async def episode_count(self) -> int:
        """How many episodes of this golem the store holds."""
        return await self._store(self._episodes.count, [self.namespace])

    async def scan_episodes(self, scan: Callable[[Iterator[list[Episode]]], T]) -> T:
        """``scan(batches)`` over every episode of this golem, streamed from the store in
        batches (a snapshot of the table at the first read) on the stores' thread; returns
        what ``scan`` returns. Only what ``scan`` keeps is held: fold, do not collect, on
        a large store."""
        def batches() -> Iterator[list[Episode]]:
            for batch in self._episodes.iter_all():
                own = [e for e in batch if e.namespace == self.namespace]
                if own:
                    yield own

        return await self._store(lambda: scan(batches()))

    async def retention_snapshot(self, *, until: Callable[[int], float], limit: int,
                                 fact_statuses: Sequence[Status]) -> RetentionSnapshot:
        """In one store call: how many episodes this golem holds (``total``); the facts
        retention weighs of its episodes observed at or before ``until(total)``, oldest
        first (past ``limit`` rows, the first ``limit`` in storage order, as
        episodes_window); and every episode id its
        entries with a status in ``fact_statuses`` cite as source_episodes (the entries
        are streamed; only the ids are kept)."""
        live = frozenset(fact_statuses)

        def read() -> RetentionSnapshot:
            total = self._episodes.count([self.namespace])
            episodes = self._episodes.facts([self.namespace], BEFORE_ALL, until(total), limit)
            sources = frozenset(s for e in self._semantic.iter_all()
                                if e.namespace == self.namespace and e.status in live
                                for s in e.source_episodes)
            return RetentionSnapshot(total, episodes, sources)

        return await self._store(read)

    # --- changes ---------------------------------------------------------------------

    async def set_status(self, ids: Sequence[str], status: Status, reason: str, *,
                         now: float | None = None) -> int:
        """Move this golem's entries among ``ids`` to ``status`` (PRUNED: forgotten,
        in the forget log), logged with ``reason`` at golem time ``now`` (default: the
        Grimoire's clock). Others' and unknown ids are skipped. Returns how many changed.
        InvalidMemory for an empty reason. Emits no event: the caller reports."""
        at = self._now() if now is None else now

        def change() -> int:
            own = [e.id for e in self._own(ids)]
            return self._semantic.set_status(own, status, reason, at) if own else 0

        return await self._store(change)

    async def set_statuses_if_unchanged(self, changes: Sequence[C],
                                        expected: Mapping[str, SemanticEntry], *,
                                        now: float | None = None) -> list[C]:
        """Compare and set: apply each change whose entry is stored exactly as
        ``expected[entry_id]`` (an entry that moved since, e.g. reinforced by a recall, or
        that is missing from ``expected`` is left alone), in one store call; statuses as
        set_status, logged with each change's reason at ``now``. Returns the changes
        applied, in the order given. Others' entries are never changed."""
        at = self._now() if now is None else now

        def change() -> list[C]:
            fresh = {e.id: e for e in self._own([c.entry_id for c in changes])}
            ready = [c for c in changes if c.entry_id in fresh
                     and fresh[c.entry_id] == expected.get(c.entry_id)]
            groups: dict[tuple[Status, str], list[str]] = {}
            for c in ready:
                groups.setdefault((c.status, c.reason), []).append(c.entry_id)
            for (status, reason), group in groups.items():
                self._semantic.set_status(group, status, reason, at)
            return ready

        return await self._store(change)

    async def revise_entries(self, ids: Sequence[str],
                             revise: Callable[[SemanticEntry], SemanticEntry],
                             ) -> list[SemanticEntry]:
        """Read this golem's entries among ``ids`` afresh, apply ``revise`` to each that
        is not PRUNED, and store those it changed, keeping their stored vectors, all in
        one store call (so a revision never overwrites a concurrent reinforcement).
        ``revise`` may change an entry's bookkeeping (facts, evidence, counts), not its
        id, namespace or text: InvalidMemory, and nothing stored, if it does (new text is
        a new claim: write_entries). Returns the entries stored. Emits no event."""
        def change() -> list[SemanticEntry]:
            fresh = [e for e in self._own(ids) if e.status != Status.PRUNED]
            changed = []
            for old in fresh:
                new = revise(old)
                if (new.id, new.namespace, new.text) != (old.id, old.namespace, old.text):
                    raise InvalidMemory(f"revise_entries: entry {old.id}: a revision keeps "
                                        "the id, namespace and text")
                if new != old:
                    changed.append(new)
            if changed:
                vectors = self._semantic.vectors([e.id for e in changed])
                self._semantic.put(changed, [vectors[e.id] for e in changed])
            return changed

        return await self._store(change)

    async def update_confidence(self, updates: Mapping[str, float], *,
                                now: float | None = None) -> int:
        """Set the confidence of this golem's entries (id -> confidence in [0, 1]) at
        golem time ``now``, keeping each one's decay reference (its pre-update confidence
        when it had none), in one transaction; InvalidMemory for a value outside [0, 1]
        (then nothing changes). Others' and unknown ids are skipped. Returns how many
        changed."""
        at = self._now() if now is None else now
        checked = {i: unit(c, f"confidence of {i}") for i, c in updates.items()}

        def change() -> int:
            own = {e.id for e in self._own(list(checked))}
            wanted = {i: c for i, c in checked.items() if i in own}
            return self._semantic.update_confidence(wanted, at) if wanted else 0

        return await self._store(change)

    # --- store-thread helpers --------------------------------------------------------

    def _own(self, ids: Sequence[str]) -> list[SemanticEntry]:
        """This golem's entries among ``ids``, in the order asked (others' skipped)."""
        return [e for e in self._semantic.get(list(ids)) if e.namespace == self.namespace]

    def _search_entries(self, vector: Any, k: int, statuses: Sequence[Status],
                        ) -> list[tuple[SemanticEntry, float]]:
        return self._semantic.search_vector(vector, k, [self.namespace],
                                            statuses=tuple(statuses))

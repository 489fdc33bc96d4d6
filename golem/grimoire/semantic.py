"""The semantic store: derived knowledge in SQLite (WAL, synchronous=FULL).

Exact cosine search over a per-namespace matrix cached in memory, BM25 lexical
search through FTS5, a causal graph with bounded traversal, contradiction
quarantine, and forgetting that is always logged. Every public write is one
transaction: nothing is ever half-written. Synchronous; the caller runs it in
one worker thread at a time.

This is the facade; the parts live in semantic_db (connection, transactions),
semantic_schema (tables, row codec), semantic_vectors (the cosine matrix),
semantic_fts (lexical search), semantic_graph (causal edges) and
semantic_lifecycle (reinforcement, status, forgetting and their logs).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from golem.grimoire import contradiction, semantic_fts, semantic_graph, semantic_lifecycle
from golem.grimoire.contradiction import ContradictionReport
from golem.grimoire.errors import InvalidMemory
from golem.grimoire.records import CausalEdge, EntryType, MemoryType, SemanticEntry, Status
from golem.grimoire.semantic_db import CHUNK, SemanticDb
from golem.grimoire.semantic_lexicon import Lexicon, Ranking
from golem.grimoire.semantic_lifecycle import ForgetRecord, QuarantineRecord
from golem.grimoire.semantic_schema import (
    FACT_KEY_SQL,
    SELECT_ENTRY,
    Filters,
    RowDecoder,
    SemanticStats,
    entry_row,
    row_entry,
    tags_text,
    where_clause,
)
from golem.grimoire.semantic_vectors import (
    Vector,
    VectorCache,
    blob,
    from_blob,
    vector_matrix,
)

__all__ = ["ForgetRecord", "QuarantineRecord", "SemanticStats", "SemanticStore"]


_KEY_PREFERENCE = (Status.ACTIVE, Status.STAGED, Status.QUARANTINED, Status.ARCHIVED,
                   Status.PRUNED)


# A hit on one of recall's lists: (entry id, the list's score, cosine to the query).
ListHit = tuple[str, float, float]
# search_lists remembers the answers to this many recent queries (Theta repeats a few).
LISTS_REMEMBERED = 16


class EntryLists(NamedTuple):
    """One want's lists from search_lists: the dense and the lexical top-k, and the BM25
    score of each dense hit outside the lexical top-k that matches the query."""

    dense: list[ListHit]
    lexical: list[ListHit]
    dense_lexical: dict[str, float]

class SemanticStore:
    """One connection; the facade serialises access (one worker thread at a time)."""

    def __init__(self, db: SemanticDb, path: Path, signature_id: str, dim: int):
        self._db = db
        self.path = path
        self.signature_id = signature_id
        self.dim = dim
        self._vectors = VectorCache(db.matrix_rows, str(path))
        self._decode = RowDecoder()
        self._tokenizer = semantic_fts.Tokenizer()
        self._lexicon: Lexicon | None = None  # loaded on the first lexical search of recall
        # search_lists' recent answers, by the vector cache's version and the query
        self._lists: OrderedDict[Hashable, tuple[EntryLists, ...]] = OrderedDict()

    @classmethod
    def open(cls, path: Path, signature_id: str, dim: int) -> SemanticStore:
        """Open or create; refuses a store built with another embedding signature."""
        if not signature_id or dim < 1:
            raise InvalidMemory(f"signature {signature_id!r} / dim {dim}: both must be set")
        return cls(SemanticDb.open(path, signature_id, dim), path, signature_id, dim)

    @staticmethod
    def stored_signature(path: Path) -> tuple[str, int] | None:
        """The (signature id, dim) a store was built with, read-only; None if no store."""
        return SemanticDb.stored_signature(path)

    def close(self) -> None:
        self._db.close()
        self._tokenizer.close()

    def __enter__(self) -> SemanticStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- entries -------------------------------------------------------------------

    def put(self, entries: Sequence[SemanticEntry], vectors: Any) -> int:
        """Insert or replace by id (idempotent), all in one transaction."""
        if not entries:
            return 0
        matrix = vector_matrix(vectors, len(entries), self.dim)
        rows = [entry_row(e, blob(v), self.signature_id)
                for e, v in zip(entries, matrix, strict=True)]
        with self._db.write() as conn:
            self._db.upsert(conn, entries, rows)
        self._vectors.put(entries, [row[-2] for row in rows], self.dim)
        self._lexicon_put(entries)
        return len(rows)

    def put_checked(
        self, entry: SemanticEntry, vector: Any, quarantine_confidence: float,
        similarity_threshold: float = contradiction.DEFAULT_SIMILARITY, *,
        now: float | None = None, candidates: int = 16,
    ) -> tuple[SemanticEntry, ContradictionReport]:
        """Store a new claim, QUARANTINED when it contradicts a trusted ACTIVE entry.

        The contradicted entries are never touched; the decision and its reasons go
        to the quarantine log in the same transaction.
        """
        vec = vector_matrix(vector, 1, self.dim)[0]
        near = [e for e, sim in self.search_vector(vec, candidates, [entry.namespace])
                if e.id != entry.id and sim >= similarity_threshold]
        stored_vectors = self.vectors([e.id for e in near])
        conflicts = contradiction.find_conflicts(
            entry, vec, [(e, stored_vectors[e.id]) for e in near], similarity_threshold)
        report = contradiction.quarantine_decision(entry, conflicts, quarantine_confidence)
        stored = replace(entry, status=Status.QUARANTINED) if report.quarantined else entry
        row = entry_row(stored, blob(vec), self.signature_id)
        with self._db.write() as conn:
            self._db.upsert(conn, [stored], [row])
            if report.quarantined:
                semantic_lifecycle.log_quarantine(
                    conn, stored, report, entry.created_at if now is None else now)
        self._vectors.put([stored], [row[-2]], self.dim)
        self._lexicon_put([stored])
        return stored, report

    def put_checked_many(
        self, entries: Sequence[SemanticEntry], vectors: Any, quarantine_confidence: float,
        similarity_threshold: float = contradiction.DEFAULT_SIMILARITY, *,
        candidates: int = 16,
    ) -> list[SemanticEntry]:
        """put_checked for a batch in one transaction (one fsync, not one per entry); each
        entry is also checked against the batch entries before it."""
        matrix = vector_matrix(vectors, len(entries), self.dim)
        stored_all: list[SemanticEntry] = []
        try:
            with self._db.write() as conn:
                for entry, vec in zip(entries, matrix, strict=True):
                    near = [e for e, sim in self.search_vector(vec, candidates,
                                                               [entry.namespace])
                            if e.id != entry.id and sim >= similarity_threshold]
                    stored_vectors = self.vectors([e.id for e in near])
                    conflicts = contradiction.find_conflicts(
                        entry, vec, [(e, stored_vectors[e.id]) for e in near],
                        similarity_threshold)
                    report = contradiction.quarantine_decision(entry, conflicts,
                                                               quarantine_confidence)
                    stored = (replace(entry, status=Status.QUARANTINED) if report.quarantined
                              else entry)
                    row = entry_row(stored, blob(vec), self.signature_id)
                    self._db.upsert(conn, [stored], [row])
                    if report.quarantined:
                        semantic_lifecycle.log_quarantine(conn, stored, report,
                                                          entry.created_at)
                    # Cached now so later batch entries are checked against this one.
                    self._vectors.put([stored], [row[-2]], self.dim)
                    self._lexicon_put([stored])
                    stored_all.append(stored)
        except BaseException:
            self._vectors.clear()  # the cache may hold rows that were rolled back
            self._lexicon = None
            raise
        return stored_all

    def get(self, ids: Sequence[str]) -> list[SemanticEntry]:
        """Entries in the order asked; unknown ids are skipped."""
        rows = self._db.by_ids(f"SELECT {SELECT_ENTRY} FROM entries WHERE id IN", ids)  # noqa: S608
        found = {row[0]: self._decode(row) for row in rows}
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    def by_fact_keys(self, namespace: str, keys: Sequence[str]) -> dict[str, SemanticEntry]:
        """Entries of ``namespace`` by ``fact["key"]`` (indexed). When several share a key
        (the curator merged duplicates), the liveliest status wins (active, staged,
        quarantined, archived, pruned), then the latest written."""
        found: dict[str, tuple[int, int, SemanticEntry]] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), CHUNK):
            chunk = unique[start:start + CHUNK]
            rows = self._db.query(
                f"SELECT {FACT_KEY_SQL}, seq, {SELECT_ENTRY} FROM entries "  # noqa: S608
                f"WHERE namespace = ? AND {FACT_KEY_SQL} IN ({', '.join('?' for _ in chunk)})",
                (namespace, *chunk))
            for key, seq, *row in rows:
                entry = row_entry(tuple(row))
                rank = (-_KEY_PREFERENCE.index(entry.status), int(seq), entry)
                if key not in found or rank[:2] > found[key][:2]:
                    found[key] = rank
        return {key: rank[2] for key, rank in found.items()}

    def vectors(self, ids: Sequence[str]) -> dict[str, Vector]:
        rows = self._db.by_ids("SELECT id, embedding FROM entries WHERE id IN", ids)
        return {row[0]: from_blob(row[1], self.dim, str(self.path)).copy() for row in rows}

    def confidence_times(self, ids: Sequence[str]) -> dict[str, float]:
        """When each confidence was last written (put, reinforce or a decay pass)."""
        return dict(self._db.by_ids("SELECT id, confidence_at FROM entries WHERE id IN", ids))

    def iter_all(self) -> Iterator[SemanticEntry]:
        """Every entry of every namespace and status, paged so writes may interleave."""
        last = 0
        while True:
            rows = self._db.query(f"SELECT seq, {SELECT_ENTRY} FROM entries WHERE seq > ? "  # noqa: S608
                                  "ORDER BY seq LIMIT ?", (last, CHUNK))
            if not rows:
                return
            last = rows[-1][0]
            yield from (row_entry(row[1:]) for row in rows)

    def count(self, namespaces: Sequence[str] | None = None, status: Status | None = None) -> int:
        where, args = where_clause(namespaces, ((status,) if status else None, None, None, None))
        return int(self._db.query(f"SELECT COUNT(*) FROM entries e WHERE {where}", args)[0][0])  # noqa: S608

    def stats(self, namespace: str) -> SemanticStats:
        def group(column: str) -> dict[str, int]:
            rows = self._db.query(f"SELECT COALESCE({column}, ''), COUNT(*) FROM entries "  # noqa: S608
                                  f"WHERE namespace = ? GROUP BY 1 ORDER BY 1", (namespace,))
            return {str(k): int(n) for k, n in rows}

        by_status = group("status")
        return SemanticStats(
            namespace=namespace, total=sum(by_status.values()), by_status=by_status,
            by_entry_type=group("entry_type"), by_memory_type=group("memory_type"),
            by_category=group("category"), by_decay_class=group("decay_class"),
            anchored=group("anchored").get("1", 0),
            edges=semantic_graph.edge_count(self._db, namespace))

    def counts_by_status_type(self, namespace: str) -> dict[tuple[str, str], int]:
        """Entries per (status, entry type) in ``namespace``."""
        rows = self._db.query("SELECT status, entry_type, COUNT(*) FROM entries "
                              "WHERE namespace = ? GROUP BY 1, 2", (namespace,))
        return {(str(s), str(t)): int(n) for s, t, n in rows}

    # ---- search --------------------------------------------------------------------

    def search_vector(
        self, vector: Any, k: int, namespaces: Sequence[str], *,
        statuses: Sequence[Status] | None = (Status.ACTIVE,),
        entry_types: Sequence[EntryType] | None = None,
        memory_types: Sequence[MemoryType] | None = None,
        min_importance: float | None = None,
    ) -> list[tuple[SemanticEntry, float]]:
        """Exact cosine top-k over the matching entries of the given namespaces only."""
        query = vector_matrix(vector, 1, self.dim)[0]
        hits = self._vectors.search(query, k, namespaces,
                                    (statuses, entry_types, memory_types, min_importance),
                                    self.dim)
        entries = {e.id: e for e in self.get([i for i, _ in hits])}
        return [(entries[i], s) for i, s in hits if i in entries]

    def search_text(
        self, query: str, k: int, namespaces: Sequence[str], *,
        statuses: Sequence[Status] | None = (Status.ACTIVE,),
        entry_types: Sequence[EntryType] | None = None,
        memory_types: Sequence[MemoryType] | None = None,
        min_importance: float | None = None,
    ) -> list[tuple[SemanticEntry, float]]:
        """BM25 over text and tags; the score is -bm25 (higher is better)."""
        return semantic_fts.search_text(self._db, query, k, namespaces,
                                        (statuses, entry_types, memory_types, min_importance))

    def search_lists(
        self, vector: Any, query: str, namespaces: Sequence[str],
        wants: Sequence[tuple[int, Filters]],
    ) -> list[EntryLists]:
        """For each (k, filters): the dense and the lexical top-k as (id, score, cosine),
        reading no entry (parsing one is the costly part): recall reads (get) the entries
        found while its episode searches run. Lexical hits get their cosine from the
        in-memory matrix, and dense hits outside the lexical top-k their BM25 score where
        they match the query (``dense_lexical``), so every hit carries both evidences.

        The lists are a function of the query and of what the vector cache and the lexicon
        mirror (entries' texts, tags, vectors, namespaces, statuses, types, importance),
        which change only together with the cache's version; so the answers to the last
        LISTS_REMEMBERED queries are kept at that version and given again while it holds
        (Theta asks the same few questions every tick; access counts and confidence, which
        change at every recall, are not in the lists). Each call gets its own copies."""
        query_vector = vector_matrix(vector, 1, self.dim)[0]
        key = (self._vectors.version, query, query_vector.tobytes(), tuple(namespaces),
               tuple((k, _filters_key(filters)) for k, filters in wants))
        remembered = self._lists.get(key)
        if remembered is None:
            remembered = tuple(self._search_lists(query_vector, query, namespaces, wants))
            self._lists[key] = remembered
            while len(self._lists) > LISTS_REMEMBERED:
                self._lists.popitem(last=False)
        else:
            self._lists.move_to_end(key)
        return [EntryLists(list(dense), list(lexical), dict(unlisted))
                for dense, lexical, unlisted in remembered]

    def _search_lists(self, query_vector: Vector, query: str, namespaces: Sequence[str],
                      wants: Sequence[tuple[int, Filters]]) -> list[EntryLists]:
        lexical, ranking = self._lexical_lists(query, namespaces, wants)
        found = [(self._vectors.search(query_vector, k, namespaces, filters, self.dim), hits)
                 for (k, filters), hits in zip(wants, lexical, strict=True)]
        lexical_ids = [i for _, lexical in found for i, _ in lexical]
        cosines = self._vectors.cosines(query_vector, lexical_ids, namespaces, self.dim)
        out = []
        for dense, hits in found:
            listed = {i for i, _ in hits}
            unlisted = {i: score for i, _ in dense if i not in listed and ranking is not None
                        and (score := ranking.score(i)) > 0}
            out.append(EntryLists([(i, s, s) for i, s in dense],
                                  [(i, s, cosines.get(i, 0.0)) for i, s in hits], unlisted))
        return out

    def _lexical_lists(self, query: str, namespaces: Sequence[str],
                       wants: Sequence[tuple[int, Filters]]
                       ) -> tuple[list[list[tuple[str, float]]], Ranking | None]:
        """search_text's (id, score) top-k for each want, from the in-memory lexicon: one
        scoring pass for all of them, then each want's filters in rank order; and that
        pass (None when FTS5 itself had to match the query)."""
        phrases = self._tokenizer.phrases(query)
        if phrases is None:  # a word FTS5 splits into a phrase: let FTS5 match it
            return [semantic_fts.search_text_ids(self._db, query, k, namespaces, filters)
                    for k, filters in wants], None
        if not namespaces:
            return [[] for _ in wants], None
        ranking = self._loaded_lexicon().search(phrases)
        admitted = [self._vectors.admitted(namespaces, filters, self.dim) if k > 0 else set()
                    for k, filters in wants]
        out: list[list[tuple[str, float]]] = [[] for _ in wants]
        open_wants = [i for i, (k, _) in enumerate(wants) if k > 0]
        for entry_id, _namespace, score in ranking:
            if not open_wants:
                break
            for i in list(open_wants):
                if entry_id in admitted[i]:
                    out[i].append((entry_id, score))
                    if len(out[i]) == wants[i][0]:
                        open_wants.remove(i)
        return out, ranking

    def _loaded_lexicon(self) -> Lexicon:
        if self._lexicon is None:
            rows = self._db.query("SELECT id, namespace, text, tags FROM entries ORDER BY seq",
                                  ())
            lexicon = Lexicon()
            for start in range(0, len(rows), CHUNK):
                chunk = rows[start:start + CHUNK]
                texts = self._tokenizer.tokenize([r[2] for r in chunk])
                tags = self._tokenizer.tokenize([r[3] for r in chunk])
                lexicon.put((r[0], r[1], t, g) for r, t, g in zip(chunk, texts, tags,
                                                                  strict=True))
            self._lexicon = lexicon
        return self._lexicon

    def _lexicon_put(self, entries: Sequence[SemanticEntry]) -> None:
        """Keep a loaded lexicon current after a committed put (what entries_fts indexes)."""
        if self._lexicon is None or not entries:
            return
        texts = self._tokenizer.tokenize([e.text for e in entries])
        tags = self._tokenizer.tokenize([tags_text(e) for e in entries])
        self._lexicon.put((e.id, e.namespace, t, g) for e, t, g in zip(entries, texts, tags,
                                                                       strict=True))

    # ---- lifecycle -----------------------------------------------------------------

    def record_access(self, ids: Sequence[str], now: float) -> int:
        return semantic_lifecycle.record_access(self._db, ids, now)

    def reinforce_many(self, items: Sequence[tuple[str, float, bool]], now: float,
                       anti_knowledge_floor: float) -> list[SemanticEntry | None]:
        """Testing effect, for each (id, confidence_delta, useful) in order, in one
        transaction (an entry named twice is reinforced twice); None where unknown.

        Useful recall raises confidence (at most 1) and makes it the new decay reference
        (``reinforced_confidence`` at ``last_reinforced = now``). Only the delta's size
        counts; ``useful`` gives the direction. Not useful: confidence drops by it
        (anchored entries keep theirs; anti-knowledge never falls below the floor this
        way) and the decay reference is scaled by the same factor, so the next decay pass
        continues from the lowered value.
        """
        return semantic_lifecycle.reinforce_many(self._db, items, now,
                                                 anti_knowledge_floor=anti_knowledge_floor)

    def update_confidence(self, updates: Mapping[str, float], now: float) -> int:
        """Batch write of decayed confidences (validated first: all or nothing).

        The decay reference is kept: an entry without ``reinforced_confidence`` gets its
        pre-decay confidence there, so later passes never compound.
        """
        return semantic_lifecycle.update_confidence(self._db, updates, now)

    def set_status(self, ids: Sequence[str], status: Status, reason: str, now: float) -> int:
        """Move entries to a status, logged with the reason; PRUNED goes through forget."""
        if status == Status.PRUNED:
            return self.forget(ids, reason, now)
        changed = semantic_lifecycle.set_status(self._db, ids, status, reason, now)
        self._vectors.set_status(changed, status.value)
        return len(changed)

    def forget(self, ids: Sequence[str], reason: str, now: float, hard: bool = False) -> int:
        """Prune (or, when hard, delete with its edges); always appended to forget_log."""
        gone = semantic_lifecycle.forget(self._db, ids, reason, now, hard)
        if hard:
            self._vectors.drop(gone)
            if self._lexicon is not None:
                self._lexicon.drop(gone)
        else:
            self._vectors.set_status(gone, Status.PRUNED.value)
        return len(gone)

    def forget_log(self, limit: int = 50, namespace: str | None = None) -> list[ForgetRecord]:
        return semantic_lifecycle.forget_log(self._db, limit, namespace)

    def quarantine_log(self, limit: int = 50,
                       namespace: str | None = None) -> list[QuarantineRecord]:
        return semantic_lifecycle.quarantine_log(self._db, limit, namespace)

    def replace_vectors(self, vectors_by_id: Mapping[str, Any], new_signature_id: str,
                        new_dim: int | None = None) -> int:
        """Swap every vector and the store's signature in one transaction (re-embed).

        Must cover exactly the stored entries, all of one dimension (``new_dim`` when
        given, which also re-dimensions an empty store); otherwise nothing changes.
        """
        dims = {np.asarray(v).size for v in vectors_by_id.values()}
        dim = new_dim or (dims.pop() if len(dims) == 1 else self.dim)
        if dims - {dim} or not new_signature_id or dim < 1:
            raise InvalidMemory(f"replace_vectors: need one signature and one dimension, got "
                                f"{new_signature_id!r} and dimensions {sorted(dims)}")
        rows = [(blob(vector_matrix(v, 1, dim)[0]), new_signature_id, i)
                for i, v in vectors_by_id.items()]
        with self._db.write() as conn:
            ids = {row[0] for row in conn.execute("SELECT id FROM entries")}
            if set(vectors_by_id) != ids:
                raise InvalidMemory(
                    f"replace_vectors: must cover exactly the {len(ids)} stored entries "
                    f"({len(ids - set(vectors_by_id))} missing, "
                    f"{len(set(vectors_by_id) - ids)} unknown)")
            conn.executemany("UPDATE entries SET embedding = ?, signature = ? WHERE id = ?", rows)
            conn.executemany("UPDATE meta SET value = ? WHERE key = ?",
                             [(json.dumps(new_signature_id), "signature_id"), (str(dim), "dim")])
        self.signature_id, self.dim = new_signature_id, dim
        self._vectors.clear()
        self._lexicon = None
        return len(rows)

    # ---- causal graph --------------------------------------------------------------

    def add_edge(self, edge: CausalEdge) -> None:
        """Upsert cause -> effect; both ends must be entries of the edge's namespace."""
        semantic_graph.add_edge(self._db, edge)

    def edges_from(self, entry_id: str) -> list[CausalEdge]:
        return semantic_graph.edges_from(self._db, entry_id)

    def causal_neighbors(
        self, entry_id: str, max_depth: int, namespaces: Sequence[str], direction: str = "out",
    ) -> list[tuple[str, int, tuple[str, ...]]]:
        """(entry id, depth, path from entry_id) within max_depth (capped at MAX_DEPTH)."""
        return semantic_graph.causal_neighbors(self._db, entry_id, max_depth, namespaces,
                                               direction)


def _filters_key(filters: Filters) -> Hashable:
    """``filters`` as a key: its sequences as tuples."""
    statuses, entry_types, memory_types, min_importance = filters
    return (*(None if allowed is None else tuple(allowed)
              for allowed in (statuses, entry_types, memory_types)), min_importance)

"""The semantic store's schema (migrations) and row codec; no I/O here.

Every SemanticEntry field has a column. What recall filters on (namespace,
status, types, category, decay class, anchored) is a plain indexed column;
nested values (fact, metadata, provenance, source episodes) are JSON. An FTS5
table over the text and the metadata tags is kept in sync by triggers, so it
changes in the same transaction as the row it indexes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from golem.grimoire.errors import InvalidMemory, StoreCorrupt
from golem.grimoire.records import (
    DecayClass,
    EntryType,
    FactKind,
    InsightCategory,
    MemoryMetadata,
    MemoryType,
    Pad,
    Provenance,
    SemanticEntry,
    Source,
    Status,
    finite_unit,
)
from golem.runtime import jsondecode

# What a search may be narrowed by: (statuses, entry types, memory types, minimum
# importance); None means "any".
Filters = tuple[Sequence[Status] | None, Sequence[EntryType] | None,
                Sequence[MemoryType] | None, float | None]

# entries_fts's tokenizer; the in-memory lexicon tokenizes with the same (semantic_fts).
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"
# The expression the fact-key index is built on; queries must repeat it verbatim.
FACT_KEY_SQL = "json_extract(fact, '$.key')"

# One tuple of statements per migration (triggers hold ';', so no splitting on it).
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE entries (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            namespace TEXT NOT NULL,
            text TEXT NOT NULL,
            tags TEXT NOT NULL,
            entry_type TEXT NOT NULL,
            memory_type TEXT NOT NULL,
            created_at REAL NOT NULL,
            confidence REAL NOT NULL,
            confidence_at REAL NOT NULL,
            importance REAL NOT NULL,
            reinforced_confidence REAL,
            category TEXT,
            fact_kind TEXT,
            fact TEXT NOT NULL,
            episode_count INTEGER NOT NULL,
            observed_from REAL,
            observed_to REAL,
            last_reinforced REAL,
            last_accessed REAL,
            access_count INTEGER NOT NULL,
            successful_recalls INTEGER NOT NULL,
            source_episodes TEXT NOT NULL,
            status TEXT NOT NULL,
            decay_class TEXT NOT NULL,
            anchored INTEGER NOT NULL,
            pad_pleasure REAL NOT NULL,
            pad_arousal REAL NOT NULL,
            pad_dominance REAL NOT NULL,
            metadata TEXT NOT NULL,
            provenance TEXT NOT NULL,
            embedding BLOB NOT NULL,
            signature TEXT NOT NULL
        )""",
        "CREATE INDEX entries_ns_status ON entries (namespace, status)",
        "CREATE INDEX entries_entry_type ON entries (namespace, entry_type)",
        "CREATE INDEX entries_memory_type ON entries (namespace, memory_type)",
        "CREATE INDEX entries_category ON entries (namespace, category)",
        "CREATE INDEX entries_decay_class ON entries (namespace, decay_class)",
        "CREATE INDEX entries_anchored ON entries (namespace, anchored)",
        "CREATE VIRTUAL TABLE entries_fts USING fts5(text, tags, content='entries', "
        "content_rowid='seq', tokenize='" + FTS_TOKENIZE + "')",
        """CREATE TRIGGER entries_ai AFTER INSERT ON entries BEGIN
            INSERT INTO entries_fts (rowid, text, tags) VALUES (new.seq, new.text, new.tags);
        END""",
        """CREATE TRIGGER entries_ad AFTER DELETE ON entries BEGIN
            INSERT INTO entries_fts (entries_fts, rowid, text, tags)
            VALUES ('delete', old.seq, old.text, old.tags);
        END""",
        """CREATE TRIGGER entries_au AFTER UPDATE OF text, tags ON entries BEGIN
            INSERT INTO entries_fts (entries_fts, rowid, text, tags)
            VALUES ('delete', old.seq, old.text, old.tags);
            INSERT INTO entries_fts (rowid, text, tags) VALUES (new.seq, new.text, new.tags);
        END""",
        """CREATE TABLE causal_edges (
            namespace TEXT NOT NULL,
            cause_id TEXT NOT NULL,
            effect_id TEXT NOT NULL,
            lag_s REAL NOT NULL,
            confidence REAL NOT NULL,
            PRIMARY KEY (namespace, cause_id, effect_id)
        )""",
        "CREATE INDEX causal_by_cause ON causal_edges (cause_id)",
        "CREATE INDEX causal_by_effect ON causal_edges (effect_id)",
        """CREATE TABLE forget_log (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            entry_id TEXT NOT NULL, namespace TEXT NOT NULL, excerpt TEXT NOT NULL,
            reason TEXT NOT NULL, at REAL NOT NULL, hard INTEGER NOT NULL
        )""",
        """CREATE TABLE status_log (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            entry_id TEXT NOT NULL, namespace TEXT NOT NULL, old_status TEXT NOT NULL,
            new_status TEXT NOT NULL, reason TEXT NOT NULL, at REAL NOT NULL
        )""",
        """CREATE TABLE quarantine (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            entry_id TEXT NOT NULL, namespace TEXT NOT NULL,
            against TEXT NOT NULL, reasons TEXT NOT NULL, at REAL NOT NULL
        )""",
        "CREATE INDEX quarantine_by_entry ON quarantine (entry_id)",
    ),
    # 2: consolidation finds "the same fact" by its identity key (fact["key"]).
    (
        f"CREATE INDEX entries_fact_key ON entries (namespace, {FACT_KEY_SQL})",
    ),
)

# Tables (and the entries columns) a healthy store must have; checked at open.
REQUIRED_TABLES = ("meta", "entries", "entries_fts", "causal_edges", "forget_log",
                   "status_log", "quarantine")

# Columns read back into a SemanticEntry, in row order.
ENTRY_COLUMNS = (
    "id", "namespace", "text", "entry_type", "memory_type", "created_at", "confidence",
    "importance", "reinforced_confidence", "category", "fact_kind", "fact", "episode_count",
    "observed_from", "observed_to", "last_reinforced", "last_accessed", "access_count",
    "successful_recalls", "source_episodes", "status", "decay_class", "anchored",
    "pad_pleasure", "pad_arousal", "pad_dominance", "metadata", "provenance",
)
# Columns written by put: the entry, plus derived and vector columns.
WRITE_COLUMNS = (*ENTRY_COLUMNS, "tags", "confidence_at", "embedding", "signature")
SELECT_ENTRY = ", ".join(ENTRY_COLUMNS)
_LAST_ACCESSED = ENTRY_COLUMNS.index("last_accessed")
_ACCESS_COUNT = ENTRY_COLUMNS.index("access_count")
_ACCESS_LO, _ACCESS_HI = sorted((_LAST_ACCESSED, _ACCESS_COUNT))
UPSERT_ENTRY = (
    f"INSERT INTO entries ({', '.join(WRITE_COLUMNS)}) "  # noqa: S608 (our own names)
    f"VALUES ({', '.join('?' for _ in WRITE_COLUMNS)}) ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in WRITE_COLUMNS if c != "id")
)


@dataclass(frozen=True)
class SemanticStats:
    namespace: str
    total: int
    by_status: dict[str, int]
    by_entry_type: dict[str, int]
    by_memory_type: dict[str, int]
    by_category: dict[str, int]  # "" counts entries without a category
    by_decay_class: dict[str, int]
    anchored: int
    edges: int


def unit(value: float, name: str) -> float:
    """finite_unit, reported as InvalidMemory."""
    try:
        return finite_unit(value, name)
    except ValueError as exc:
        raise InvalidMemory(str(exc)) from None


def select_entry(alias: str) -> str:
    return ", ".join(f"{alias}.{c}" for c in ENTRY_COLUMNS)


def where_clause(namespaces: Sequence[str] | None,
                 filters: Filters) -> tuple[str, tuple[Any, ...]]:
    """SQL filter on alias ``e`` (our own column names; values are bound parameters)."""
    statuses, entry_types, memory_types, min_importance = filters
    clauses, args = ["1"], list[Any]()
    for column, values in (("namespace", namespaces), ("status", statuses),
                           ("entry_type", entry_types), ("memory_type", memory_types)):
        if values is not None:
            clauses.append(f"e.{column} IN ({', '.join('?' for _ in values) or 'NULL'})")
            args += [str(v) for v in values]
    if min_importance is not None:
        clauses.append("e.importance >= ?")
        args.append(min_importance)
    return " AND ".join(clauses), tuple(args)


def _json(value: Any, name: str) -> str:
    try:
        return json.dumps(value, allow_nan=False, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidMemory(f"{name}: must be JSON-safe finite data: {exc}") from None


def tags_text(entry: SemanticEntry) -> str:
    """What the lexical index sees besides the text: protocols, tokens, strategy id."""
    meta = entry.metadata
    return " ".join([*meta.protocols, *meta.tokens, meta.strategy_id or ""]).strip()


def validate(entry: SemanticEntry) -> None:
    """Refuse what would store garbage; raises InvalidMemory naming the field."""
    if not entry.id or not entry.namespace:
        raise InvalidMemory(f"entry {entry.id!r}: id and namespace must be non-empty")
    if not entry.text.strip():
        raise InvalidMemory(f"entry {entry.id}: text is empty")
    unit(entry.confidence, f"entry {entry.id}: confidence")
    unit(entry.importance, f"entry {entry.id}: importance")
    if entry.reinforced_confidence is not None:
        unit(entry.reinforced_confidence, f"entry {entry.id}: reinforced_confidence")


def entry_row(entry: SemanticEntry, blob: bytes, signature: str) -> tuple[Any, ...]:
    """The upsert parameters for one entry, in WRITE_COLUMNS order."""
    validate(entry)
    meta, prov = entry.metadata, entry.provenance
    return (
        entry.id, entry.namespace, entry.text, entry.entry_type.value, entry.memory_type.value,
        entry.created_at, entry.confidence, entry.importance, entry.reinforced_confidence,
        entry.category.value if entry.category else None,
        entry.fact_kind.value if entry.fact_kind else None,
        _json(entry.fact, "fact"), entry.episode_count, entry.observed_from, entry.observed_to,
        entry.last_reinforced, entry.last_accessed, entry.access_count,
        entry.successful_recalls, _json(list(entry.source_episodes), "source_episodes"),
        entry.status.value, entry.decay_class.value, int(entry.anchored), *entry.pad.as_tuple(),
        _json({"tokens": list(meta.tokens), "chains": list(meta.chains),
               "protocols": list(meta.protocols), "strategy_id": meta.strategy_id}, "metadata"),
        _json({"source": prov.source.value, "generation": prov.generation,
               "author": prov.author, "process": prov.process,
               "bloodstain": prov.bloodstain, "verified": prov.verified}, "provenance"),
        tags_text(entry),
        entry.created_at if entry.last_reinforced is None else entry.last_reinforced,
        blob, signature,
    )


class RowDecoder:
    """row_entry remembered by the row: recall reads the same entries on every query, and
    a decode costs far more than hashing the row. The key is the row without its access
    columns (last_accessed, access_count), which every recall rewrites on the entries it
    returns: a row that differs only there gets the remembered entry with the row's access
    values (dataclasses.replace, the same entry row_entry would give). Any other change is
    another key, so nothing goes stale; past ``size`` rows the oldest are dropped.
    Entries are frozen and shared: callers must not mutate their ``fact`` dicts."""

    def __init__(self, size: int = 2048) -> None:
        self._size = size
        self._seen: dict[tuple[Any, ...], SemanticEntry] = {}
        self._lock = threading.Lock()

    def __call__(self, row: tuple[Any, ...]) -> SemanticEntry:
        key = row[:_ACCESS_LO] + row[_ACCESS_LO + 1:_ACCESS_HI] + row[_ACCESS_HI + 1:]
        accessed, count = row[_LAST_ACCESSED], row[_ACCESS_COUNT]
        with self._lock:
            entry = self._seen.get(key)
        if entry is not None:
            if entry.last_accessed == accessed and entry.access_count == count:
                return entry
            entry = replace(entry, last_accessed=accessed, access_count=count)
        else:
            entry = row_entry(row)
        with self._lock:
            if key not in self._seen and len(self._seen) >= self._size:
                del self._seen[next(iter(self._seen))]
            self._seen[key] = entry
        return entry


def row_entry(row: tuple[Any, ...]) -> SemanticEntry:
    """Decode a row selected with SELECT_ENTRY; raises StoreCorrupt on bad values."""
    try:
        r = dict(zip(ENTRY_COLUMNS, row, strict=True))
        category, kind = r["category"], r["fact_kind"]
        meta, prov = jsondecode.loads(r["metadata"]), jsondecode.loads(r["provenance"])
        return SemanticEntry(
            id=r["id"], namespace=r["namespace"], text=r["text"],
            entry_type=EntryType(r["entry_type"]), memory_type=MemoryType(r["memory_type"]),
            created_at=r["created_at"], confidence=r["confidence"], importance=r["importance"],
            reinforced_confidence=r["reinforced_confidence"],
            category=InsightCategory(category) if category else None,
            fact_kind=FactKind(kind) if kind else None, fact=jsondecode.loads(r["fact"]),
            episode_count=r["episode_count"], observed_from=r["observed_from"],
            observed_to=r["observed_to"], last_reinforced=r["last_reinforced"],
            last_accessed=r["last_accessed"], access_count=r["access_count"],
            successful_recalls=r["successful_recalls"],
            source_episodes=tuple(jsondecode.loads(r["source_episodes"])),
            status=Status(r["status"]), decay_class=DecayClass(r["decay_class"]),
            anchored=bool(r["anchored"]),
            pad=Pad(r["pad_pleasure"], r["pad_arousal"], r["pad_dominance"]),
            metadata=MemoryMetadata(
                tokens=tuple(meta["tokens"]), chains=tuple(meta["chains"]),
                protocols=tuple(meta["protocols"]), strategy_id=meta["strategy_id"]),
            provenance=Provenance(
                source=Source(prov["source"]), generation=prov["generation"],
                author=prov["author"], process=prov["process"],
                bloodstain=prov["bloodstain"], verified=prov["verified"]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreCorrupt(f"semantic entry {row[0]!r}: undecodable row: {exc}") from None

"""What happens to semantic entries after they are stored, and the logs that keep it.

Access counts, reinforcement (the testing effect), decayed confidences, status
changes and forgetting. Every status change and every forgetting is logged with
its reason in the same transaction, as is every quarantine decision; the logs
outlive the entries they describe. Callers keep the vector cache in step.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from golem.grimoire import semantic_schema as schema
from golem.grimoire.contradiction import ContradictionReport
from golem.grimoire.errors import InvalidMemory
from golem.grimoire.records import EntryType, FactKind, SemanticEntry, Status
from golem.grimoire.semantic_db import SemanticDb
from golem.grimoire.semantic_schema import SELECT_ENTRY, row_entry

EXCERPT_CHARS = 200


@dataclass(frozen=True)
class ForgetRecord:
    """One forgetting, kept after the entry itself is gone."""

    entry_id: str
    namespace: str
    excerpt: str
    reason: str
    at: float
    hard: bool


@dataclass(frozen=True)
class QuarantineRecord:
    """Why a claim was quarantined: the trusted entries it contradicted."""

    entry_id: str
    namespace: str
    against: tuple[str, ...]
    reasons: tuple[str, ...]
    at: float


def record_access(db: SemanticDb, ids: Sequence[str], now: float) -> int:
    """Access counts feed importance; losing the last few to a power cut is harmless, so
    this commit skips its fsync and leaves the WAL's checkpoint to a durable write
    (SemanticDb.write; every recall makes it)."""
    with db.write(durable=False) as conn:
        cur = conn.executemany("UPDATE entries SET access_count = access_count + 1, "
                               "last_accessed = ? WHERE id = ?",
                               [(now, i) for i in dict.fromkeys(ids)])
    return cur.rowcount


def reinforce_many(db: SemanticDb, items: Sequence[tuple[str, float, bool]], now: float, *,
                   anti_knowledge_floor: float) -> list[SemanticEntry | None]:
    """See SemanticStore.reinforce_many: (id, delta, useful) in order, one transaction."""
    checked = [(i, schema.unit(abs(d), "confidence_delta"), useful) for i, d, useful in items]
    floor = schema.unit(anti_knowledge_floor, "anti_knowledge_floor")
    out: list[SemanticEntry | None] = []
    with db.write() as conn:
        for entry_id, delta, useful in checked:
            out.append(_reinforce_one(conn, entry_id, now, delta, useful=useful, floor=floor))
    return out


def _reinforce_one(conn: sqlite3.Connection, entry_id: str, now: float, delta: float, *,
                   useful: bool, floor: float) -> SemanticEntry | None:
    rows = conn.execute(f"SELECT {SELECT_ENTRY} FROM entries WHERE id = ?",  # noqa: S608
                        (entry_id,)).fetchall()
    if not rows:
        return None
    entry = row_entry(rows[0])
    before = entry.confidence
    reference = before if entry.reinforced_confidence is None else \
        entry.reinforced_confidence
    if useful:
        after = min(1.0, before + delta)
        updated = replace(entry, confidence=after, reinforced_confidence=after,
                          last_reinforced=now,
                          successful_recalls=entry.successful_recalls + 1)
    else:
        after = before if entry.anchored else max(0.0, before - delta)
        if (entry.entry_type == EntryType.ANTI_KNOWLEDGE
                or entry.fact_kind == FactKind.ANTI_KNOWLEDGE):
            after = max(after, min(before, floor))
        scaled = min(1.0, reference * after / before) if before > 0 else after
        updated = replace(entry, confidence=after, reinforced_confidence=scaled)
    conn.execute("UPDATE entries SET confidence = ?, reinforced_confidence = ?, "
                 "confidence_at = ?, last_reinforced = ?, successful_recalls = ? "
                 "WHERE id = ?",
                 (updated.confidence, updated.reinforced_confidence, now,
                  updated.last_reinforced, updated.successful_recalls, entry_id))
    return updated


def update_confidence(db: SemanticDb, updates: Mapping[str, float], now: float) -> int:
    """See SemanticStore.update_confidence: validated first, all or nothing."""
    rows = [(schema.unit(c, f"confidence of {i}"), now, i) for i, c in updates.items()]
    with db.write() as conn:
        cur = conn.executemany(
            "UPDATE entries SET reinforced_confidence = "
            "COALESCE(reinforced_confidence, confidence), confidence = ?, "
            "confidence_at = ? WHERE id = ?", rows)
    return cur.rowcount


def set_status(db: SemanticDb, ids: Sequence[str], status: Status, reason: str,
               now: float) -> list[str]:
    """Move entries (not to PRUNED: that is forget) and log it; the ids that changed."""
    require_reason(reason)
    with db.write() as conn:
        rows = [r for r in db.by_ids("SELECT id, namespace, status FROM entries "
                                     "WHERE id IN", ids, conn) if r[2] != status]
        conn.executemany("UPDATE entries SET status = ? WHERE id = ?",
                         [(status.value, r[0]) for r in rows])
        conn.executemany(
            "INSERT INTO status_log (entry_id, namespace, old_status, new_status, reason, at)"
            " VALUES (?, ?, ?, ?, ?, ?)", [(*r, status.value, reason, now) for r in rows])
    return [r[0] for r in rows]


def forget(db: SemanticDb, ids: Sequence[str], reason: str, now: float,
           hard: bool) -> list[str]:
    """Prune (or, when hard, delete with its edges) and log it; the ids forgotten."""
    require_reason(reason)
    with db.write() as conn:
        rows = db.by_ids("SELECT id, namespace, text FROM entries WHERE id IN", ids, conn)
        conn.executemany(
            "INSERT INTO forget_log (entry_id, namespace, excerpt, reason, at, hard) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(i, ns, text[:EXCERPT_CHARS], reason, now, int(hard)) for i, ns, text in rows])
        targets = [(r[0],) for r in rows]
        if hard:
            conn.executemany("DELETE FROM causal_edges WHERE cause_id = ?1 OR effect_id = ?1",
                             targets)
            conn.executemany("DELETE FROM entries WHERE id = ?", targets)
        else:
            conn.executemany("UPDATE entries SET status = 'pruned' WHERE id = ?", targets)
    return [r[0] for r in rows]


def log_quarantine(conn: sqlite3.Connection, entry: SemanticEntry,
                   report: ContradictionReport, at: float) -> None:
    """Record a quarantine decision, inside the transaction that stores the entry."""
    conn.execute(
        "INSERT INTO quarantine (entry_id, namespace, against, reasons, at) "
        "VALUES (?, ?, ?, ?, ?)",
        (entry.id, entry.namespace, json.dumps(report.against), json.dumps(report.reasons), at))


def forget_log(db: SemanticDb, limit: int, namespace: str | None) -> list[ForgetRecord]:
    rows = db.query(
        "SELECT entry_id, namespace, excerpt, reason, at, hard FROM forget_log "
        "WHERE ?1 IS NULL OR namespace = ?1 ORDER BY seq DESC LIMIT ?2", (namespace, limit))
    return [ForgetRecord(i, ns, ex, r, at, bool(h)) for i, ns, ex, r, at, h in rows]


def quarantine_log(db: SemanticDb, limit: int, namespace: str | None) -> list[QuarantineRecord]:
    rows = db.query(
        "SELECT entry_id, namespace, against, reasons, at FROM quarantine "
        "WHERE ?1 IS NULL OR namespace = ?1 ORDER BY seq DESC LIMIT ?2", (namespace, limit))
    return [QuarantineRecord(i, ns, tuple(json.loads(a)), tuple(json.loads(r)), at)
            for i, ns, a, r, at in rows]


def require_reason(reason: str) -> None:
    if not reason.strip():
        raise InvalidMemory("reason: must say why (forgetting and status changes are logged)")

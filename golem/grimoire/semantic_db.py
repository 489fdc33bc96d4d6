"""The semantic store's SQLite connection: open, migrate, read and write.

WAL with synchronous=FULL (access bookkeeping alone commits without an fsync and
leaves the WAL's checkpoint to the next durable write);
every write is one BEGIN IMMEDIATE transaction that rolls back whole on any
error. The only place sqlite3 errors are seen: each one is translated into a
GrimoireError (StoreCorrupt when the file is not a sound golem store), so
callers never handle a vendor exception.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from golem.grimoire import semantic_schema as schema
from golem.grimoire.errors import GrimoireError, NamespaceRefused, SignatureMismatch, StoreCorrupt
from golem.grimoire.records import SemanticEntry
from golem.runtime.state import damage, damaged_message

CHUNK = 500  # ids per IN (...) list
WAL_CHECKPOINT_PAGES = 1000  # SQLite's default: a durable commit past it checkpoints
# A write that skips its fsync checkpoints only past this many WAL pages (~40 MB at 4 KB):
# a checkpoint costs two fsyncs, and the writes that skip theirs are made on recall's path.
WAL_BACKSTOP_PAGES = 10_000
_CORRUPT = {"SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_ERROR"}


class SemanticDb:
    """One connection, used by one worker thread at a time."""

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self._conn = conn
        self.path = path

    @classmethod
    def open(cls, path: Path, signature_id: str, dim: int) -> SemanticDb:
        """Open or create; refuses a store built with another embedding signature."""
        try:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise GrimoireError(f"{path}: cannot open semantic store: {exc}") from None
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
            conn.execute("PRAGMA busy_timeout=5000")
            problem = damage(conn)
            if problem is not None:
                raise StoreCorrupt(damaged_message(path, "the semantic store", problem))
            _migrate(conn, path)
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                             [("signature_id", json.dumps(signature_id)), ("dim", str(dim))])
            conn.execute("COMMIT")
            stored = _read_signature(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise translate(exc, path, "cannot open semantic store") from None
        except GrimoireError:
            conn.close()
            raise
        if stored != (signature_id, dim):
            conn.close()
            raise SignatureMismatch(
                f"{path}: built with embedding model {stored[0]} ({stored[1]} dims) but the "
                f"configured model is {signature_id} ({dim} dims); vector spaces must not mix. "
                "Run `golem memory reembed` to re-embed the store with the configured model.")
        return cls(conn, path)

    @staticmethod
    def stored_signature(path: Path) -> tuple[str, int] | None:
        """The (signature id, dim) a store was built with, read-only; None if no store."""
        if not path.exists():
            return None
        try:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            try:
                return _read_signature(conn)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise translate(exc, path, "cannot read semantic store") from None

    def close(self) -> None:
        self._conn.close()

    def query(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise translate(exc, self.path, "read failed") from exc

    def by_ids(self, sql: str, ids: Sequence[str],
               conn: sqlite3.Connection | None = None) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` (ending in ``IN``) for the ids, in chunks; inside ``conn``'s
        transaction when given."""
        unique, rows = list(dict.fromkeys(ids)), []
        for start in range(0, len(unique), CHUNK):
            chunk = unique[start:start + CHUNK]
            marks = ", ".join("?" for _ in chunk)
            if conn is None:
                rows += self.query(f"{sql} ({marks})", tuple(chunk))
            else:
                rows += conn.execute(f"{sql} ({marks})", chunk).fetchall()
        return rows

    @contextmanager
    def write(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction: committed when the block ends, rolled back on any error.
        ``durable=False`` commits without an fsync (synchronous=NORMAL for this one
        transaction): the database stays consistent, a power cut may lose this write, and
        the next durable commit makes it durable too. It also checkpoints the WAL only past
        WAL_BACKSTOP_PAGES, leaving the checkpoint (two fsyncs) to the next durable commit
        past WAL_CHECKPOINT_PAGES. For bookkeeping such as access counts, which every recall
        writes: its fsync, and the checkpoint every few dozen recalls, would be the slowest
        parts of a recall."""
        try:
            if not durable:
                self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.execute(f"PRAGMA wal_autocheckpoint={WAL_BACKSTOP_PAGES}")
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                    self._conn.execute("COMMIT")
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
            finally:
                if not durable:
                    self._conn.execute("PRAGMA synchronous=FULL")
                    self._conn.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        except sqlite3.Error as exc:
            raise translate(exc, self.path, "write failed") from exc

    def upsert(self, conn: sqlite3.Connection, entries: Iterable[SemanticEntry],
               rows: list[tuple[Any, ...]]) -> None:
        """Insert or replace entry rows; an id owned by another namespace is refused."""
        entries = list(entries)
        owners = dict(self.by_ids("SELECT id, namespace FROM entries WHERE id IN",
                                  [e.id for e in entries], conn))
        for e in entries:
            if owners.get(e.id, e.namespace) != e.namespace:
                raise NamespaceRefused(f"entry {e.id} belongs to another namespace; "
                                       f"{e.namespace!r} may not overwrite it")
        conn.executemany(schema.UPSERT_ENTRY, rows)

    def matrix_rows(self, namespace: str) -> list[tuple[Any, ...]]:
        """What a NamespaceMatrix is built from, in insertion order."""
        return self.query("SELECT id, status, entry_type, memory_type, importance, "
                          "embedding FROM entries WHERE namespace = ? ORDER BY seq",
                          (namespace,))


def _read_signature(conn: sqlite3.Connection) -> tuple[str, int]:
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    try:
        return json.loads(meta["signature_id"]), int(meta["dim"])
    except (KeyError, ValueError) as exc:
        raise sqlite3.DatabaseError(f"meta table has no valid signature ({exc})") from None


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > len(schema.MIGRATIONS):
        raise StoreCorrupt(f"{path}: written by a newer golem (schema {version})")
    for number, statements in enumerate(schema.MIGRATIONS[version:], start=version + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in statements:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    columns = {r[1] for r in conn.execute("PRAGMA table_info(entries)")}
    missing = [t for t in schema.REQUIRED_TABLES if t not in tables]
    missing += [f"entries.{c}" for c in schema.WRITE_COLUMNS if c not in columns]
    if missing:
        raise StoreCorrupt(f"{path}: broken semantic store schema, missing {', '.join(missing)}")


def translate(exc: sqlite3.Error, path: Path, what: str) -> GrimoireError:
    """Our error for a sqlite3 one: StoreCorrupt when the file is damaged or foreign."""
    if getattr(exc, "sqlite_errorname", "") in _CORRUPT or type(exc) is sqlite3.DatabaseError:
        return StoreCorrupt(f"{path}: semantic store is corrupt or not a golem store "
                            f"({what}: {exc}); move it aside and restore or rebuild it")
    return GrimoireError(f"{path}: semantic store {what}: {exc}")

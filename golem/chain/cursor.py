"""Capture's durable state: the reorg window (whose top is the cursor) per chain with
what capture handed Theta as of it (JSON, opaque here), and the simulated market's
journal (market steps, and the golem's own transactions).

Each journal row records the chain's head (``number:hash``) before it ran, so a replay
can tell a journal that no longer replays (a row edited or deleted) from one that
does; rows written before that column existed have none (NULL) and are not checked.

Its own SQLite file (data/chain/capture.db, WAL, synchronous=FULL) so capture
commits on its own schedule, after its episodes, without sharing the runtime's
connection. Episodes are written first and the window after: a crash between the
two re-captures a few blocks into ids that already exist, which is a no-op.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from golem.chain.reorg import BlockWindow
from golem.errors import StateError
from golem.runtime.state import connect_durable, durable_write, read_only_rows

CAPTURE_DB = "capture.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS capture (
    chain_id INTEGER PRIMARY KEY,
    window TEXT NOT NULL,
    first_block INTEGER NOT NULL,
    updated_at REAL NOT NULL,
    handoff TEXT
);
CREATE TABLE IF NOT EXISTS sim_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sim_steps (
    seq INTEGER PRIMARY KEY,
    golem_time REAL NOT NULL,
    dt REAL NOT NULL,
    head TEXT
);
CREATE TABLE IF NOT EXISTS sim_golem_txs (
    seq INTEGER PRIMARY KEY,
    after_step INTEGER NOT NULL,
    golem_time REAL NOT NULL,
    kind TEXT NOT NULL,
    data BLOB NOT NULL,
    head TEXT
);
"""
# columns added after the first stores were written: (table, column)
_ADDED = (("sim_steps", "head"), ("sim_golem_txs", "head"), ("capture", "handoff"))


@dataclass(frozen=True, slots=True)
class JournalStep:
    """One journalled market step: its row number, golem time, dt, and the chain's head
    (``number:hash``) before it ran (None in rows older than that column)."""

    seq: int
    golem_time: float
    dt: float
    head: str | None


@dataclass(frozen=True, slots=True)
class JournalTx:
    """One journalled golem transaction: after how many market steps it ran, and the
    chain's head before it (None in older rows)."""

    seq: int
    after_step: int
    golem_time: float
    kind: str
    data: bytes
    head: str | None


def read_cursors(folder: Path) -> list[dict[str, Any]]:
    """For `golem status`: each chain's cursor, read-only; [] when nothing was captured."""
    rows = read_only_rows(folder / CAPTURE_DB, "the capture store",
                          "SELECT chain_id, window, first_block, updated_at FROM capture")
    out = []
    for chain_id, window, first_block, updated_at in rows or []:
        headers = json.loads(window).get("headers", [])
        out.append({"chain_id": chain_id, "first_block": first_block,
                    "cursor": headers[-1][0] if headers else None,
                    "window_blocks": len(headers), "updated_at": updated_at})
    return out


class CaptureStore:
    """One connection, used from one worker thread at a time."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path

    @classmethod
    def open(cls, folder: Path) -> CaptureStore:
        path = folder / CAPTURE_DB
        conn = connect_durable(path, "the capture store", _SCHEMA)
        store = cls(conn, path)
        try:
            for table, column in _ADDED:
                columns = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
                if column not in columns:
                    store._write(f"ALTER TABLE {table} ADD COLUMN {column} TEXT", ())
        except (sqlite3.Error, StateError) as exc:
            conn.close()
            raise StateError(f"{path}: cannot open the capture store: {exc}") from None
        return store

    def close(self) -> None:
        self._conn.close()

    def load(self, chain_id: int, window_size: int) -> tuple[BlockWindow, int | None]:
        """The stored window (resized to `window_size`) and first block, or an empty one."""
        row = self._one("SELECT window, first_block FROM capture WHERE chain_id = ?",
                        (chain_id,))
        if row is None:
            return BlockWindow(window_size), None
        try:
            stored = BlockWindow.from_dict(json.loads(row[0]))
        except ValueError as exc:
            raise StateError(f"{self.path}: stored window unreadable: {exc}") from None
        return BlockWindow(window_size, stored.headers[-window_size:]), int(row[1])

    def commit(self, chain_id: int, window: BlockWindow, first_block: int, now: float,
               handoff: str | None = None) -> None:
        """Persist the window (its top is the cursor) and what capture handed Theta as of
        it (`handoff`, JSON; kept as it was when None) in one durable transaction."""
        self._write(
            "INSERT INTO capture (chain_id, window, first_block, updated_at, handoff) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT(chain_id) DO UPDATE SET "
            "window = excluded.window, first_block = excluded.first_block, "
            "updated_at = excluded.updated_at, "
            "handoff = coalesce(excluded.handoff, capture.handoff)",
            (chain_id, json.dumps(window.to_dict()), first_block, now, handoff))

    def load_handoff(self, chain_id: int) -> str | None:
        """The hand-off committed with the cursor (None: none yet)."""
        row = self._one("SELECT handoff FROM capture WHERE chain_id = ?", (chain_id,))
        return None if row is None or row[0] is None else str(row[0])

    def restart_capture(self) -> list[tuple[int, int, int | None]]:
        """Empty every chain's reorg window but keep its first block, so capture starts
        again from there (the episode store was rebuilt; ids are stable, so nothing
        duplicates). Returns (chain id, first block, old cursor) per chain."""
        rows = self._conn.execute("SELECT chain_id, window, first_block FROM capture")
        done = []
        for chain_id, window, first_block in rows.fetchall():
            try:
                stored = BlockWindow.from_dict(json.loads(window))
            except ValueError as exc:
                raise StateError(f"{self.path}: stored window unreadable: {exc}") from None
            done.append((int(chain_id), int(first_block), stored.cursor))
            with durable_write(self._conn, self.path) as conn:
                conn.execute("UPDATE capture SET window = ? WHERE chain_id = ?",
                             (json.dumps(BlockWindow(stored.size).to_dict()), chain_id))
        return done

    # --- the simulated market's journal ----------------------------------------------

    def sim_meta(self, key: str) -> str | None:
        row = self._one("SELECT value FROM sim_meta WHERE key = ?", (key,))
        return None if row is None else str(row[0])

    def set_sim_meta(self, key: str, value: str) -> None:
        self._write("INSERT OR REPLACE INTO sim_meta (key, value) VALUES (?, ?)", (key, value))

    def sim_steps(self) -> list[tuple[float, float]]:
        try:
            rows = self._conn.execute(
                "SELECT golem_time, dt FROM sim_steps ORDER BY seq").fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: read failed: {exc}") from None
        return [(float(t), float(dt)) for t, dt in rows]

    def append_sim_step(self, golem_time: float, dt: float, head: str | None = None) -> int:
        """Journal a market step before it runs, so a restart can replay the same chain;
        `head` is the chain's head before it. Returns the row number."""
        with durable_write(self._conn, self.path) as conn:
            cur = conn.execute("INSERT INTO sim_steps (golem_time, dt, head) VALUES (?, ?, ?)",
                               (golem_time, dt, head))
            return int(cur.lastrowid or 0)

    def journal_steps(self, after_seq: int = 0) -> list[JournalStep]:
        """The journalled market steps with row number above `after_seq`, in order."""
        rows = self._all("SELECT seq, golem_time, dt, head FROM sim_steps WHERE seq > ? "
                         "ORDER BY seq", (after_seq,))
        return [JournalStep(int(q), float(t), float(d), h) for q, t, d, h in rows]

    def journal_golem_txs(self, after_seq: int = 0) -> list[JournalTx]:
        """The journalled golem transactions with row number above `after_seq`, in order."""
        rows = self._all("SELECT seq, after_step, golem_time, kind, data, head "
                         "FROM sim_golem_txs WHERE seq > ? ORDER BY seq", (after_seq,))
        return [JournalTx(int(q), int(a), float(t), str(k), bytes(d), h)
                for q, a, t, k, d, h in rows]

    def count_steps(self, up_to_seq: int) -> int:
        """How many journalled market steps have a row number up to `up_to_seq`."""
        row = self._one("SELECT count(*) FROM sim_steps WHERE seq <= ?", (up_to_seq,))
        return int(row[0]) if row else 0

    def sim_golem_txs(self) -> list[tuple[int, float, str, bytes]]:
        """The golem's own journalled transactions: (steps before it, golem time, kind, data)."""
        try:
            rows = self._conn.execute("SELECT after_step, golem_time, kind, data "
                                      "FROM sim_golem_txs ORDER BY seq").fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: read failed: {exc}") from None
        return [(int(a), float(t), str(k), bytes(d)) for a, t, k, d in rows]

    def append_sim_golem_tx(self, after_step: int, golem_time: float, kind: str,
                            data: bytes, head: str | None = None) -> int:
        """Journal one of the golem's transactions (signed raw bytes, never a key) before
        it is sent, with the number of market steps it followed and the chain's head
        before it. Returns the row number."""
        with durable_write(self._conn, self.path) as conn:
            cur = conn.execute("INSERT INTO sim_golem_txs (after_step, golem_time, kind, "
                               "data, head) VALUES (?, ?, ?, ?, ?)",
                               (after_step, golem_time, kind, data, head))
            return int(cur.lastrowid or 0)

    def _all(self, sql: str, args: tuple[object, ...]) -> list[tuple[Any, ...]]:
        try:
            rows: list[tuple[Any, ...]] = self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: read failed: {exc}") from None
        return rows

    def _one(self, sql: str, args: tuple[object, ...]) -> tuple[Any, ...] | None:
        try:
            row: tuple[Any, ...] | None = self._conn.execute(sql, args).fetchone()
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: read failed: {exc}") from None
        return row

    def _write(self, sql: str, args: tuple[object, ...]) -> None:
        with durable_write(self._conn, self.path) as conn:
            conn.execute(sql, args)

"""The Thanatopsis journal (<data_dir>/mortality/thanatopsis.db): one death, its steps,
and every output a step must not produce twice (the model's reply, webhook deliveries).

Each step is written "started" before it runs and "done" with its result after, in
their own committed transactions, so a crash anywhere leaves a journal the protocol
can resume from. Blocking SQLite: call from a worker thread in async code.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from golem.errors import StateError
from golem.mortality.death import DEAD_FILE, read_death
from golem.runtime.state import connect_durable, durable_write, read_only_rows

JOURNAL_FILE = "thanatopsis.db"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS death (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    cause TEXT NOT NULL, trigger TEXT NOT NULL,
    started_at REAL NOT NULL, finished_at REAL
);
CREATE TABLE IF NOT EXISTS steps (
    name TEXT PRIMARY KEY,
    state TEXT NOT NULL CHECK (state IN ('started', 'done')),
    attempts INTEGER NOT NULL, started_at REAL NOT NULL, done_at REAL, result TEXT
);
CREATE TABLE IF NOT EXISTS outputs (key TEXT PRIMARY KEY, value TEXT NOT NULL,
                                    stored_at REAL NOT NULL);
"""


@dataclass(frozen=True)
class Death:
    cause: str
    trigger: str
    started_at: float
    finished_at: float | None


@dataclass(frozen=True)
class Step:
    name: str
    state: str
    attempts: int
    result: dict[str, Any] | None


def journal_path(data_dir: Path) -> Path:
    return data_dir / "mortality" / JOURNAL_FILE


def read_journal(data_dir: Path) -> tuple[Death | None, list[Step]]:
    """Read-only view for `golem status` and start-up checks; (None, []) when absent."""
    path = journal_path(data_dir)
    rows = read_only_rows(path, "the Thanatopsis journal",
                          "SELECT cause, trigger, started_at, finished_at FROM death")
    if not rows:
        return None, []
    steps = read_only_rows(path, "the Thanatopsis journal",
                           "SELECT name, state, attempts, result FROM steps ORDER BY started_at,"
                           " rowid") or []
    return Death(*rows[0]), [_step(r) for r in steps]


def unfinished_death(data_dir: Path) -> Death | None:
    death, _ = read_journal(data_dir)
    return death if death is not None and death.finished_at is None else None


def notice_owed(data_dir: Path) -> bool:
    """True when the death notification was never delivered (a resume retries it)."""
    _, steps = read_journal(data_dir)
    notify = next((s for s in steps if s.name == "notify"), None)
    return notify is not None and not (notify.result or {}).get("delivered", False) \
        and "note" not in (notify.result or {})


def describe_death(data_dir: Path) -> dict[str, Any] | None:
    """For `golem status` (read-only): the death record, or the death under way."""
    if not data_dir.exists():
        return None
    record = read_death(data_dir)
    if record is not None:
        return {"state": "dead", "file": str(data_dir / DEAD_FILE), **asdict(record)}
    death, steps = read_journal(data_dir)
    if death is None:
        return None
    return {"state": "dying", "cause": death.cause, "trigger": death.trigger,
            "since": death.started_at, "steps_done": [s.name for s in steps if s.state == "done"]}


def _step(row: tuple[Any, ...]) -> Step:
    return Step(row[0], row[1], int(row[2]), json.loads(row[3]) if row[3] else None)


class DeathJournal:
    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn, self.path = conn, path

    @classmethod
    def open(cls, data_dir: Path) -> DeathJournal:
        path = journal_path(data_dir)
        return cls(connect_durable(path, "the Thanatopsis journal", _SCHEMA), path)

    def close(self) -> None:
        self._conn.close()

    def begin(self, cause: str, trigger: str, now: float) -> Death:
        """Record the death (once): a later trigger joins the death already under way."""
        with durable_write(self._conn, self.path, "begin death") as c:
            c.execute("INSERT OR IGNORE INTO death (id, cause, trigger, started_at)"
                      " VALUES (1, ?, ?, ?)", (cause, trigger, now))
        death = self.death()
        assert death is not None
        return death

    def death(self) -> Death | None:
        rows = self._read("SELECT cause, trigger, started_at, finished_at FROM death", ())
        return Death(*rows[0]) if rows else None

    def finish(self, now: float) -> None:
        with durable_write(self._conn, self.path, "finish death") as c:
            c.execute("UPDATE death SET finished_at = ? WHERE finished_at IS NULL", (now,))

    def step(self, name: str) -> Step | None:
        rows = self._read("SELECT name, state, attempts, result FROM steps WHERE name = ?",
                          (name,))
        return _step(rows[0]) if rows else None

    def steps(self) -> list[Step]:
        return [_step(r) for r in self._read(
            "SELECT name, state, attempts, result FROM steps ORDER BY started_at, rowid", ())]

    def started(self, name: str, now: float) -> None:
        with durable_write(self._conn, self.path, f"step {name} started") as c:
            c.execute("INSERT INTO steps (name, state, attempts, started_at) VALUES"
                      " (?, 'started', 1, ?) ON CONFLICT(name) DO UPDATE SET"
                      " state = 'started', attempts = attempts + 1", (name, now))

    def done(self, name: str, result: dict[str, Any], now: float) -> None:
        with durable_write(self._conn, self.path, f"step {name} done") as c:
            c.execute("UPDATE steps SET state = 'done', done_at = ?, result = ? WHERE name = ?",
                      (now, json.dumps(result, sort_keys=True), name))

    def put(self, key: str, value: Any, now: float) -> None:
        """Store an output (JSON) durably, replacing any earlier one under ``key``."""
        with durable_write(self._conn, self.path, f"store {key}") as c:
            c.execute("INSERT OR REPLACE INTO outputs (key, value, stored_at) VALUES (?, ?, ?)",
                      (key, json.dumps(value, sort_keys=True), now))

    def get(self, key: str) -> Any:
        rows = self._read("SELECT value FROM outputs WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: read failed: {exc}") from None

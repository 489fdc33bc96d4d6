"""Theta's decision journal (SQLite, data/cognition/decisions.db): every decision cycle
record, and the predictions waiting for their horizon to be scored.

Records are written in one transaction per tick. A prediction is scored once, when
its due tick has passed, against the price Gamma observed then; the score is kept
next to it, so decision quality survives restarts.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from golem.errors import StateError

JOURNAL_DIR = "cognition"
JOURNAL_DB = "decisions.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS decisions (
    tick INTEGER PRIMARY KEY,
    golem_time REAL NOT NULL,
    provider TEXT NOT NULL,
    status TEXT NOT NULL,
    summary TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS predictions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tick INTEGER NOT NULL,
    subject TEXT NOT NULL,
    direction TEXT NOT NULL,
    magnitude REAL NOT NULL,
    confidence REAL NOT NULL,
    due_tick INTEGER NOT NULL,
    baseline REAL NOT NULL,
    actual REAL,
    quality REAL,
    hit INTEGER
);
CREATE INDEX IF NOT EXISTS predictions_due ON predictions (due_tick) WHERE quality IS NULL;
"""


@dataclass(frozen=True)
class OpenPrediction:
    id: int
    tick: int
    subject: str
    direction: str
    magnitude: float
    confidence: float
    baseline: float


class DecisionJournal:
    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path

    @classmethod
    def open(cls, data_dir: Path) -> DecisionJournal:
        folder = data_dir / JOURNAL_DIR
        path = folder / JOURNAL_DB
        try:
            folder.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StateError(f"{path}: cannot open the decision journal: {exc}") from None
        return cls(conn, path)

    def close(self) -> None:
        self._conn.close()

    def record(self, tick: int, golem_time: float, *, provider: str, status: str,
               summary: str, record: dict[str, Any],
               predictions: list[tuple[str, str, float, float, int, float]]) -> None:
        """One decision and its predictions (subject, direction, magnitude, confidence,
        due tick, baseline price) in one transaction; a replayed tick replaces its row."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.execute(
                "INSERT OR REPLACE INTO decisions VALUES (?, ?, ?, ?, ?, ?)",
                (tick, golem_time, provider, status, summary, json.dumps(record)))
            self._conn.execute("DELETE FROM predictions WHERE tick = ?", (tick,))
            self._conn.executemany(
                "INSERT INTO predictions (tick, subject, direction, magnitude, confidence, "
                "due_tick, baseline) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(tick, *p) for p in predictions])
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise StateError(f"{self.path}: write failed: {exc}") from None

    def due(self, tick: int) -> list[OpenPrediction]:
        rows = self._read(
            "SELECT id, tick, subject, direction, magnitude, confidence, baseline "
            "FROM predictions WHERE quality IS NULL AND due_tick <= ? ORDER BY id", (tick,))
        return [OpenPrediction(*row) for row in rows]

    def settle(self, scores: list[tuple[int, float, float, bool]]) -> None:
        """(prediction id, actual price, quality, direction hit) for scored predictions."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany(
                "UPDATE predictions SET actual = ?, quality = ?, hit = ? WHERE id = ?",
                [(actual, quality, int(hit), pid) for pid, actual, quality, hit in scores])
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise StateError(f"{self.path}: write failed: {exc}") from None

    def _rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._conn.execute("ROLLBACK")

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: read failed: {exc}") from None


def latest(data_dir: Path) -> dict[str, Any] | None:
    """For `golem status`: the newest decision and prediction totals, read-only."""
    path = data_dir / JOURNAL_DIR / JOURNAL_DB
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT tick, golem_time, provider, status, summary FROM "
                               "decisions ORDER BY tick DESC LIMIT 1").fetchone()
            scored, hits, quality, total = conn.execute(
                "SELECT COUNT(quality), SUM(hit), AVG(quality), COUNT(*) "
                "FROM predictions").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StateError(f"{path}: cannot read the decision journal: {exc}") from None
    if row is None:
        return None
    return {"tick": row[0], "golem_time": row[1], "provider": row[2], "status": row[3],
            "summary": row[4], "predictions": total, "scored": scored, "hits": hits or 0,
            "mean_quality": round(quality, 3) if quality is not None else None}

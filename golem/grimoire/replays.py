"""Episode replay counts, kept beside the episode table in a small SQLite file.

Consolidation replays up to a batch of episodes every Delta tick. As a LanceDB column
each +1 would rewrite the whole row (text, record, vector), and every maintenance
optimize() would then add a delta segment to the vector index, which each search probes.
Here a tick's increments are one SQLite transaction of small rows, and an episode row
is written when captured and rarely after. Only counts above zero are stored.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from golem.grimoire.episodes_schema import id_chunks
from golem.grimoire.errors import StoreCorrupt
from golem.runtime.state import damage, damaged_message

FILE = "replays.db"
CHUNK = 500  # ids per statement (SQLite's variable limit is 999 in old builds)
# Asked for at least this many ids, get reads the whole table once instead (it holds at
# most one row per stored episode, so for a store-wide read that is the cheaper scan).
WHOLE_READ_IDS = 50_000
LegacyCounts = Callable[[], Iterable[tuple[str, int]]]


class ReplayCounts:
    """id -> replay count; a missing id has 0. Safe to share between threads."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self._lock = threading.Lock()

    @classmethod
    def open(cls, directory: Path, legacy: LegacyCounts) -> ReplayCounts:
        """Open or create the file. A new file takes the counts ``legacy`` yields (those
        an episode table written by an older version holds in its own column) in the
        transaction that creates its table, so a crash leaves either no table (copied
        again next time) or all."""
        path = directory / FILE
        try:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # a lost last tick of counts is harmless
            conn.execute("PRAGMA busy_timeout=5000")
            problem = damage(conn)
            if problem is not None:
                conn.close()
                raise StoreCorrupt(damaged_message(path, "the replay counts", problem))
            counts = cls(conn, path)
            if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                            "name = 'replays'").fetchone() is None:
                with counts._write() as c:
                    c.execute("CREATE TABLE replays (id TEXT PRIMARY KEY, "
                              "n INTEGER NOT NULL CHECK (n > 0)) WITHOUT ROWID")
                    c.executemany("INSERT OR REPLACE INTO replays VALUES (?, ?)",
                                  ((i, int(n)) for i, n in legacy() if n > 0))
        except sqlite3.Error as exc:
            raise StoreCorrupt(f"episode replay counts {path} are unusable: {exc}") from None
        return counts

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def get(self, ids: Sequence[str]) -> dict[str, int]:
        """Counts of the ids that have any (the others are 0)."""
        if len(ids) >= WHOLE_READ_IDS:
            every = self.all()
            return {i: every[i] for i in ids if i in every}
        out: dict[str, int] = {}
        with self._lock:
            for chunk in id_chunks(ids, CHUNK):
                out.update(self._conn.execute(
                    f"SELECT id, n FROM replays WHERE id IN ({_marks(chunk)})",  # noqa: S608
                    chunk).fetchall())
        return out

    def all(self) -> dict[str, int]:
        with self._lock:
            return dict(self._conn.execute("SELECT id, n FROM replays").fetchall())

    def increment(self, ids: Sequence[str]) -> None:
        with self._write() as c:
            c.executemany("INSERT INTO replays VALUES (?, 1) "
                          "ON CONFLICT (id) DO UPDATE SET n = n + 1",
                          ((i,) for i in dict.fromkeys(ids)))

    def set(self, ids: Sequence[str], n: int) -> None:
        with self._write() as c:
            if n > 0:
                c.executemany("INSERT OR REPLACE INTO replays VALUES (?, ?)",
                              ((i, n) for i in dict.fromkeys(ids)))
            else:
                self._delete(c, ids)

    def insert_missing(self, counts: dict[str, int]) -> None:
        """Counts for ids that have none yet (an id already counted keeps its count)."""
        with self._write() as c:
            c.executemany("INSERT OR IGNORE INTO replays VALUES (?, ?)",
                          ((i, n) for i, n in counts.items() if n > 0))

    def drop(self, ids: Sequence[str]) -> None:
        with self._write() as c:
            self._delete(c, ids)

    @staticmethod
    def _delete(c: sqlite3.Connection, ids: Sequence[str]) -> None:
        for chunk in id_chunks(ids, CHUNK):
            c.execute(f"DELETE FROM replays WHERE id IN ({_marks(chunk)})", chunk)  # noqa: S608

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")


def _marks(chunk: Sequence[str]) -> str:
    return ", ".join("?" for _ in chunk)

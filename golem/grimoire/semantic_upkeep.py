"""SQLite upkeep for the semantic store: planner statistics, free pages, WAL size.

Runs on its own short-lived connection (the store's own connection is the
facade's), so it needs nothing from SemanticStore but the path; SQLite's locks
and a busy timeout keep it from tearing anything a concurrent write does.

- ``ANALYZE`` with an ``analysis_limit`` (approximate, so cheap on a big table)
  keeps the planner's statistics current, then ``PRAGMA optimize``.
- Free pages: a store in incremental auto-vacuum mode gives them back with
  ``PRAGMA incremental_vacuum``. Stores are created without auto-vacuum, so the
  first run converts a store up to ``full_vacuum_max_bytes`` once (``auto_vacuum =
  INCREMENTAL`` then ``VACUUM``, which rewrites the file; rowids are INTEGER
  PRIMARY KEYs there, so the FTS index stays valid). A bigger one is left alone
  and reported: a full VACUUM would hold the write lock too long.
- ``wal_checkpoint(TRUNCATE)`` bounds the -wal file, which otherwise keeps its
  high-water size.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from golem.grimoire.semantic_db import translate

INCREMENTAL = 2  # PRAGMA auto_vacuum value


@dataclass(frozen=True)
class UpkeepReport:
    bytes_before: int  # database + WAL
    bytes_after: int
    free_pages: int  # before vacuuming
    pages_freed: int
    converted: bool  # switched to incremental auto-vacuum by a full VACUUM this run
    incremental: bool  # the store is (now) in incremental auto-vacuum mode
    checkpoint_busy: bool  # readers kept the WAL from being fully checkpointed
    seconds: float


def _size(path: Path) -> int:
    total = 0
    for p in (path, path.with_name(path.name + "-wal")):
        with contextlib.suppress(FileNotFoundError):
            total += p.stat().st_size
    return total


def upkeep(path: Path, *, full_vacuum_max_bytes: int = 64 << 20, analysis_limit: int = 400,
           busy_timeout_ms: int = 5000) -> UpkeepReport:
    """Analyse, vacuum free pages and truncate the WAL of the SQLite file at ``path``."""
    started, before = time.perf_counter(), _size(path)
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=busy_timeout_ms / 1000)
    except sqlite3.Error as exc:
        raise translate(exc, path, "upkeep: cannot open") from None
    try:
        def pragma(sql: str) -> int:
            row = conn.execute(f"PRAGMA {sql}").fetchone()
            return int(row[0]) if row else 0

        pragma(f"busy_timeout = {int(busy_timeout_ms)}")
        pragma(f"analysis_limit = {int(analysis_limit)}")
        conn.execute("ANALYZE")
        conn.execute("PRAGMA optimize")
        free, mode, converted = pragma("freelist_count"), pragma("auto_vacuum"), False
        if mode != INCREMENTAL and before <= full_vacuum_max_bytes:
            pragma("auto_vacuum = INCREMENTAL")
            conn.execute("VACUUM")
            mode, converted = pragma("auto_vacuum"), True
        elif mode == INCREMENTAL and free:
            conn.executescript("PRAGMA incremental_vacuum;")  # execute() frees one page only
        freed = free - pragma("freelist_count")
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.Error as exc:
        raise translate(exc, path, "upkeep") from None
    finally:
        conn.close()
    return UpkeepReport(before, _size(path), free, freed, converted, mode == INCREMENTAL,
                        bool(busy and busy[0]), round(time.perf_counter() - started, 3))

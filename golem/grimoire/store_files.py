"""The Grimoire's files for callers that must not open it (it loads the embedding model).

`golem status` counts the semantic store's entries; the vault copies it with
SQLite's backup API, consistent while a golem writes. Both open grimoire.db
read-only and take no lock; nothing outside this package opens the file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from golem.errors import StateError
from golem.grimoire.errors import StoreCorrupt
from golem.runtime.state import online_copy, read_only_rows

SEMANTIC_FILE = "grimoire.db"


def entry_counts(data_dir: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(entries per status, live facts per fact kind) of every namespace in the data dir;
    live facts are the active and staged entries that carry a fact kind."""
    path = data_dir / SEMANTIC_FILE
    try:
        statuses = read_only_rows(path, "the semantic store",
                                  "SELECT status, COUNT(*) FROM entries GROUP BY status")
        kinds = read_only_rows(path, "the semantic store",
                               "SELECT fact_kind, COUNT(*) FROM entries WHERE fact_kind IS NOT "
                               "NULL AND status IN ('active', 'staged') GROUP BY fact_kind")
    except StateError:  # missing, from an older build, or mid-migration
        return {}, {}
    return ({str(s): int(n) for s, n in statuses or []},
            {str(k): int(n) for k, n in kinds or []})


def has_semantic_store(data_dir: Path) -> bool:
    return (data_dir / SEMANTIC_FILE).exists()


def backup_semantic_store(data_dir: Path, dest: Path) -> None:
    """A consistent copy of the data dir's semantic store at ``dest`` (safe while the golem
    runs: SQLite's online backup). Raises StoreCorrupt when it cannot be read or copied."""
    source = data_dir / SEMANTIC_FILE
    try:
        online_copy(source, dest)
    except sqlite3.Error as exc:
        raise StoreCorrupt(f"{source}: cannot copy the semantic store ({exc})") from None

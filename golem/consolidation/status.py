"""What Delta has done, for ``golem status``: read-only, no model, no lock.

Each file is opened read-only and may be missing (Delta has not run yet) or
from an older build; either way the answer says what it knows and nothing more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from golem.errors import StateError
from golem.grimoire.store_files import entry_counts
from golem.runtime.state import read_only_rows


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]] | None:
    try:
        return read_only_rows(path, "Delta's state", sql)
    except StateError:  # from an older build, or mid-migration: say nothing about it
        return None


def delta_status(data_dir: Path) -> dict[str, Any] | None:
    """Consolidation runs, cursors, Loop 3 mutations and the semantic store's make-up;
    None when Delta has never run in this data dir."""
    state = data_dir / "consolidation"
    runs = _rows(state / "consolidation.db", "SELECT runs, updated_at FROM cursor")
    if runs is None:
        return None
    cursors = dict(_rows(state / "delta.db", "SELECT name, value FROM cursors") or [])
    mutations = dict(_rows(state / "loop3.db",
                           "SELECT status, COUNT(*) FROM mutations GROUP BY status") or [])
    entries, kinds = entry_counts(data_dir)
    return {
        "consolidation_runs": sum(int(r) for r, _ in runs),
        "last_consolidation_at": max((float(t) for _, t in runs), default=None),
        "last_dream_tick": cursors.get("dream"),
        "feedback_through_theta_tick": cursors.get("feedback"),
        "mutations": mutations,
        "entries": entries,
        "facts": kinds,
    }

"""Durable ContextPolicy revisions and Loop 2's Beta state, in the runtime's state.db.

The tables come from the state store's migrations (golem/runtime/state.py); this
adapter keeps its own connection to that file so policy writes commit on their own,
and a policy revision and the Betas that produced it land in one transaction.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from golem.errors import StateError
from golem.governor.categories import Category, MarketRegime
from golem.governor.feedback import BetaTable
from golem.governor.policy import ContextPolicy, default_policy
from golem.runtime.state import StateStore, connect_shared, durable_write

_TABLES = ("context_policy", "context_beta")


class PolicyConflict(StateError):
    """Another writer (Loop 3 in Delta, Loop 2 in Theta) saved a revision first."""


class PolicyStore:
    """One connection, used by one thread at a time (like StateStore)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path

    @classmethod
    def open(cls, state: StateStore) -> PolicyStore:
        """Beside an opened StateStore, whose migrations created the tables."""
        path = state.path
        try:
            conn = connect_shared(path)
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA busy_timeout=5000")
            have = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.Error as exc:
            raise StateError(f"{path}: cannot open the policy store: {exc}") from None
        if not set(_TABLES) <= have:
            conn.close()
            raise StateError(f"{path}: no policy tables (state store not migrated)")
        return cls(conn, path)

    def close(self) -> None:
        self._conn.close()

    def latest(self, default: ContextPolicy | None = None) -> ContextPolicy:
        """The newest saved revision, or ``default`` (the seed's policy) when none is."""
        rows = self._read(
            "SELECT revision, policy FROM context_policy ORDER BY revision DESC LIMIT 1", ())
        if not rows:
            return default if default is not None else default_policy()
        revision, raw = rows[0]
        try:
            policy = ContextPolicy.from_dict(json.loads(raw))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            raise StateError(f"{self.path}: policy revision {revision} unreadable: {exc}") \
                from None
        if policy.revision != revision:
            raise StateError(f"{self.path}: policy row {revision} holds revision "
                             f"{policy.revision}")
        return policy

    def revisions(self, limit: int = 20) -> list[tuple[int, float]]:
        """(revision, created_at), newest first: the policy's history for status/audit."""
        rows = self._read("SELECT revision, created_at FROM context_policy "
                          "ORDER BY revision DESC LIMIT ?", (limit,))
        return [(int(r), float(t)) for r, t in rows]

    def betas(self) -> BetaTable:
        rows = self._read("SELECT regime, category, alpha, beta FROM context_beta", ())
        try:
            return BetaTable({(MarketRegime(r), Category(c)): (float(a), float(b))
                              for r, c, a, b in rows})
        except ValueError as exc:
            raise StateError(f"{self.path}: Beta state unreadable: {exc}") from None

    def save(self, policy: ContextPolicy, betas: BetaTable, created_at: float) -> None:
        """One transaction: the new revision (must be newer than the latest) and the Betas."""
        body = json.dumps(policy.to_dict(), sort_keys=True, allow_nan=False)
        beta_rows = [(r.value, c.value, a, b, policy.revision)
                     for (r, c), (a, b) in sorted(betas.params.items())]
        with durable_write(self._conn, self.path, "policy write") as conn:
            newest = conn.execute("SELECT MAX(revision) FROM context_policy").fetchone()[0]
            if newest is not None and policy.revision <= newest:
                raise PolicyConflict(f"{self.path}: policy revision {policy.revision} is not "
                                 f"newer than stored revision {newest}")
            conn.execute(
                "INSERT INTO context_policy (revision, policy, created_at) VALUES (?, ?, ?)",
                (policy.revision, body, created_at))
            conn.executemany(
                "INSERT OR REPLACE INTO context_beta (regime, category, alpha, beta, revision)"
                " VALUES (?, ?, ?, ?, ?)", beta_rows)

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: read failed: {exc}") from None

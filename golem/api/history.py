"""The dashboard's time series: one point per Delta tick, kept in <data_dir>/api/history.db.

``HistorySampler`` is a Delta tick handler registered last (after the vitality check), so
each point carries that tick's vitality, the wallet's P&L, model spend and the memory
counts. Points survive restarts, so a golem restarted with the API on still shows its
past; at most ``MAX_POINTS`` are kept (older ones are dropped as new ones come).
Blocking SQLite runs in a worker thread.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread

from golem.api.sources import Sources
from golem.runtime.handlers import TickContext, TickCounters
from golem.runtime.state import connect_durable, durable_write

MAX_POINTS = 10_000
HISTORY_DIR = "api"
HISTORY_DB = "history.db"
_SCHEMA = "CREATE TABLE IF NOT EXISTS points (t REAL PRIMARY KEY, point TEXT NOT NULL);"


@dataclass(frozen=True)
class Point:
    t: float
    economic: float | None
    epistemic: float | None
    stochastic: float | None
    composite: float | None
    phase: str | None
    pnl_usd: float
    spent_usd: float
    episodes: int
    entries: int


class HistorySampler:
    name = "api_history"

    def __init__(self, sources: Sources, path: Path) -> None:
        self.sources = sources
        self.path = path
        self._conn = connect_durable(path, "the dashboard history", _SCHEMA)

    @classmethod
    def open(cls, sources: Sources) -> HistorySampler:
        return cls(sources, sources.config.data_dir / HISTORY_DIR / HISTORY_DB)

    def close(self) -> None:
        self._conn.close()

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        await self.sample(ctx.clock.now())
        return None

    async def sample(self, t: float) -> Point:
        """Read the sources and keep one point at golem time ``t`` (replacing one there)."""
        s = self.sources
        money = await s.money()
        counts = await s.grimoire.entry_counts()
        v = s.vitality.components
        point = Point(t, v.get("economic"), v.get("epistemic"), v.get("stochastic"),
                      v.get("composite"), s.vitality.phase, round(money.pnl_usd, 6),
                      round(money.spent_usd, 6), await s.grimoire.episode_count(),
                      sum(counts.values()))
        await anyio.to_thread.run_sync(self._write, point)
        return point

    def _write(self, point: Point) -> None:
        with durable_write(self._conn, self.path, "history write") as conn:
            conn.execute("INSERT OR REPLACE INTO points VALUES (?, ?)",
                         (point.t, json.dumps(asdict(point))))
            conn.execute("DELETE FROM points WHERE t NOT IN (SELECT t FROM points "
                         "ORDER BY t DESC LIMIT ?)", (MAX_POINTS,))

    def series(self, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` points, oldest first (blocking: call from a thread)."""
        with durable_write(self._conn, self.path, "history read") as conn:
            rows = conn.execute("SELECT point FROM points ORDER BY t DESC LIMIT ?",
                                (limit,)).fetchall()
        return [json.loads(r[0]) for r in reversed(rows)]

"""Delta-tick store maintenance: decay, ANN index refresh, compaction, SQLite upkeep, disk.

Consolidation, the curator and dreams are later parts; this is the upkeep the
stores need from day one. Decay runs every Delta tick (it is computed from each
entry's reinforcement point, so cadence does not change the result); the ANN
index is checked every tick and rebuilt only when the table has grown enough or
its delta segments (one per compaction over rewritten rows) pile up;
LanceDB compaction and old-version cleanup run every ``optimize_every`` ticks,
the semantic store's SQLite upkeep (ANALYZE, free pages, WAL truncation) every
``sqlite_every``.

Disk growth is bounded and watched: every ``disk_every`` ticks the data dir is
measured per store; past ``disk_cap_bytes`` a warning names the stores and
compaction and SQLite upkeep run at once instead of waiting for their turn
(again only after a further 10% of growth, so a store that is legitimately big
is not compacted every hour).

Built with ``scheduled=True`` (what wiring does), compaction and SQLite upkeep
are calendar jobs instead (``jobs()``, golem.runtime.jobs): apscheduler on the
wall clock in real mode, the golem clock in simulated mode, at the same period
(``optimize_every`` / ``sqlite_every`` Delta intervals, daily by default). The
Delta tick keeps decay, the index check and the disk watch, and still compacts at
once when the data dir is over its cap.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import anyio.to_thread
import structlog

from golem.grimoire.grimoire import Grimoire
from golem.grimoire.semantic_upkeep import upkeep
from golem.runtime.handlers import TickContext, TickCounters
from golem.runtime.jobs import Job, JobCounters

log = structlog.get_logger("golem.grimoire")


def store_of(name: str) -> str:
    """The store a data-dir entry belongs to: grimoire.db-wal -> grimoire, .MEMORY.md.lock
    -> MEMORY, events.jsonl.1 -> events."""
    return name.lstrip(".").split(".")[0] or name


def _lsize(path: Path) -> int | None:
    try:
        return path.lstat().st_size
    except FileNotFoundError:  # removed while we walk (compaction, rotation)
        return None


def disk_usage(data_dir: Path) -> dict[str, int]:
    """Bytes on disk per store (top-level entry of the data dir, siblings grouped)."""
    usage: dict[str, int] = {}
    if not data_dir.is_dir():
        return usage
    for entry in data_dir.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            size: int | None = sum(_lsize(Path(root) / name) or 0
                                   for root, _dirs, files in os.walk(entry) for name in files)
        else:
            size = _lsize(entry)
        if size is not None:
            key = store_of(entry.name)
            usage[key] = usage.get(key, 0) + size
    return usage


@dataclass
class GrimoireMaintenance:
    grimoire: Grimoire
    optimize_every: int = 144  # Delta ticks: daily at the default 10-minute interval
    sqlite_every: int = 144
    disk_every: int = 6  # hourly
    disk_cap_bytes: int = 0  # 0: measure and report only
    full_vacuum_max_bytes: int = 64 << 20  # one-time conversion to incremental vacuum
    decay: bool = True  # False when consolidation already decays every Delta tick
    version_retention_s: float = 3600.0  # wall seconds old LanceDB versions are kept
    version_retention_max: int | None = None  # and at most this many of them
    scheduled: bool = False  # compaction and SQLite upkeep run as calendar jobs (jobs())
    name: str = "grimoire-maintenance"
    _forced_at: int | None = field(default=None, init=False, repr=False)

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        counters: dict[str, int | float] = {}
        if self.decay:
            decay = await self.grimoire.apply_decay()
            counters.update(decayed=decay.decayed, forgotten=decay.forgotten)
        counters["indexed"] = int(await self.grimoire.refresh_index(
            self.version_retention_s, max_versions=self.version_retention_max))
        over = False
        if ctx.tick % self.disk_every == 0:
            usage = await anyio.to_thread.run_sync(disk_usage, self.grimoire.data_dir)
            total = sum(usage.values())
            counters["disk_bytes"] = total
            over = self._over_cap(total, usage)
        optimize = over or (not self.scheduled and ctx.tick % self.optimize_every == 0)
        if optimize:
            counters.update(await self.compact())
        counters["optimized"] = int(optimize)
        if over or (not self.scheduled and ctx.tick % self.sqlite_every == 0):
            counters.update(await self.sqlite_upkeep())
        return counters

    async def prepare(self) -> JobCounters:
        """Call at the start of a Delta tick that runs this handler after other stages: a
        fold due at this tick starts its process now (Grimoire.prepare_fold)."""
        return {"fold_started": int(await self.grimoire.prepare_fold())}

    def jobs(self, delta_interval_s: float) -> list[Job]:
        """Compaction and SQLite upkeep as calendar jobs, at the periods the tick counts
        would give (``optimize_every`` / ``sqlite_every`` Delta intervals)."""
        return [Job("grimoire-compaction", self.optimize_every * delta_interval_s, self.compact),
                Job("semantic-upkeep", self.sqlite_every * delta_interval_s, self.sqlite_upkeep)]

    async def compact(self) -> JobCounters:
        """LanceDB compaction and old-version cleanup (versions older than
        ``version_retention_s`` wall seconds or beyond the newest ``version_retention_max``
        go)."""
        stats = await self.grimoire.optimize(self.version_retention_s,
                                             max_versions=self.version_retention_max)
        return {"lance_versions": int(stats["after"]["versions"])}

    async def sqlite_upkeep(self) -> JobCounters:
        """ANALYZE, free pages and WAL truncation on the semantic store's file."""
        report = await anyio.to_thread.run_sync(
            lambda: upkeep(self.grimoire._semantic.path,
                           full_vacuum_max_bytes=self.full_vacuum_max_bytes))
        log.info("semantic store upkeep", **vars(report))
        return {"sqlite_pages_freed": report.pages_freed}

    def _over_cap(self, total: int, usage: dict[str, int]) -> bool:
        if not self.disk_cap_bytes or total <= self.disk_cap_bytes:
            self._forced_at = None
            return False
        log.warning("grimoire data dir is over its disk cap", bytes=total,
                    cap=self.disk_cap_bytes, stores=dict(sorted(usage.items())))
        if self._forced_at is not None and total <= self._forced_at * 1.1:
            return False
        self._forced_at = total
        return True

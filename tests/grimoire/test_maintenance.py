"""Store maintenance: SQLite upkeep of the semantic store, disk accounting, the Delta handler."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import structlog
from structlog.testing import capture_logs

from golem.config import Config
from golem.events import EventBus
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.maintenance import GrimoireMaintenance, disk_usage, store_of
from golem.grimoire.records import Status
from golem.grimoire.semantic_upkeep import upkeep
from golem.runtime.clock import WallClock
from golem.runtime.handlers import TickContext
from golem.runtime.lock import DataDirLock

from ..conftest import run_golem
from .test_grimoire import NOW, swap_episode, write_config

T = TypeVar("T")


def with_grimoire(cfg: Config, embedder: Embedder,
                  body: Callable[[Grimoire], Awaitable[T]]) -> T:
    async def main() -> T:
        g = await Grimoire.open(cfg, now=lambda: NOW, embedder=embedder)
        try:
            return await body(g)
        finally:
            await g.close()

    return anyio.run(main)


async def fill_and_forget(g: Grimoire, n: int, keep: int, tag: str) -> None:
    ids = [(await g.remember(f"{tag} fact {i}: pool {i} fee tier {i % 5} bp " + "x" * 1500,
                             entry_id=f"{tag}-{i}")).id for i in range(n)]
    for i in ids[keep:]:
        await g.forget(i, "test", hard=True)


def auto_vacuum(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA auto_vacuum").fetchone()[0])
    finally:
        conn.close()


def test_upkeep_converts_once_then_frees_pages_and_the_store_keeps_working(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        path = g._semantic.path
        await fill_and_forget(g, 60, 10, "a")
        first = await anyio.to_thread.run_sync(upkeep, path)  # the store's connection is open
        assert first.converted and first.incremental and first.free_pages > 0
        assert first.bytes_after < first.bytes_before and auto_vacuum(path) == 2
        await fill_and_forget(g, 40, 0, "b")
        second = await anyio.to_thread.run_sync(upkeep, path)
        assert not second.converted and second.pages_freed >= second.free_pages > 0
        assert second.bytes_after < second.bytes_before
        # the facade's own connection still reads and writes, FTS included
        assert g._semantic.count() == 10
        hits = g._semantic.search_text("fee tier", 5, ["golem-a"])
        assert hits and all(h[0].id.startswith("a-") for h in hits)
        await g.remember("after upkeep: pool 99 fee tier 30 bp", entry_id="c-1")
        result = await g.recall("pool 99 fee tier", k=1)
        assert not result.refused and result.hits[0].id == "c-1"

    with_grimoire(cfg, embedder, body)


def test_upkeep_leaves_a_big_store_unconverted(tmp_path: Path, model_dir: Path,
                                              embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        await fill_and_forget(g, 20, 5, "a")
        report = upkeep(g._semantic.path, full_vacuum_max_bytes=0)
        assert not report.converted and not report.incremental and report.pages_freed == 0
        assert auto_vacuum(g._semantic.path) == 0

    with_grimoire(cfg, embedder, body)


def test_disk_usage_groups_each_store_with_its_siblings(tmp_path: Path) -> None:
    files = {"grimoire.db": 100, "grimoire.db-wal": 20, "grimoire.db-shm": 3,
             "MEMORY.md": 7, "MEMORY.md.prev": 5, ".MEMORY.md.lock": 1,
             "events.jsonl": 50, "events.jsonl.1": 40, "episodes/t.lance/data/f": 900,
             "episodes/store.json": 10, "memory/scratch.md": 30}
    for name, size in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x" * size)
    assert disk_usage(tmp_path) == {"grimoire": 123, "MEMORY": 13, "events": 90,
                                    "episodes": 910, "memory": 30}
    assert store_of("state.db") == "state" and disk_usage(tmp_path / "missing") == {}


def ctx(tick: int) -> TickContext:
    clock = WallClock()
    return TickContext("delta", tick, 0.0, 0.0, clock, EventBus(clock.now), 1,
                       structlog.get_logger())


def test_handler_compacts_early_past_the_disk_cap_and_warns(tmp_path: Path, model_dir: Path,
                                                           embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> list[Any]:
        for i in range(30):  # 30 writes: 30 LanceDB versions
            await g.add_episodes([swap_episode(i)])
        gone = await g.remember("short-lived", entry_id="e-1", decay_class="ephemeral")
        assert gone.status is Status.ACTIVE
        m = GrimoireMaintenance(g, disk_every=1, disk_cap_bytes=1)
        with capture_logs() as logs:
            first = await m(ctx(5))
            second = await m(ctx(7))  # still over the cap, but no 10% growth: not again
        quiet = await GrimoireMaintenance(g, disk_every=1)(ctx(5))  # no cap: just measure
        return [first, second, quiet, logs]

    first, second, quiet, logs = with_grimoire(cfg, embedder, body)
    # compaction ran early (tick 5 is not an optimize tick); the versions stay because the
    # facade cleans only versions older than an hour of wall time
    assert first["optimized"] == 1 and first["lance_versions"] >= 30
    assert "sqlite_pages_freed" in first and first["disk_bytes"] > 0
    assert second["optimized"] == 0 and "sqlite_pages_freed" not in second
    assert quiet["optimized"] == 0 and quiet["disk_bytes"] > 0
    warnings = [e for e in logs if e["event"] == "grimoire data dir is over its disk cap"]
    assert len(warnings) == 2 and set(warnings[0]["stores"]) >= {"episodes", "grimoire"}


def test_golem_memory_compact_drops_the_old_versions(tmp_path: Path, model_dir: Path,
                                                           embedder: Embedder) -> None:
    """`golem memory compact` on a stopped golem's data dir: the episode store keeps its
    rows and drops its old versions; while the data dir is locked it refuses."""
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        for i in range(5):  # five writes: five more versions
            await g.add_episodes([swap_episode(i)])

    with_grimoire(cfg, embedder, body)
    config = str(tmp_path / "golem.toml")
    lock = DataDirLock(cfg.data_dir)
    lock.acquire()
    try:
        held = run_golem("memory", "compact", "--config", config)
    finally:
        lock.release()
    assert held.returncode == 75 and "in use" in held.stderr
    done = run_golem("memory", "compact", "--config", config, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["before"]["versions"] >= 5
    assert report["after"]["versions"] <= 2  # the compaction's own, and its parent
    assert report["after"]["rows"] == report["before"]["rows"] == 5
    assert report["after"]["bytes"] < report["before"]["bytes"]

    async def after(g: Grimoire) -> None:
        hits = await g.recall("whale sold WETH on the ETH/USDC pool", k=5)
        assert not hits.refused and len(hits.hits) == 5

    with_grimoire(cfg, embedder, after)

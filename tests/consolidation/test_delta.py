"""Delta's tick end to end over real stores: the stages built from config, in order, with
their cursors, and a failing stage that does not starve the others."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import structlog

from golem.cognition.journal import DecisionJournal, Outcome
from golem.config import Config, load_config
from golem.consolidation.delta import DeltaCycle, DeltaStageFailed, open_delta
from golem.consolidation.recall_feedback import entry_ids
from golem.consolidation.status import delta_status
from golem.events import EventBus
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.maintenance import GrimoireMaintenance
from golem.grimoire.records import FactKind
from golem.grimoire.working_memory import parse_memory
from golem.runtime.handlers import TickContext
from golem.runtime.state import StateStore

from ..conftest import REPO, config_text
from .test_engine import T0, market

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def now(self) -> float:
        return self.t


def make_config(tmp_path: Path) -> Config:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({
        "golem": {"name": "golem-a", "data_dir": "data"},
        "grimoire": {"model_dir": str(MODEL)},
        "chain": {"mode": "off"},
        "consolidation": {"curator_every": 2, "dream_every": 3},
    }))
    return load_config(path)


def decide(cfg: Config, tick: int, cited: str, quality_hit: bool) -> None:
    """A Theta decision that relied on ``cited``, with one prediction scored."""
    journal = DecisionJournal.open(cfg.data_dir)
    try:
        record = {"decision": {"referenced": [cited, "state://prices"]}, "cited": []}
        journal.record(tick, T0 + tick, provider="offline", status="ok", summary="x",
                       record=record, predictions=[("ETH", "up", 0.01, 0.7, tick + 1, 100.0)],
                       outcome=Outcome(tick, "stationary", 0, frozenset({"insights"}),
                                       frozenset({"insights"}), frozenset()))
        [due] = journal.due(tick + 1)
        journal.settle([(due.id, 101.0, 0.9 if quality_hit else 0.1, quality_hit)])
    finally:
        journal.close()


def test_entry_ids_keep_semantic_sources_only() -> None:
    assert entry_ids(["grimoire://ns/insight/a1", "grimoire://ns/episode/e1", "state://x",
                      "grimoire://ns/warning/a1", "grimoire://bad", 7]) == ["a1"]  # type: ignore[list-item]


def test_delta_runs_its_stages_with_durable_cursors(tmp_path: Path, embedder: Embedder) -> None:
    cfg = make_config(tmp_path)
    clock = Clock(T0 + 3600)
    bus = EventBus(clock.now)
    kinds: list[str] = []
    bus.subscribe(lambda event, _record: kinds.append(event.kind))
    StateStore.open(cfg.data_dir).close()  # the daemon migrates the state store first

    def ctx(tick: int) -> TickContext:
        return TickContext("delta", tick, clock.t, clock.t + 1800, clock, bus, 1,  # type: ignore[arg-type]
                           structlog.get_logger())

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        g = await Grimoire.open(cfg, now=clock.now, embedder=embedder, events=bus)
        try:
            tip = await g.remember("Swaps at pool A run about 5 units", importance=0.6)
            decide(cfg, 1, f"grimoire://golem-a/insight/{tip.id}", quality_hit=True)
            await g.add_episodes(market())
            async with AsyncExitStack() as stack:
                delta = await open_delta(cfg, g, GrimoireMaintenance(g, decay=False), stack, bus)
                out["tick1"] = await delta(ctx(1))
                out["tip1"] = await g.get(tip.id)
                out["memory1"] = g.memory_path.read_text()
            async with AsyncExitStack() as stack:  # a restart: the cursors hold
                upkeep = GrimoireMaintenance(g, decay=False)  # as wired: prepare runs first
                delta = await open_delta(cfg, g, upkeep, stack, bus, prepare=upkeep.prepare)
                clock.t += 600
                out["tick2"] = await delta(ctx(2))
                out["tip2"] = await g.get(tip.id)
                out["dream_due_3"] = delta.dreams.due(3, idle=False)
                # A stage that fails (MEMORY.md's place taken by a directory) is reported
                # after the later stages ran.
                g.memory_path.unlink()
                g.memory_path.mkdir()
                clock.t += 600
                try:
                    await delta(ctx(4))
                except DeltaStageFailed as exc:
                    out["failed"] = str(exc)
                out["dream_cursor"] = delta.cursors.get("dream")
            out["baselines"] = sum(e.fact_kind is FactKind.BASELINE
                                   for e in await g.entries())
        finally:
            await g.close()
        return out

    out = anyio.run(main, backend_options={"use_uvloop": True})
    t1, t2 = out["tick1"], out["tick2"]
    # Tick 1: the scored decision reinforced what it cited; consolidation learned; the
    # first tick dreams and rewrites MEMORY.md.
    assert t1["feedback_ticks"] == 1 and t1["feedback_useful"] == 1
    assert out["tip1"].successful_recalls == 1
    assert t1["consolidation_new"] == 21 and t1["consolidation_created"] > 0
    assert out["baselines"] > 0
    assert t1["dream_staged"] == 1 and t1["memory_accepted"] == 1
    assert parse_memory(out["memory1"]).section("curiosity_gaps") is not None
    assert "delta:dream" in kinds and "memory:rewrite" in kinds
    # Tick 2 after a restart: nothing reinforced twice; the curator's turn (every 2).
    assert t2["feedback_ticks"] == 0 and out["tip2"].successful_recalls == 1
    # no fold due in so small a store: no fold's child started
    assert "prepare_ms" not in t1 and t2["prepare_fold_started"] == 0
    assert t2["consolidation_new"] == 0
    assert "curator_promoted" in t2 and "delta:curator" in kinds
    # Each stage that ran says how long it took; a stage that did not run says nothing.
    ran = ("feedback_ms", "consolidation_ms", "dream_ms", "memory_ms", "maintenance_ms")
    assert all(t1[key] >= 0.0 for key in ran)
    assert "curator_ms" not in t1 and t2["curator_ms"] >= 0.0
    assert not out["dream_due_3"]  # dreamt at tick 1, every 3: next at 4
    # Tick 4: the dream ran and its cursor moved; the rewrite failed and was named.
    assert out["failed"].startswith("memory: ") and "MEMORY.md" in out["failed"]
    assert out["dream_cursor"] == 4
    # golem status reads the same, read-only
    status = delta_status(cfg.data_dir)
    assert status is not None and status["consolidation_runs"] == 1
    assert status["last_dream_tick"] == 4 and status["feedback_through_theta_tick"] == 1
    assert status["facts"]["baseline"] == out["baselines"] and status["entries"]["active"] > 0
    assert delta_status(tmp_path / "elsewhere") is None


def test_open_delta_builds_every_stage(tmp_path: Path, embedder: Embedder) -> None:
    cfg = make_config(tmp_path)
    StateStore.open(cfg.data_dir).close()

    async def main() -> DeltaCycle:
        g = await Grimoire.open(cfg, now=lambda: T0, embedder=embedder)
        try:
            async with AsyncExitStack() as stack:
                return await open_delta(cfg, g, GrimoireMaintenance(g), stack)
        finally:
            await g.close()

    delta = anyio.run(main)
    assert delta.curator.every == 2 and delta.dreams.s.every_ticks == 3
    assert delta.dreams.lab is not None and delta.memory is not None

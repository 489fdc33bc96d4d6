"""The curator cycle over a real Grimoire (real SQLite, LanceDB and model in a temp dir):
statuses change with logged reasons, duplicates fold, PLAYBOOK.md gets one snapshot, the
event is emitted, and a second cycle changes nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from golem.config import load_config
from golem.consolidation.curator_compress import RELATED
from golem.consolidation.curator_cycle import CuratorCycle, CuratorReport
from golem.consolidation.curator_signals import MERGED_FROM
from golem.events import CuratorCycleComplete, Event, EventBus, GrimoireForget
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.playbook import Playbook
from golem.grimoire.records import (
    DecayClass,
    EntryType,
    MemoryType,
    Provenance,
    SemanticEntry,
    Status,
)
from golem.grimoire.semantic_lifecycle import ForgetRecord

from ..conftest import config_text
from ..grimoire.conftest import MODEL_DIR
from ..grimoire.stores import semantic_store

T = TypeVar("T")
NOW = 1_767_225_600.0
DAY = 86400.0
NS = "golem-a"


class Clock:
    def __init__(self) -> None:
        self.t = NOW

    def __call__(self) -> float:
        return self.t


def with_grimoire(tmp_path: Path, embedder: Embedder, clock: Clock,
                  body: Callable[[Grimoire, EventBus, list[Event]], Awaitable[T]]) -> T:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"name": NS, "data_dir": "data"},
                                 "grimoire": {"model_dir": str(MODEL_DIR)}}))
    cfg = load_config(path)
    seen: list[Event] = []
    bus = EventBus(now=clock)
    bus.subscribe(lambda event, _record: seen.append(event))

    async def main() -> T:
        g = await Grimoire.open(cfg, now=clock, embedder=embedder)
        try:
            return await body(g, bus, seen)
        finally:
            await g.close()

    return anyio.run(main)


def entry(id: str, text: str, **kw: Any) -> SemanticEntry:
    base: dict[str, Any] = dict(
        id=id, namespace=NS, text=text, entry_type=EntryType.INSIGHT,
        memory_type=MemoryType.FACT, created_at=NOW - 2 * DAY, confidence=0.7,
        provenance=Provenance(author=NS, process="consolidation"))
    base.update(kw)
    return SemanticEntry(**base)


def crafted() -> list[SemanticEntry]:
    dream_fact = {"hypothesis": "x", "confirm_window_s": 3 * DAY}
    old = NOW - 90 * DAY
    return [
        entry("keep", "ETH/USDC depth thins out during Asian night hours",
              last_accessed=NOW - 3600, access_count=3, source_episodes=("ep1",)),
        entry("cold", "USDC lending rates on Aave track the Fed funds rate",
              created_at=NOW - 40 * DAY, last_accessed=NOW - 20 * DAY),
        entry("stale", "Gas is cheapest right after a new block with an empty mempool",
              created_at=old, last_accessed=NOW - 40 * DAY, confidence=0.15,
              decay_class=DecayClass.TACTICAL),
        entry("anchored", "Our strategy trades only the ETH/USDC pool", created_at=old,
              last_accessed=NOW - 40 * DAY, confidence=0.15, anchored=True),
        entry("dream-ok", "Swap sizes on pool B double after oracle updates",
              status=Status.STAGED, created_at=NOW - DAY, confidence=0.25,
              last_reinforced=NOW - 3600, fact={**dream_fact, "expires_at": NOW + 2 * DAY},
              provenance=Provenance(author=NS, process="dream")),
        entry("dream-old", "Liquidations stop after weekend funding resets",
              status=Status.STAGED, created_at=NOW - 5 * DAY, confidence=0.25,
              fact={**dream_fact, "expires_at": NOW - 2 * DAY},
              provenance=Provenance(author=NS, process="dream")),
        entry("dup-a", "Swap fees on the ETH/USDC pool rise after large whale swaps",
              confidence=0.8, episode_count=4, source_episodes=("ep1", "ep2"),
              last_accessed=NOW - 3600),
        entry("dup-b", "Swap fees on the ETH/USDC pool rise after big whale swaps",
              confidence=0.6, episode_count=2, source_episodes=("ep2", "ep3"),
              last_accessed=NOW - 3600),
        entry("heur", "Rebalance the LP range when price leaves it for two blocks",
              entry_type=EntryType.HEURISTIC, confidence=0.85, successful_recalls=4,
              last_reinforced=NOW - 7200),
        entry("other-ns", "Someone else's stale thought", namespace="golem-b",
              created_at=old, confidence=0.05),
    ]


async def seed(g: Grimoire, clock: Clock) -> str:
    """The crafted entries, plus a claim quarantined 8 days ago against an anchored one."""
    rows = crafted()
    await g.write_entries([e for e in rows if e.namespace == NS], checked=False)
    foreign = [e for e in rows if e.namespace != NS]  # the facade writes only its own
    vectors = await g.embedder.aembed([e.text for e in foreign])
    with semantic_store(g.data_dir, g.embedder.signature) as store:
        store.put(foreign, vectors)
    clock.t = NOW - 8 * DAY
    await g.remember("Never provide liquidity to pools under $100k TVL", type="constraint",
                     importance=0.9, anchored=True, entry_id="rule")
    claim = await g.remember("Provide liquidity to pools under $100k TVL",
                             importance=0.5, entry_id="claim")
    clock.t = NOW
    assert claim.status == Status.QUARANTINED
    return claim.id


def statuses(g: Grimoire) -> dict[str, Status]:
    """Every namespace's entries (the curator must leave other namespaces alone)."""
    with semantic_store(g.data_dir, g.embedder.signature) as store:
        return {e.id: e.status for e in store.iter_all()}


def forget_log(g: Grimoire) -> list[ForgetRecord]:
    with semantic_store(g.data_dir, g.embedder.signature) as store:
        return store.forget_log(50, NS)


def test_cycle_applies_verdicts_and_a_second_cycle_is_idempotent(
        tmp_path: Path, embedder: Embedder) -> None:
    clock = Clock()

    async def body(g: Grimoire, bus: EventBus,
                   seen: list[Event]) -> tuple[CuratorReport, CuratorReport]:
        await seed(g, clock)
        curator = CuratorCycle(g, events=bus, every=50)
        assert [curator.due(t) for t in (0, 49, 50, 100)] == [False, False, True, True]
        first = await curator.run(50, NOW)
        after_first = statuses(g)
        assert after_first == {
            "keep": Status.ACTIVE, "cold": Status.ARCHIVED, "stale": Status.PRUNED,
            "anchored": Status.ACTIVE, "dream-ok": Status.ACTIVE, "dream-old": Status.PRUNED,
            "dup-a": Status.ACTIVE, "dup-b": Status.ARCHIVED, "heur": Status.ACTIVE,
            "other-ns": Status.ACTIVE, "rule": Status.ACTIVE, "claim": Status.PRUNED}
        [keeper] = await g.entries_by_ids(["dup-a"])
        assert keeper.episode_count == 5 and keeper.source_episodes == ("ep1", "ep2", "ep3")
        assert keeper.fact[MERGED_FROM] == ["dup-b"] and keeper.fact[RELATED] == ["keep"]
        assert keeper.confidence == 0.8 and keeper.last_accessed == NOW - 3600
        [kept] = await g.entries_by_ids(["keep"])
        assert kept.fact[RELATED] == ["dup-a"]
        forgotten = {r.entry_id: r.reason for r in forget_log(g)}
        assert set(forgotten) == {"stale", "dream-old", "claim"}
        assert all(r.startswith("curator: ") for r in forgotten.values())
        assert "dream hypothesis expired unconfirmed" in forgotten["dream-old"]
        assert "contradicts trusted rule" in forgotten["claim"]
        playbook = await g.playbook_text()
        assert "## Proposed by the curator" in playbook and "(entry heur;" in playbook
        assert len(Playbook(g.data_dir).history()) == 1
        completes = [e for e in seen if isinstance(e, CuratorCycleComplete)]
        assert completes == [CuratorCycleComplete(tick=50, entries_pruned=3,
                                                  entries_promoted=1, entries_archived=2,
                                                  heuristics_proposed=1)]
        forgets = [e for e in seen if isinstance(e, GrimoireForget)]
        assert sorted(i for e in forgets for i in e.ids) == ["claim", "dream-old", "stale"]

        clock.t = NOW + 60
        second = await curator.run(100, NOW + 60)
        assert statuses(g) == after_first
        assert await g.entries_by_ids(["dup-a"]) == [keeper]
        assert len(Playbook(g.data_dir).history()) == 1
        assert await g.playbook_text() == playbook
        assert len(forget_log(g)) == 3
        assert seen[-1] == CuratorCycleComplete(tick=100, entries_pruned=0, entries_promoted=0,
                                                entries_archived=0, heuristics_proposed=0)
        return first, second

    first, second = with_grimoire(tmp_path, embedder, clock, body)
    assert (first.promoted, first.archived, first.pruned, first.merged) == (1, 2, 3, 1)
    assert first.heuristics_proposed == 1 and first.playbook_snapshot == 1
    assert first.by_rule == {"cold": 1, "stale": 1, "dream_confirmed": 1,
                             "dream_expired": 1, "contradicted": 1}
    assert first.cross_referenced == 2 and first.deferred == 0
    assert (second.promoted, second.archived, second.pruned, second.merged,
            second.cross_referenced, second.heuristics_proposed) == (0, 0, 0, 0, 0, 0)
    assert second.playbook_snapshot is None and second.by_rule == {}


def test_a_verdict_on_an_entry_changed_since_the_snapshot_waits(
        tmp_path: Path, embedder: Embedder) -> None:
    clock = Clock()

    async def body(g: Grimoire, bus: EventBus, seen: list[Event]) -> None:
        await seed(g, clock)
        curator = CuratorCycle(g, events=bus)
        snap = await curator.read()
        plan = await curator.plan(snap, NOW)
        assert {d.entry_id for d in plan.decisions} >= {"cold", "stale"}
        await g.reinforce("cold", useful=True)  # a recall found it useful meanwhile
        done = await curator.apply(snap, plan, 50, NOW)
        assert done.deferred == 1 and "cold" not in {d.entry_id for d in done.decisions}
        assert statuses(g)["cold"] == Status.ACTIVE and statuses(g)["stale"] == Status.PRUNED
        report = await curator.run(100, NOW)  # fresh evidence: it is in use now
        assert statuses(g)["cold"] == Status.ACTIVE and report.archived == 0

    with_grimoire(tmp_path, embedder, clock, body)

"""The Grimoire's knowledge-maintenance methods (knowledge.py) over real stores: reads see
this golem's own namespace only, writes never change another's entries, and the
read-modify-writes keep their guards."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from golem.grimoire.embedder import Embedder
from golem.grimoire.errors import InvalidMemory
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import EntryType, MemoryType, SemanticEntry, Status

from .stores import episode_store, semantic_store
from .test_grimoire import NOW, swap_episode, with_grimoire, write_config


@dataclass(frozen=True)
class Change:
    entry_id: str
    status: Status
    reason: str


def foreign(id: str, text: str) -> SemanticEntry:
    return SemanticEntry(id=id, namespace="golem-b", text=text, entry_type=EntryType.INSIGHT,
                         memory_type=MemoryType.FACT, created_at=NOW, confidence=0.7,
                         source_episodes=("their-episode",))


def plant(g: Grimoire, entry: SemanticEntry) -> None:
    """Another golem's entry in the same store file, beneath the facade."""
    with semantic_store(g.data_dir, g.embedder.signature) as store:
        store.put([entry], g.embedder.embed([entry.text]))


def test_reads_see_only_this_golems_entries_and_writes_skip_others(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        theirs = foreign("theirs", "Swap fees rise after whale swaps on ETH/USDC")
        plant(g, theirs)
        mine = await g.remember("Swap fees rise after whale swaps on the ETH/USDC pool")
        staged = await g.remember("Gas is cheap on Sunday mornings", staged=True)
        assert [e.id for e in await g.entries()] == [mine.id, staged.id]
        assert [e.id for e in await g.entries(statuses=(Status.STAGED,))] == [staged.id]
        assert [e.id for e in await g.entries(where=lambda e: "Gas" in e.text)] == [staged.id]
        assert await g.entries_by_ids(["theirs", staged.id, "nope"]) == [staged]
        hits = await g.search_entries(embedder.embed_query("whale swap fees"), 5,
                                      statuses=(Status.ACTIVE, Status.STAGED))
        assert {e.id for e, _ in hits} == {mine.id, staged.id}
        assert await g.set_status(["theirs", staged.id], Status.ARCHIVED, "test") == 1
        assert await g.update_confidence({"theirs": 0.1, mine.id: 0.4}) == 1
        assert await g.revise_entries(["theirs"], lambda e: replace(e, importance=1.0)) == []
        assert await g.neighbourhood("theirs", episodes=3, entries=3) is None
        with semantic_store(g.data_dir, g.embedder.signature) as store:
            assert store.get(["theirs"]) == [theirs]  # untouched by all of it
        [after] = await g.entries_by_ids([mine.id])
        assert after.confidence == pytest.approx(0.4)
        assert after.reinforced_confidence == pytest.approx(mine.confidence)
        with pytest.raises(InvalidMemory, match="confidence"):
            await g.update_confidence({mine.id: 1.5})
        with pytest.raises(InvalidMemory, match="reason"):
            await g.set_status([mine.id], Status.ARCHIVED, " ")

    with_grimoire(cfg, embedder, body)


def test_revise_keeps_vectors_and_refuses_new_text_compare_and_set_waits(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        a = await g.remember("Liquidations follow oracle updates within 3 blocks")
        b = await g.remember("Pool B's depth halves during the Asian night")
        before = (await g.curation_snapshot(10)).vectors
        revised = await g.revise_entries([a.id, b.id], lambda e: replace(
            e, episode_count=e.episode_count + 2) if e.id == a.id else e)
        assert [e.episode_count for e in revised] == [a.episode_count + 2]  # b unchanged
        snap = await g.curation_snapshot(10)
        assert (snap.vectors[a.id] == before[a.id]).all()
        with pytest.raises(InvalidMemory, match="keeps the id, namespace and text"):
            await g.revise_entries([b.id], lambda e: replace(e, text="something else"))
        expected = {e.id: e for e in snap.entries}
        await g.reinforce(b.id, useful=True)  # b moved since the snapshot
        done = await g.set_statuses_if_unchanged(
            [Change(a.id, Status.ARCHIVED, "cold"), Change(b.id, Status.PRUNED, "stale")],
            expected, now=NOW + 1)
        assert [c.entry_id for c in done] == [a.id]
        assert [e.status for e in await g.entries_by_ids([a.id, b.id])] == [
            Status.ARCHIVED, Status.ACTIVE]

    with_grimoire(cfg, embedder, body)


def test_episode_reads_are_this_golems_and_retention_reads_one_snapshot(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)
    theirs = swap_episode(9, ns="golem-b")
    with episode_store(cfg.data_dir, embedder.signature) as store:
        store.upsert([theirs], embedder.embed([theirs.text]))
    mine = [swap_episode(i) for i in range(1, 5)]  # observed NOW - 60 i

    async def body(g: Grimoire) -> None:
        await g.add_episodes(mine)
        await g.write_entries([SemanticEntry(
            id="fact", namespace="golem-a", text="Whales move ETH/USDC", created_at=NOW,
            entry_type=EntryType.INSIGHT, memory_type=MemoryType.FACT,
            source_episodes=(mine[0].id,))], checked=False)
        assert await g.episode_count() == 4
        seen = await g.scan_episodes(lambda batches: sorted(e.id for b in batches for e in b))
        assert seen == sorted(e.id for e in mine)
        totals: list[int] = []

        def until(total: int) -> float:
            totals.append(total)
            return NOW - 150

        snap = await g.retention_snapshot(until=until, limit=10,
                                          fact_statuses=(Status.ACTIVE,))
        assert totals == [4] and snap.total == 4
        assert [e.id for e in snap.episodes] == [mine[3].id, mine[2].id]  # oldest first
        assert snap.fact_sources == {mine[0].id}
        near = await g.neighbourhood("fact", episodes=10, entries=3)
        assert near is not None and near.entries == []  # itself left out
        assert {e.id for e, _ in near.episodes} == {e.id for e in mine}

    with_grimoire(cfg, embedder, body)

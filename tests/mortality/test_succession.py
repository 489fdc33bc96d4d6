"""Succession over real stores: a successor boots from a testament (staged, 0.4 x 0.85^1,
generation 1, bloodstains kept), a grandchild sees 0.4 x 0.85^2, restarts never re-import,
and InheritedReplay reinforces or weakens inherited entries against own evidence."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.config import Config
from golem.consolidation.curator import Action, CuratorParams, CycleView, classify
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import EntryType, SemanticEntry, Source, Status
from golem.mortality import testament as tm
from golem.mortality.categories import REFLECTION_CATEGORIES
from golem.mortality.death import DataDirDead, DeathRecord, write_death
from golem.mortality.inherited_replay import InheritedReplay, judge, per_tick
from golem.mortality.lineage import Lineage, LineageError
from golem.mortality.succession import (
    IMPORT_PROCESS,
    Boot,
    boot,
    inherit_path,
    inherited_entry,
    snapshot_dir,
    with_inherit,
)

from ..conftest import run_golem
from ..grimoire.conftest import MODEL_DIR
from .test_testament import (
    T0,
    build_from,
    entry,
    episode,
    first_lineage,
    golem_config,
    live_a_life,
)

T1 = T0 + 10_000


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return Embedder.load(MODEL_DIR, 32)


async def inherited_entries(g: Grimoire) -> list[SemanticEntry]:
    return await g.entries(where=lambda e: e.provenance.process == IMPORT_PROCESS)


def parent_testament(tmp_path: Path, emb: Embedder) -> Path:
    cfg = golem_config(tmp_path / "a", "golem-a")

    async def main() -> Path:
        g = await Grimoire.open(cfg, now=lambda: T0 + 5000, embedder=emb)
        try:
            await live_a_life(g)
            t = await build_from(g, first_lineage(cfg))
        finally:
            await g.close()
        return tm.write_testament(cfg.data_dir / "testament" / f"{t.testament_id}.json", t)

    return anyio.run(main)


def boot_in(cfg: Config, emb: Embedder, path: Path | None, now: float,
            after: Any = None) -> tuple[Boot, list[SemanticEntry], Any]:
    async def main() -> tuple[Boot, list[SemanticEntry], Any]:
        g = await Grimoire.open(cfg, now=lambda: now, embedder=emb)
        try:
            result = await boot(cfg, g, now=now, inherit=path)
            extra = await after(g) if after is not None else None
            return result, await inherited_entries(g), extra
        finally:
            await g.close()

    return anyio.run(main)


def test_a_successor_inherits_staged_at_the_tier_confidence_and_a_grandchild_lower(
        tmp_path: Path, embedder: Embedder) -> None:
    path = parent_testament(tmp_path, embedder)
    parent = tm.load_testament(path)
    cfg_b = golem_config(tmp_path / "b", "golem-b")
    child, entries, _ = boot_in(cfg_b, embedder, path, T1)
    assert child.imported == len(parent.entries) == len(entries) > 5
    assert child.lineage.generation == 1
    assert child.lineage.parent_testament_id == parent.testament_id
    assert child.lineage.golem_id != parent.golem_id and child.lineage.namespace == "golem-b"
    for e in entries:
        assert e.status == Status.STAGED and e.namespace == "golem-b"
        assert e.provenance.source == Source.SUCCESSOR and e.generation == 1
        assert e.provenance.author == "golem-a"
        assert math.isclose(e.confidence, 0.4 * 0.85)
        assert e.fact["inherited_from"] == parent.testament_id
    stains = [e for e in entries if e.fact["testament_kind"] == "bloodstain"]
    assert len(stains) == 3 and all(e.provenance.bloodstain for e in stains)
    assert all(e.entry_type == EntryType.WARNING for e in stains)
    revert = next(e for e in stains if e.fact["conditions"].get("outcome") == "reverted")
    assert revert.fact["conditions"]["function"] == "swapExactTokens"
    anti = [e for e in entries if e.entry_type == EntryType.ANTI_KNOWLEDGE]
    assert len(anti) == 1 and not anti[0].provenance.bloodstain
    snaps = snapshot_dir(cfg_b.data_dir, parent.testament_id)
    assert (snaps / "PLAYBOOK.md").read_text() == parent.playbook_md
    assert (snaps / "MEMORY.md").read_text() == parent.memory_md
    assert "Testament " in (snaps / "TESTAMENT.txt").read_text()
    assert not (cfg_b.data_dir / "PLAYBOOK.md").exists()  # the successor's own stays its own

    async def die(g: Grimoire) -> Path:
        t = await build_from(g, child.lineage, died_at=T1 + 5000)
        return tm.write_testament(tmp_path / "b-testament.json", t)

    _, _, child_path = boot_in(cfg_b, embedder, None, T1 + 5000, after=die)
    child_t = tm.load_testament(child_path)
    assert child_t.generation == 1 and child_t.parent_testament_id == parent.testament_id
    inherited_kinds = {e.generation for e in child_t.entries}
    assert inherited_kinds == {1}  # everything it holds it inherited, one death back
    grand, g_entries, _ = boot_in(golem_config(tmp_path / "c", "golem-c"), embedder,
                                  child_path, T1 + 9000)
    assert grand.lineage.generation == 2 and len(g_entries) == len(child_t.entries)
    for e in g_entries:
        assert e.generation == 2 and e.provenance.author == "golem-b"
        assert math.isclose(e.confidence, 0.4 * 0.85 ** 2)
        assert e.confidence < 0.4 * 0.85
    assert sum(e.provenance.bloodstain for e in g_entries) == 3


def test_a_restart_does_not_re_import_and_another_parent_is_refused(
        tmp_path: Path, embedder: Embedder) -> None:
    path = parent_testament(tmp_path, embedder)
    cfg_b = golem_config(tmp_path / "b", "golem-b", succession={"inherit": str(path)})
    assert inherit_path(cfg_b) == path
    first, entries, _ = boot_in(cfg_b, embedder, None, T1)
    again, entries2, _ = boot_in(cfg_b, embedder, None, T1 + 600)
    assert first.imported > 0 and again.imported == 0
    assert again.lineage == first.lineage == Lineage.load(cfg_b.data_dir)
    assert sorted(e.id for e in entries2) == sorted(e.id for e in entries)
    assert all(e.created_at == T1 for e in entries2)  # not rewritten
    moved = path.rename(tmp_path / "moved.json")  # the file is gone: the restart still boots
    third, entries3, _ = boot_in(cfg_b, embedder, None, T1 + 900)
    assert third.imported == 0 and third.lineage == first.lineage and len(entries3) == len(entries)
    moved.rename(path)
    # another testament into the same data dir
    raw = tm.to_json(tm.load_testament(path))
    raw["testament_id"] = "t-someone-else"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(raw))
    with pytest.raises(LineageError, match="already holds golem"):
        boot_in(with_inherit(cfg_b, other), embedder, None, T1 + 1200)
    # a golem of its own (generation 0) cannot become a successor later
    cfg_d = golem_config(tmp_path / "d", "golem-d")
    own, _, _ = boot_in(cfg_d, embedder, None, T1)
    assert own.lineage.generation == 0 and own.lineage.parent_testament_id is None
    with pytest.raises(LineageError, match="needs a new data dir"):
        boot_in(cfg_d, embedder, path, T1 + 60)
    # the parent's own namespace is refused
    with pytest.raises(LineageError, match="its own namespace"):
        boot_in(golem_config(tmp_path / "e", "golem-a"), embedder, path, T1)


def test_a_dead_data_dir_refuses_to_inherit(tmp_path: Path, embedder: Embedder) -> None:
    path = parent_testament(tmp_path, embedder)
    cfg = golem_config(tmp_path / "f", "golem-f")
    cfg.data_dir.mkdir(parents=True)
    write_death(cfg.data_dir, DeathRecord("golem-f", "operator", T0, 0, "x.json", "t-x",
                                          "offline", True))
    with pytest.raises(DataDirDead):
        boot_in(cfg, embedder, path, T1)
    assert Lineage.load(cfg.data_dir) is None


def test_the_replay_rule() -> None:
    assert judge([0.9], 0, 1) == "contradicted"  # contradiction beats agreement
    assert judge([0.56], 0, 0) == "agreed"
    assert judge([0.2], 1, 0) == "agreed"
    assert judge([0.54, 0.1], 0, 0) == "silent"
    assert judge([], 0, 0) == "silent"
    assert per_tick(2048, 12) == 342 and per_tick(0, 12) == 1 and per_tick(10_000, 1) == 512


def test_inherited_replay_reinforces_weakens_and_lets_the_curator_promote(
        tmp_path: Path, embedder: Embedder) -> None:
    path = parent_testament(tmp_path, embedder)
    cfg = golem_config(tmp_path / "b", "golem-b", succession={"inherited_replay_ticks": 2})
    ns = "golem-b"

    async def observe(g: Grimoire) -> None:
        # own evidence: the same reverts happen here; own knowledge contradicting the fact
        await g.add_episodes([episode(ns, 300 + i, "revert",
                                      "Reverted sell through swapExactTokens at 0x" + "cd" * 20,
                                      {"event": "Reverted"}) for i in range(2)])
        await g.write_entries([entry(
            ns, "own", "Swap volume at the main pool does not double when the oracle lags "
            "behind spot", confidence=0.9)], checked=False)

    async def replay(g: Grimoire) -> dict[str, Any]:
        await observe(g)
        stage = await InheritedReplay.open(cfg, g)
        assert stage is not None and stage.due()
        out: dict[str, Any] = {"tick1": await stage.run(T1 + 600),
                               "tick2": await stage.run(T1 + 1200)}
        out["due"] = stage.due()
        out["reopened"] = await InheritedReplay.open(cfg, g)
        return out

    _, entries, out = boot_in(cfg, embedder, path, T1, after=replay)
    assert out["due"] is False and out["reopened"] is None  # the window is over
    assert out["tick1"]["replayed"] == out["tick1"]["staged"] == len(entries)
    by_text = {e.text: e for e in entries}
    revert = next(e for t, e in by_text.items() if t.startswith("Bloodstain: sell reverted"))
    assert revert.successful_recalls == 2
    assert math.isclose(revert.confidence, 0.4 * 0.85 + 0.1)
    fact = next(e for t, e in by_text.items() if t.startswith("Swap volume at the main pool"))
    assert fact.successful_recalls == 0
    assert math.isclose(fact.confidence, 0.4 * 0.85 * 0.8 * 0.8)
    assert out["tick1"]["contradicted"] >= 1 and out["tick1"]["agreed"] >= 1
    view = CycleView(now=T1 + 1800, namespace=ns, entries={e.id: e for e in entries})
    params = CuratorParams()
    assert classify(revert, view, params).action == Action.PROMOTE  # type: ignore[union-attr]
    assert classify(fact, view, params).action == Action.KEEP  # type: ignore[union-attr]


def test_golem_run_inherit_boots_a_successor_once(tmp_path: Path, embedder: Embedder) -> None:
    """The real CLI and daemon: --inherit imports at setup; a plain restart keeps it."""
    path = parent_testament(tmp_path, embedder)
    cfg = golem_config(tmp_path / "b", "golem-b")
    args = ["run", "--config", str(cfg.source), "--stop-after", "30m"]
    first = run_golem(*args, "--inherit", str(path), timeout=240)
    assert first.returncode == 0, first.stderr[-2000:]
    lineage = Lineage.load(cfg.data_dir)
    assert lineage is not None and lineage.generation == 1 and lineage.inherited
    assert "testament inherited" in first.stdout + first.stderr
    second = run_golem(*args, timeout=240)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "testament inherited" not in second.stdout + second.stderr
    assert Lineage.load(cfg.data_dir) == lineage


@given(st.integers(min_value=0, max_value=30), st.booleans(),
       st.floats(min_value=0, max_value=1), st.sampled_from(list(tm.EntryKind)))
def test_inherited_confidence_is_the_tier_times_the_erasure(
        generation: int, bloodstain: bool, parent_conf: float, kind: tm.EntryKind) -> None:
    t = tm.parse_testament(TESTAMENT_JSON)
    e = tm.TestamentEntry(kind=kind, text="x", confidence=parent_conf, importance=0.5,
                          generation=generation, bloodstain=bloodstain, source_id="s")
    out = inherited_entry(t, 0, e, namespace="golem-b", now=T1)
    assert out.generation == generation + 1 and out.status == Status.STAGED
    assert math.isclose(out.confidence, 0.4 * 0.85 ** (generation + 1))
    assert out.provenance.bloodstain is bloodstain
    assert out.fact["parent_confidence"] == parent_conf


TESTAMENT_JSON = json.dumps({
    "version": 1, "testament_id": "t-1", "golem_name": "golem-a", "namespace": "golem-a",
    "golem_id": "g-1", "generation": 0, "parent_testament_id": None, "died_at": T0,
    "cause": "test", "provenance": "death_reflection",
    "reflection": {k: [] for k in REFLECTION_CATEGORIES}, "reflection_text": "",
    "reflection_source": "offline", "entries": [], "max_entries": 2048, "playbook_md": "",
    "memory_md": "", "stats": {}})

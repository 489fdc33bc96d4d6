"""The testament: built from a real Grimoire (real model, real stores), within the
bottleneck, carrying all anti-knowledge and bloodstains, and nothing across the
Weismann barrier; strict loading; atomic writing."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.config import Config, load_config
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.payloads import outcome_payload, revert_payload
from golem.grimoire.records import (
    DecayClass,
    EntryType,
    Episode,
    FactKind,
    InsightCategory,
    MemoryType,
    Provenance,
    SemanticEntry,
    Status,
)
from golem.mortality import testament as tm
from golem.mortality.categories import REFLECTION_CATEGORIES
from golem.mortality.lineage import Lineage
from golem.mortality.testament_build import bottleneck, clip_bytes

from ..conftest import config_text
from ..grimoire.conftest import MODEL_DIR

T0 = 1_800_000_000.0
POOL = "0x" + "ab" * 20
ROUTER = "0x" + "cd" * 20


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return Embedder.load(MODEL_DIR, 32)


def golem_config(root: Path, name: str, **extra: dict[str, Any]) -> Config:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "golem.toml"
    sections: dict[str, dict[str, Any]] = {
        "golem": {"name": name, "data_dir": "data"},
        "grimoire": {"model_dir": str(MODEL_DIR)}, "chain": {"mode": "off"}}
    for key, values in extra.items():
        sections.setdefault(key, {}).update(values)
    path.write_text(config_text(sections))
    return load_config(path)


def entry(ns: str, id: str, text: str, *, confidence: float = 0.8, importance: float = 0.6,
          entry_type: EntryType = EntryType.INSIGHT, fact_kind: FactKind | None = None,
          fact: dict[str, Any] | None = None, status: Status = Status.ACTIVE,
          decay_class: DecayClass = DecayClass.STRATEGIC, process: str = "consolidation",
          ) -> SemanticEntry:
    return SemanticEntry(
        id=id, namespace=ns, text=text, entry_type=entry_type, memory_type=MemoryType.FACT,
        created_at=T0, confidence=confidence, importance=importance,
        category=InsightCategory.STRATEGIC_PATTERNS, fact_kind=fact_kind, fact=fact or {},
        status=status, decay_class=decay_class,
        provenance=Provenance(author=ns, process=process))


def episode(ns: str, i: int, category: str, text: str, payload: dict[str, Any],
            importance: float | None = None) -> Episode:
    return Episode(id=f"ep{i:04d}", namespace=ns, chain_id=31337, block_number=100 + i,
                   block_hash=f"0x{i:064x}", log_index=0, tx_hash=f"0x{i:064x}", tick=i,
                   observed_at=T0 + i, category=category, protocol="PairV2", text=text,
                   payload=payload, importance=importance)


LIFE_ENTRIES = {
    "fact_hi": "Swap volume at the main pool doubles when the oracle lags behind spot",
    "fact_lo": "Gas looked slightly cheaper on one tuesday, maybe",
    "anti_lo": "Never sell through the router's swapExactTokens when the pool is thin",
    "causal": "Large swaps at the main pool cause lending utilisation to rise within an hour",
    "proc": "Action 'swap' succeeded 4 of 5 times (80%); mean P&L +12.34 USD per attempt.",
    "note": "Working memory note: check the pool again in ten minutes",
    "cand": "Unconfirmed candidate: liquidity leaves before big oracle updates",
    "dream": "Dream hypothesis: fees at the main pool ran above their baseline after rain",
}


async def live_a_life(g: Grimoire) -> None:
    """A golem's worth of memory: facts of every kind, chain episodes, failures."""
    ns = g.namespace
    e = LIFE_ENTRIES
    await g.write_entries([
        entry(ns, "fact_hi", e["fact_hi"], confidence=0.8, importance=0.7),
        entry(ns, "fact_lo", e["fact_lo"], confidence=0.2),
        entry(ns, "anti_lo", e["anti_lo"], confidence=0.1, importance=0.9,
              entry_type=EntryType.ANTI_KNOWLEDGE, fact_kind=FactKind.ANTI_KNOWLEDGE,
              fact={"key": "anti|router|swap", "warning": e["anti_lo"], "address": ROUTER}),
        entry(ns, "causal", e["causal"], confidence=0.6, entry_type=EntryType.CAUSAL_LINK,
              fact_kind=FactKind.CAUSAL_RELATION,
              fact={"key": "causal|swap|util", "cause": "swap", "effect": "util", "lag_s": 900}),
        entry(ns, "proc", e["proc"], confidence=0.49, entry_type=EntryType.STRATEGY_FRAGMENT,
              fact_kind=FactKind.PROCEDURAL,
              fact={"key": "procedural|swap", "strategy": "swap", "attempts": 5,
                    "succeeded": 4, "pnl_n": 5, "pnl_mean_usd": 12.34,
                    "position_size": 1500.0, "observation": "x"}),
        entry(ns, "note", e["note"], decay_class=DecayClass.EPHEMERAL),
        entry(ns, "cand", e["cand"], status=Status.STAGED),
        entry(ns, "dream", e["dream"], status=Status.PRUNED, process="dream"),
    ], checked=False)
    eps = [episode(ns, i, "swap", f"Swap at pool {POOL}: amount0In 987654321 amount1Out "
                   f"{1000 + i} (sender {ROUTER})", {"amount0In": 987654321},
                   importance=i / 20) for i in range(12)]
    eps += [episode(ns, 100 + i, "revert", f"Reverted sell through swapExactTokens at {ROUTER}",
                    revert_payload(ROUTER, "swapExactTokens", POOL, "sell")) for i in range(3)]
    eps.append(episode(ns, 200, "strategy_outcome", "swap ok, pnl -5.5 USD",
                       {**outcome_payload("swap", "ok", -5.5), "address": POOL,
                        "amount_in": 31337.0}))
    eps.append(episode(ns, 201, "strategy_outcome", "swap ok, pnl +3.25 USD",
                       outcome_payload("swap", "ok", 3.25)))
    await g.add_episodes(eps)


def reflection() -> dict[str, list[str]]:
    return {k: [f"{v}: one line"] for k, v in REFLECTION_CATEGORIES.items()}


async def build_from(g: Grimoire, lineage: Lineage, **kw: Any) -> tm.Testament:
    args: dict[str, Any] = {
        "cause": "economic: budget exhausted", "died_at": T0 + 5000,
        "reflection": reflection(), "reflection_text": "I traded; I died.",
        "reflection_source": "offline", "playbook_md": "# PLAYBOOK\n- be careful\n",
        "memory_md": "# MEMORY\n", "min_confidence": 0.5, "max_entries": 2048}
    args.update(kw)
    return await tm.build_testament(g, lineage=lineage, **args)


def first_lineage(cfg: Config) -> Lineage:
    return Lineage.create(name=cfg.golem.name, namespace=cfg.grimoire.namespace,
                          seed=cfg.golem.seed, born_at=T0)


def built(tmp_path: Path, embedder: Embedder, **kw: Any) -> tm.Testament:
    cfg = golem_config(tmp_path / "a", "golem-a")

    async def main() -> tm.Testament:
        g = await Grimoire.open(cfg, now=lambda: T0 + 5000, embedder=embedder)
        try:
            await live_a_life(g)
            return await build_from(g, first_lineage(cfg), **kw)
        finally:
            await g.close()

    return anyio.run(main)


def test_a_testament_from_a_real_grimoire_is_valid_and_keeps_what_must_cross(
        tmp_path: Path, embedder: Embedder) -> None:
    t = built(tmp_path, embedder)
    path = tm.write_testament(tmp_path / "out" / tm.TESTAMENT_FILE, t)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert not list(path.parent.glob(".*tmp*"))
    loaded = tm.load_testament(path)
    assert loaded == t
    assert t.version == tm.TESTAMENT_VERSION and t.provenance == "death_reflection"
    assert t.generation == 0 and t.parent_testament_id is None
    assert len(t.entries) <= t.max_entries <= tm.MAX_ENTRIES
    by_source = {e.source_id: e for e in t.entries}
    assert by_source["fact_hi"].kind == tm.EntryKind.FACT
    assert by_source["anti_lo"].kind == tm.EntryKind.ANTI_KNOWLEDGE  # at confidence 0.1
    assert by_source["causal"].kind == tm.EntryKind.CAUSAL_LINK
    assert by_source["proc"].kind == tm.EntryKind.PROCEDURAL
    assert by_source["dream"].kind == tm.EntryKind.BLOODSTAIN
    assert by_source["dream"].text.startswith("Refuted hypothesis:")
    for stays in ("fact_lo", "note", "cand"):  # low confidence, ephemeral, unconfirmed
        assert stays not in by_source
    stains = [e for e in t.entries if e.kind == tm.EntryKind.BLOODSTAIN and e.source_id != "dream"]
    assert {e.conditions["outcome"] for e in stains} == {"reverted", "lost money"}
    revert = next(e for e in stains if e.conditions["outcome"] == "reverted")
    assert revert.conditions["occurrences"] == 3 and revert.bloodstain
    assert revert.conditions["function"] == "swapExactTokens"
    assert revert.conditions["address"] == ROUTER
    summaries = [e for e in t.entries if e.kind == tm.EntryKind.EPISODE_SUMMARY]
    assert 1 <= len(summaries) <= 2048 // 8
    assert summaries[0].source_id == "ep0011"  # the most important episode first
    assert t.counts()["bloodstains"] == 3


def test_the_weismann_barrier_stops_payloads_parameters_and_money(
        tmp_path: Path, embedder: Embedder) -> None:
    t = built(tmp_path, embedder)
    text = tm.dumps(t)
    for leaked in ("987654321", '"amount0In"', "pnl_usd", "pnl_mean_usd", "position_size",
                   "31337", '"amount_in"', "12.34", "5.5", "3.25", '"payload"', "1011"):
        assert leaked not in text, leaked
    proc = next(e for e in t.entries if e.source_id == "proc")
    assert proc.text == "Action 'swap' succeeded 4 of 5 times (80%); on average it made money."
    assert set(proc.fact) == {"key", "strategy", "attempts", "succeeded", "observation"}
    assert "<amount>" in tm.dumps(t) or all("USD" not in e.text for e in t.entries)


def test_the_bottleneck_keeps_anti_knowledge_then_bloodstains(
        tmp_path: Path, embedder: Embedder) -> None:
    t = built(tmp_path, embedder, max_entries=3)
    assert len(t.entries) == 3
    assert [e.kind for e in t.entries] == [tm.EntryKind.ANTI_KNOWLEDGE,
                                           tm.EntryKind.BLOODSTAIN, tm.EntryKind.BLOODSTAIN]
    assert sum(t.stats["dropped_by_bottleneck"].values()) == t.stats["candidates"] - 3


def good_json(tmp_path: Path, embedder: Embedder) -> dict[str, Any]:
    return tm.to_json(built(tmp_path, embedder))


@pytest.mark.parametrize(("mutate", "reason"), [
    (lambda d: d.update(version=2), "unsupported testament version 2"),
    (lambda d: d.update(reflection_text="x" * 6000), "reflection_text: 6000 bytes"),
    (lambda d: d.update(max_entries=4096), "max_entries: must be an integer in [1, 2048]"),
    (lambda d: d.update(max_entries=1), "over the bottleneck of 1"),
    (lambda d: d["reflection"].pop("warnings"), "missing ['warnings']"),
    (lambda d: d["reflection"].update(gossip=[]), "unknown ['gossip']"),
    (lambda d: d["entries"][0].update(kind="cache"), "unknown kind 'cache'"),
    (lambda d: d["entries"][0]["fact"].update(pnl_usd=1.0), "Weismann barrier"),
    (lambda d: d["entries"][0].update(confidence=1.5), "must be in [0, 1]"),
    (lambda d: d.update(provenance="rumour"), "provenance must be 'death_reflection'"),
])
def test_load_rejects_invalid_testaments_with_one_line(
        tmp_path: Path, embedder: Embedder, mutate: Any, reason: str) -> None:
    raw = good_json(tmp_path, embedder)
    mutate(raw)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(tm.TestamentError) as err:
        tm.load_testament(path)
    assert reason in str(err.value) and "\n" not in str(err.value)


def test_load_rejects_oversize_files_and_garbage(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (tm.MAX_FILE_BYTES + 1))
    with pytest.raises(tm.TestamentError, match="over the"):
        tm.load_testament(big)
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    with pytest.raises(tm.TestamentError, match="not JSON"):
        tm.load_testament(junk)
    with pytest.raises(tm.TestamentError, match="no such testament"):
        tm.load_testament(tmp_path / "missing.json")


def test_reflection_text_is_compressed_to_the_limit(tmp_path: Path, embedder: Embedder) -> None:
    t = built(tmp_path, embedder, reflection_text="é" * 10_000)
    assert len(t.reflection_text.encode()) <= tm.MAX_REFLECTION_BYTES
    assert t.reflection_text.endswith("truncated]")
    rendered = tm.render_text(t)
    assert "## What I suspect but can't prove" in rendered and "## anti_knowledge (1)" in rendered


@given(st.text(max_size=3000), st.integers(min_value=0, max_value=4000))
def test_clip_bytes_never_exceeds_its_limit(text: str, limit: int) -> None:
    out = clip_bytes(text, limit, marker="")
    assert len(out.encode()) <= limit
    assert text.startswith(out)


kinds = st.sampled_from(list(tm.EntryKind))


@given(st.lists(st.tuples(kinds, st.floats(0, 1), st.floats(0, 1), st.integers(0, 5)),
                max_size=60), st.integers(min_value=1, max_value=40))
def test_bottleneck_keeps_at_most_max_and_anti_knowledge_first(
        spec: list[tuple[tm.EntryKind, float, float, int]], max_entries: int) -> None:
    entries = [tm.TestamentEntry(kind=k, text="t", confidence=c, importance=i, generation=g,
                                 source_id=str(n)) for n, (k, c, i, g) in enumerate(spec)]
    kept, dropped = bottleneck(entries, max_entries)
    assert len(kept) == min(len(entries), max_entries)
    assert len(kept) + sum(dropped.values()) == len(entries)
    anti = sum(1 for e in entries if e.kind == tm.EntryKind.ANTI_KNOWLEDGE)
    assert sum(1 for e in kept if e.kind == tm.EntryKind.ANTI_KNOWLEDGE) == min(anti, max_entries)

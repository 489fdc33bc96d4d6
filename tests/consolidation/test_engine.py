"""The consolidation engine end to end: real model, real LanceDB and SQLite in temp dirs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio
import numpy as np

from golem.config import Config, load_config
from golem.consolidation.clusters import Cluster
from golem.consolidation.engine import ConsolidationEngine, ConsolidationReport, EngineParams
from golem.events import EventBus
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.payloads import outcome_payload, revert_payload
from golem.grimoire.records import EntryType, Episode, FactKind, SemanticEntry, Status, episode_id

from ..conftest import REPO, config_text
from ..grimoire.stores import semantic_store

T = TypeVar("T")
T0 = 1_767_225_600.0
POOL_A = "0x00000000000000000000000000000000000000Aa"
POOL_B = "0x00000000000000000000000000000000000000bB"
HONEYPOT = "0x000000000000000000000000000000000000dEaD"
HONEY = "0x0000000000000000000000000000000000001111"


def make_config(tmp_path: Path) -> Config:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({
        "golem": {"name": "golem-a", "data_dir": "data"},
        "grimoire": {"model_dir": str(REPO / "models" / "all-minilm-l6-v2-int8")},
    }))
    return load_config(path)


def ep(i: int, t: float, payload: dict[str, Any], category: str = "swap") -> Episode:
    block_hash = f"0x{i:064x}"
    return Episode(id=episode_id(31337, block_hash, 0), namespace="golem-a", chain_id=31337,
                   block_number=i, block_hash=block_hash, log_index=0, tx_hash=block_hash,
                   tick=i, observed_at=t, category=category, protocol="Uniswap V2",
                   text=f"{payload.get('event', category)} at {payload.get('address')} #{i}",
                   payload=payload, curiosity=0.3 + (i % 7) / 10)


def market() -> list[Episode]:
    """Swaps at A (mean size 5, stddev 2), Syncs at B, a honeypot, action outcomes,
    and one inconsistent Sync (reserve 0) the gate must reject."""
    out = []
    for i, v in enumerate([2, 4, 4, 4, 5, 5, 7, 9]):
        out.append(ep(i, T0 + 60 * i, {
            "event": "Swap", "address": POOL_A, "perceived_regime": "calm",
            "args": {"sender": POOL_B, "amount0In": v, "amount1In": 0, "amount0Out": 0,
                     "amount1Out": 3, "to": POOL_B}}))
    for i in range(4):
        out.append(ep(20 + i, T0 + 90 * i, {
            "event": "Sync", "address": POOL_B, "perceived_regime": "calm",
            "args": {"reserve0": 1000 + i, "reserve1": 2000}}, "liquidity"))
    out += [ep(40 + i, T0 + 30 * i, revert_payload(HONEYPOT, "swapExactTokensForETH", HONEY,
                                                   "sell"), "revert") for i in range(5)]
    out += [ep(60 + i, T0 + 45 * i, outcome_payload("rebalance", r, pnl), "strategy_outcome")
            for i, (r, pnl) in enumerate([("ok", 10.0), ("reverted", -2.0), ("ok", 4.0)])]
    out.append(ep(99, T0 + 5, {"event": "Sync", "address": POOL_B, "perceived_regime": "calm",
                               "args": {"reserve0": 0, "reserve1": 5}}, "liquidity"))
    return out


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn, backend_options={"use_uvloop": True})


def test_consolidation_extracts_reinforces_and_never_duplicates(
        tmp_path: Path, embedder: Embedder) -> None:
    cfg = make_config(tmp_path)
    seen: list[dict[str, Any]] = []
    bus = EventBus(lambda: T0)
    bus.subscribe(lambda _event, record: seen.append(record))
    now = T0 + 3600

    async def main() -> tuple[ConsolidationReport, ConsolidationReport, ConsolidationReport,
                              list[SemanticEntry], list[SemanticEntry], dict[str, Any]]:
        g = await Grimoire.open(cfg, now=lambda: now, embedder=embedder, events=bus)
        try:
            await g.add_episodes(market())
            seen: list[tuple[int, list[Cluster], dict[str, Episode]]] = []

            async def model_pass(tick: int, _now: float, groups: Sequence[Cluster],
                                 replayed: Mapping[str, Episode]) -> bool:
                seen.append((tick, list(groups), dict(replayed)))
                return False

            engine = ConsolidationEngine(g, tmp_path / "state1", events=bus,
                                         assist=model_pass)
            first = await engine.run(tick=1, now=now)
            after_first = await g.entries()
            # Same engine again: the cursor has moved, nothing new to learn.
            idle = await engine.run(tick=2, now=now + 60)
            engine.close()
            # A fresh cursor over the same episodes: the same facts, reinforced.
            again = ConsolidationEngine(g, tmp_path / "state2", events=bus)
            second = await again.run(tick=3, now=now + 120)
            again.close()
            bad = await g.get(episode_id(31337, f"0x{99:064x}", 0))
            good = await g.get(episode_id(31337, f"0x{0:064x}", 0))
            (tick, groups, replayed), = seen[:1]
            assert tick == 1 and len(groups) == first.clusters and len(replayed) == 20
            assert {m for c in groups for m in c.ids} <= set(replayed)
            return first, idle, second, after_first, await g.entries(), {"bad": bad, "good": good}
        finally:
            await g.close()

    first, idle, second, after_first, after_second, eps = run(main)

    assert first.new_episodes == 21 and first.verified == 20 and first.rejected == 1
    assert first.replayed == 20 and first.clusters >= 3
    assert first.created == len(after_first) > 0 and first.reinforced == 0
    assert idle.new_episodes == 0 and idle.created == idle.reinforced == 0
    assert second.verified == 0  # already verified by the first run
    assert second.created == 0 and second.reinforced == first.created
    assert second.replayed == 20 and second.clusters == 0  # no model pass: not clustered
    assert len(after_second) == len(after_first)  # reinforced, not duplicated

    by_key = {e.fact["key"]: e for e in after_second}
    before = {e.fact["key"]: e for e in after_first}
    swap = by_key[f"baseline|swap_amount0|{POOL_A.lower()}|calm"]
    assert (swap.fact["mean"], swap.fact["stddev"]) == (5.0, 2.0)  # pooled with itself
    assert swap.fact["n"] == 16 and swap.episode_count == 16
    assert swap.confidence > before[swap.fact["key"]].confidence
    assert swap.last_reinforced == T0 + 3600 + 120
    assert (swap.observed_from, swap.observed_to) == (T0, T0 + 420)

    anti = by_key[f"anti|{HONEYPOT.lower()}|swapExactTokensForETH"]
    assert anti.entry_type == EntryType.ANTI_KNOWLEDGE and anti.status == Status.ACTIVE
    assert "10 of 10 attempts" in anti.text  # 5 of 5, seen twice
    assert before[anti.fact["key"]].text.count("5 of 5 attempts") == 1
    proc = by_key["procedural|rebalance"]
    assert proc.fact_kind == FactKind.PROCEDURAL and "4 of 6" in proc.text

    bad, good = eps["bad"], eps["good"]
    assert isinstance(bad, Episode) and not bad.quality_verified and bad.replay_count == 0
    assert isinstance(good, Episode) and good.quality_verified and good.replay_count == 2

    kinds = [r["kind"] for r in seen]
    assert kinds.count("delta:consolidation") == 3
    assert kinds.count("grimoire:write") == first.created + second.reinforced
    done = [r for r in seen if r["kind"] == "delta:consolidation"]
    assert done[0]["facts_created"] == first.created and done[0]["episodes_verified"] == 20
    assert done[2]["facts_reinforced"] == second.reinforced


def test_old_episodes_are_interleaved_into_later_runs(tmp_path: Path,
                                                      embedder: Embedder) -> None:
    cfg = make_config(tmp_path)
    now = T0 + 3600
    params = EngineParams()

    async def main() -> tuple[ConsolidationReport, int, int]:
        g = await Grimoire.open(cfg, now=lambda: now, embedder=embedder)
        try:
            episodes = market()
            await g.add_episodes(episodes[:12])
            engine = ConsolidationEngine(g, tmp_path / "state", params=params)
            await engine.run(tick=1, now=now)
            later = [ep(200 + i, now + 10 + i, e.payload, e.category)
                     for i, e in enumerate(episodes[12:20])]
            await g.add_episodes(later)
            report = await engine.run(tick=2, now=now + 600)
            engine.close()
            old = [await g.get(e.id) for e in episodes[:12]]
            swap = next(e for e in await g.entries()
                        if e.fact.get("key") == f"baseline|swap_amount0|{POOL_A.lower()}|calm")
            return (report, sum(isinstance(e, Episode) and e.replay_count == 2 for e in old),
                    int(swap.fact["n"]))
        finally:
            await g.close()

    report, replayed_twice, swap_n = run(main)
    assert report.new_episodes == 8
    assert report.replayed == 8 + 12  # batch large enough: every old verified one too
    assert replayed_twice == 12
    # replaying the 8 old swaps did not count them a second time
    assert swap_n == 8


def test_planted_lag_becomes_a_causal_edge_between_pool_baselines(
        tmp_path: Path, embedder: Embedder) -> None:
    rng = np.random.default_rng(3)
    bins, lag = 120, 3
    a = rng.poisson(1.0, bins)
    b = np.roll(a, lag)
    b[:lag] = 0
    episodes = []
    for pool, counts in ((POOL_A, a), (POOL_B, b)):
        for k, n in enumerate(counts):
            for j in range(int(n)):
                i = len(episodes)
                episodes.append(ep(1000 + i, T0 + 60 * k + 1 + j, {
                    "event": "Sync", "address": pool, "perceived_regime": "calm",
                    "args": {"reserve0": 10 + j, "reserve1": 20}}, "liquidity"))
    cfg = make_config(tmp_path)
    now = T0 + 60 * bins

    async def main() -> tuple[ConsolidationReport, dict[str, SemanticEntry], list[Any]]:
        g = await Grimoire.open(cfg, now=lambda: now, embedder=embedder)
        try:
            await g.add_episodes(episodes)
            engine = ConsolidationEngine(g, tmp_path / "state")
            report = await engine.run(tick=1, now=now)
            engine.close()
            keyed = {e.fact["key"]: e for e in await g.entries()}
            cause = keyed[f"baseline|event_rate|{POOL_A.lower()}|*"]
            with semantic_store(g.data_dir, g.embedder.signature) as store:
                return report, keyed, store.edges_from(cause.id)
        finally:
            await g.close()

    report, keyed, edges = run(main)
    assert report.linked == 1
    relation = keyed[f"causal|event_rate|{POOL_A.lower()}|{POOL_B.lower()}"]
    assert relation.fact["lag_s"] == 180.0 and relation.entry_type == EntryType.CAUSAL_LINK
    [edge] = edges
    assert edge.effect_id == keyed[f"baseline|event_rate|{POOL_B.lower()}|*"].id
    assert edge.lag_s == 180.0


def test_a_fact_contradicting_trusted_knowledge_is_quarantined(
        tmp_path: Path, embedder: Embedder) -> None:
    cfg = make_config(tmp_path)
    now = T0 + 3600
    honey, pot = HONEY, HONEYPOT.lower()

    async def main() -> tuple[ConsolidationReport, list[SemanticEntry]]:
        g = await Grimoire.open(cfg, now=lambda: now, embedder=embedder)
        try:
            await g.remember(f"Selling {honey} through swapExactTokensForETH at {pot} works: "
                             "5 of 5 attempts succeeded.", anchored=True, confidence=0.95)
            await g.add_episodes([e for e in market() if e.category == "revert"])
            engine = ConsolidationEngine(g, tmp_path / "state")
            report = await engine.run(tick=1, now=now)
            engine.close()
            return report, await g.entries()
        finally:
            await g.close()

    report, stored = run(main)
    anti = [e for e in stored if e.entry_type == EntryType.ANTI_KNOWLEDGE]
    assert report.created == 1 and report.quarantined == 1
    assert [e.status for e in anti] == [Status.QUARANTINED]

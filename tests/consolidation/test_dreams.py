"""NREM dreaming: replay against baselines, residuals, staged hypotheses (real Grimoire)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from hypothesis import given
from hypothesis import strategies as st

from golem.config import Config, load_config
from golem.consolidation import dreams as d
from golem.consolidation.dream_cycle import DreamCycle, DreamSettings
from golem.events import DreamCycleComplete, Event, EventBus, GrimoireWrite
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import (
    DecayClass,
    EntryType,
    Episode,
    FactKind,
    MemoryType,
    Provenance,
    SemanticEntry,
    Status,
    episode_id,
)

from ..conftest import config_text
from ..grimoire import conftest as grimoire_fixtures
from ..grimoire.stores import semantic_store

T = TypeVar("T")
embedder = grimoire_fixtures.embedder  # the real model, shared fixtures
model_dir = grimoire_fixtures.model_dir
NOW = 1_767_225_600.0
POOL = "0x00000000000000000000000000000000000000aa"
WINDOW = 3600.0
KEY = f"baseline|swap_amount0|{POOL}|*"


def cfg(tmp_path: Path, model_dir: Path) -> Config:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"name": "golem-a", "data_dir": "data"},
                                 "grimoire": {"model_dir": str(model_dir)}}))
    return load_config(path)


def run(config: Config, embedder: Embedder, body: Callable[[Grimoire], Awaitable[T]],
        events: EventBus | None = None) -> T:
    async def main() -> T:
        g = await Grimoire.open(config, now=lambda: NOW, embedder=embedder, events=events)
        try:
            return await body(g)
        finally:
            await g.close()

    return anyio.run(main)


def swap(i: int, amount0: int, at: float) -> Episode:
    block_hash = f"0x{i:064x}"
    return Episode(
        id=episode_id(31337, block_hash, 0), namespace="golem-a", chain_id=31337,
        block_number=100 + i, block_hash=block_hash, log_index=0, tx_hash=f"0x{i + 7:064x}",
        tick=i, observed_at=at, category="swap", protocol="uniswap-v2",
        text=f"Swap on pool {POOL}: {amount0} token0 in (#{i})",
        payload={"event": "Swap", "address": POOL, "perceived_regime": "calm",
                 "args": {"sender": "0x01", "amount0In": amount0, "amount1In": 0,
                          "amount0Out": 0, "amount1Out": 5, "to": "0x02"}},
        curiosity=0.3)


def baseline_entry(embedder: Embedder, mean: float, stddev: float) -> tuple[SemanticEntry, Any]:
    fact = {"key": KEY, "metric": f"swap_amount0@{POOL}/*", "label": "swap amount0",
            "pool": POOL, "protocol": "uniswap-v2", "regime": "*", "unit": "raw",
            "mean": mean, "stddev": stddev, "n": 20}
    text = f"Baseline for swap amount0 at pool {POOL}: mean {mean}, stddev {stddev}"
    entry = SemanticEntry(id="baseline-1", namespace="golem-a", text=text,
                          entry_type=EntryType.INSIGHT, memory_type=MemoryType.FACT,
                          created_at=NOW - 7200, confidence=0.6, fact_kind=FactKind.BASELINE,
                          fact=fact, decay_class=DecayClass.TACTICAL,
                          provenance=Provenance(author="golem-a", process="consolidation"))
    return entry, embedder.embed([text])


# --- pure ------------------------------------------------------------------------------

@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1e7), st.floats(0, 1e7))
def test_utility_is_positive_bounded_and_fades_with_age(imp: float, cur: float, a: float,
                                                       b: float) -> None:
    w = d.ReplayWeights()
    young, old = min(a, b), max(a, b)
    u = d.replay_utility(imp, cur, young, w)
    assert w.floor <= u <= 1.0 + w.floor + 1e-12
    assert d.replay_utility(imp, cur, old, w) <= u + 1e-12
    assert d.replay_utility(min(1.0, imp + 0.1), cur, young, w) >= u - 1e-12


def test_sampling_is_deterministic_distinct_and_favours_utility() -> None:
    utilities = {f"e{i}": (1.0 if i == 0 else 0.05) for i in range(20)}
    first = d.sample_replay(utilities, 5, seed=7)
    assert first == d.sample_replay(utilities, 5, seed=7)
    assert len(set(first)) == 5
    picks = Counter(x for seed in range(200) for x in d.sample_replay(utilities, 1, seed))
    assert picks["e0"] > 100  # weight 1.0 against 19 x 0.05


@given(st.floats(0.5, 20), st.floats(0, 50), st.integers(1, 100))
def test_hypothesis_confidence_stays_in_band(threshold: float, z: float, n: int) -> None:
    c = d.confidence_for(max(z, threshold), threshold, n)
    assert d.MIN_CONFIDENCE <= c <= d.MAX_CONFIDENCE


def test_residual_found_for_the_planted_episode_only() -> None:
    b = d.baseline_of("b", {"key": KEY, "metric": f"swap_amount0@{POOL}/*", "pool": POOL,
                            "regime": "*", "unit": "raw", "mean": 100.0, "stddev": 10.0})
    assert b is not None and b.regime is None and b.metric == "swap_amount0"
    eps = [d.ReplayedEpisode(f"e{i}", POOL, "calm", NOW, {"swap_amount0": 100.0 + i})
           for i in range(-15, 16)]
    eps.append(d.ReplayedEpisode("planted", POOL, "calm", NOW, {"swap_amount0": 200.0}))
    compared, found = d.residuals(eps, [b], threshold_z=3.0)
    assert compared == len(eps)
    assert [(r.episode_id, r.z) for r in found] == [("planted", 10.0)]
    hyps = d.hypotheses("golem-a", found, 3.0, WINDOW)
    assert len(hyps) == 1 and hyps[0].direction == "above"
    assert hyps[0].id == d.hypotheses("golem-a", found, 3.0, WINDOW)[0].id


def test_unusable_baselines_are_skipped() -> None:
    good = {"key": "k", "metric": "m@p/*", "pool": "p", "mean": 1.0, "stddev": 1.0}
    assert d.baseline_of("b", good) is not None
    assert d.baseline_of("b", {**good, "unit": "per_hour"}) is None
    assert d.baseline_of("b", {**good, "stddev": 0.0}) is None
    assert d.baseline_of("b", {k: v for k, v in good.items() if k != "mean"}) is None


# --- real Grimoire ----------------------------------------------------------------------

def dreamt(e: SemanticEntry) -> bool:
    return e.provenance.process == "dream"


def test_nrem_stages_planted_residual_once_then_reinforces(tmp_path: Path, model_dir: Path,
                                                          embedder: Embedder) -> None:
    config = cfg(tmp_path, model_dir)
    seen: list[Event] = []
    bus = EventBus(lambda: NOW)
    bus.subscribe(lambda event, record: seen.append(event))
    settings = DreamSettings(replay_k=1000, threshold_z=3.0, confirm_window_s=WINDOW)
    start = NOW - 600  # all in one confirm window

    async def body(g: Grimoire) -> None:
        dream = DreamCycle(g, settings=settings, events=bus)
        normal = [swap(i, 1000 + 10 * (i % 5), start + i) for i in range(20)]
        planted = swap(99, 5000, start + 50)
        await g.add_episodes([*normal, planted])
        empty = await dream.run(1, NOW)  # no baseline yet: nothing to compare with
        assert (empty.replayed, empty.hypotheses_staged) == (0, 0)

        entry, vec = baseline_entry(embedder, 1020.0, 14.0)
        with semantic_store(g.data_dir, g.embedder.signature) as store:
            store.put([entry], vec)  # planted beneath the facade: no write event
        first = await dream.run(2, NOW)
        assert first.replayed == 21 and first.residuals == 1 and first.hypotheses_staged == 1
        staged = await g.entries(where=dreamt)
        assert len(staged) == 1
        h = staged[0]
        assert h.status is Status.STAGED
        assert 0.2 <= h.confidence <= 0.3
        assert h.fact["expires_at"] == NOW + WINDOW and h.fact["confirm_window_s"] == WINDOW
        assert h.fact["about"] == KEY and h.fact["direction"] == "above"
        assert h.source_episodes == (planted.id,) and h.episode_count == 1

        again = await dream.run(3, NOW + 60)  # same episodes, same facts: nothing new
        assert (again.hypotheses_staged, again.hypotheses_reinforced) == (0, 0)
        after = await g.entries(where=dreamt)
        assert after == staged

        await g.add_episodes([swap(100, 6000, start + 70)])  # new support, same window
        more = await dream.run(4, NOW + 120)
        assert (more.hypotheses_staged, more.hypotheses_reinforced) == (0, 1)
        [grown] = await g.entries_by_ids([h.id])
        assert grown.episode_count == 2 and grown.status is Status.STAGED
        assert grown.last_reinforced == NOW + 120 and grown.created_at == h.created_at

    run(config, embedder, body, bus)
    done = [e for e in seen if isinstance(e, DreamCycleComplete)]
    assert [(e.tick, e.hypotheses_staged) for e in done] == [(1, 0), (2, 1), (3, 0), (4, 0)]
    writes = [e for e in seen if isinstance(e, GrimoireWrite)]
    # the new hypothesis, then its grown state (status kept)
    assert [w.status for w in writes] == ["staged", "staged"]
    assert len({w.id for w in writes}) == 1


def test_due_on_schedule_or_when_idle() -> None:
    dream = DreamCycle(None, settings=DreamSettings(every_ticks=12, idle_min_ticks=3),  # type: ignore[arg-type]
                       last_tick=10)
    assert not dream.due(12, idle=False) and not dream.due(12, idle=True)
    assert dream.due(13, idle=True) and not dream.due(13, idle=False)
    assert dream.due(22, idle=False)
    assert DreamCycle(None, last_tick=None).due(0, idle=False)  # type: ignore[arg-type]

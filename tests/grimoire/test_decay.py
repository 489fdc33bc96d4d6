"""Ebbinghaus decay against hand-computed values, its invariants, and the decay plan."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.config import GrimoireSection
from golem.grimoire.decay import (
    ANTI_KNOWLEDGE_FLOOR,
    DecayPlan,
    decayed_confidence,
    half_lives_from_config,
    plan_decay,
    retention,
    stability,
)
from golem.grimoire.errors import InvalidMemory
from golem.grimoire.records import (
    DecayClass,
    EntryType,
    FactKind,
    MemoryType,
    SemanticEntry,
    Status,
)

DAY = 86400.0
HALF_LIVES = {DecayClass.STRUCTURAL: 365 * DAY, DecayClass.STRATEGIC: 60 * DAY,
              DecayClass.TACTICAL: 3 * DAY, DecayClass.EPHEMERAL: 0.25 * DAY}

unit = st.floats(min_value=0.0, max_value=1.0)
elapsed = st.floats(min_value=0.0, max_value=1e9)
half_life = st.floats(min_value=60.0, max_value=1e9)
episodes = st.integers(min_value=0, max_value=10_000)


def entry(id: str = "e1", **fields: Any) -> SemanticEntry:
    base: dict[str, Any] = {
        "id": id, "namespace": "golem-a", "text": f"entry {id}",
        "entry_type": EntryType.INSIGHT, "memory_type": MemoryType.FACT, "created_at": 0.0,
        "confidence": 0.8, "decay_class": DecayClass.TACTICAL,
    }
    base.update(fields)
    return SemanticEntry(**base)


# --- hand-computed values -------------------------------------------------------------


def test_stability_hand_values() -> None:
    assert stability(0) == 1.0  # no episodes: ln undefined, floor 1
    assert stability(1) == 1.0  # ln 1 = 0
    assert stability(2) == 1.0  # ln 2 = 0.693 < 1
    assert stability(3) == pytest.approx(1.0986, abs=1e-4)  # ln 3
    assert stability(20) == pytest.approx(2.9957, abs=1e-4)  # ln 20
    assert stability(50) == pytest.approx(3.9120, abs=1e-4)  # ln 50
    with pytest.raises(InvalidMemory, match="episode_count"):
        stability(-1)


def test_retention_hand_values() -> None:
    # tau = half_life / ln 2, so with stability 1 one half-life keeps exactly half
    assert retention(3 * DAY, 3 * DAY, 1) == pytest.approx(0.5)
    assert retention(6 * DAY, 3 * DAY, 1) == pytest.approx(0.25)
    assert retention(0.0, 3 * DAY, 1) == 1.0
    # 20 episodes: S = ln 20 = 2.9957; R(3d) = 2^(-1/2.9957) = 2^(-0.33381) = 0.79344
    assert retention(3 * DAY, 3 * DAY, 20) == pytest.approx(0.79344, abs=1e-5)
    # R(6d) = 2^(-2/2.9957) = 0.62955
    assert retention(6 * DAY, 3 * DAY, 20) == pytest.approx(0.62955, abs=1e-5)
    # a clock that went backwards never produces a gain
    assert retention(-DAY, 3 * DAY, 1) == 1.0


def test_decayed_confidence_hand_values() -> None:
    c0 = 0.8
    assert decayed_confidence(c0, 3 * DAY, 3 * DAY, 1) == pytest.approx(0.4)  # 0.5 x c0
    assert decayed_confidence(c0, 6 * DAY, 3 * DAY, 1) == pytest.approx(0.2)  # 0.25 x c0
    assert decayed_confidence(c0, 3 * DAY, 3 * DAY, 20) == pytest.approx(0.8 * 0.79344,
                                                                         abs=1e-5)
    # anchored: never decays
    assert decayed_confidence(c0, 300 * DAY, 3 * DAY, 1, anchored=True) == c0
    # anti-knowledge: 0.8 x 0.25 = 0.2 would fall below 0.3, held at the floor
    assert decayed_confidence(c0, 6 * DAY, 3 * DAY, 1, is_anti_knowledge=True) == 0.3
    # anti-knowledge above the floor decays normally
    assert decayed_confidence(c0, 3 * DAY, 3 * DAY, 1, is_anti_knowledge=True) == (
        pytest.approx(0.4))
    # anti-knowledge that starts below the floor is held, not lifted
    assert decayed_confidence(0.2, 60 * DAY, 3 * DAY, 1, is_anti_knowledge=True) == 0.2


@pytest.mark.parametrize(("args", "name"), [
    ((1.5, 0.0, DAY, 1), "reference_confidence"),
    ((math.nan, 0.0, DAY, 1), "reference_confidence"),
    ((0.5, math.nan, DAY, 1), "elapsed_s"),
    ((0.5, 0.0, 0.0, 1), "half_life_s"),
    ((0.5, 0.0, math.inf, 1), "half_life_s"),
    ((0.5, 0.0, DAY, -3), "episode_count"),
])
def test_decayed_confidence_rejects_bad_inputs(args: tuple[Any, ...], name: str) -> None:
    with pytest.raises(InvalidMemory, match=name):
        decayed_confidence(*args)


# --- invariants -----------------------------------------------------------------------


@given(unit, elapsed, elapsed, half_life, episodes, st.booleans())
def test_confidence_never_rises_without_reinforcement(
    c0: float, t: float, more: float, hl: float, n: int, anti: bool
) -> None:
    now = decayed_confidence(c0, t, hl, n, is_anti_knowledge=anti)
    later = decayed_confidence(c0, t + more, hl, n, is_anti_knowledge=anti)
    assert 0.0 <= later <= now <= c0


@given(unit, elapsed, half_life, episodes, unit)
def test_anti_knowledge_never_decays_below_its_floor(
    c0: float, t: float, hl: float, n: int, floor: float
) -> None:
    value = decayed_confidence(c0, t, hl, n, is_anti_knowledge=True, floor=floor)
    assert value >= min(c0, floor)
    if c0 >= floor:
        assert value >= floor


@given(unit, elapsed, half_life, episodes, st.booleans())
def test_anchored_entries_never_change(
    c0: float, t: float, hl: float, n: int, anti: bool
) -> None:
    assert decayed_confidence(c0, t, hl, n, anchored=True, is_anti_knowledge=anti) == c0


@given(unit, elapsed, half_life, episodes, st.integers(1, 1000))
def test_more_episodes_decay_slower(c0: float, t: float, hl: float, n: int, extra: int) -> None:
    assert decayed_confidence(c0, t, hl, n + extra) >= decayed_confidence(c0, t, hl, n)


@given(unit, st.floats(0, 1e7), st.floats(0, 1e7), half_life, episodes)
def test_decay_is_memoryless(c0: float, a: float, b: float, hl: float, n: int) -> None:
    # applying decay over [0, a] then [a, a+b] equals the closed form over [0, a+b]
    stepwise = decayed_confidence(decayed_confidence(c0, a, hl, n), b, hl, n)
    assert stepwise == pytest.approx(decayed_confidence(c0, a + b, hl, n), abs=1e-12)


# --- the plan -------------------------------------------------------------------------


def test_half_lives_from_config() -> None:
    assert half_lives_from_config(GrimoireSection()) == {
        DecayClass.STRUCTURAL: 365 * DAY, DecayClass.STRATEGIC: 60 * DAY,
        DecayClass.TACTICAL: 3 * DAY, DecayClass.EPHEMERAL: 6 * 3600.0,
    }


def test_plan_decay_updates_evicts_and_explains() -> None:
    entries = [
        # tactical, reinforced at day 9, 3 days ago: 0.8 -> 0.4
        entry("fading", last_reinforced=9 * DAY),
        # tactical, 12 days since creation: 0.8 / 16 = 0.05 -> eviction candidate
        entry("gone"),
        # same age but anchored: untouched, never evicted
        entry("anchor", anchored=True),
        # anti-knowledge by entry type and by fact kind: held at 0.3, never evicted
        entry("honeypot", entry_type=EntryType.ANTI_KNOWLEDGE),
        entry("scam", fact_kind=FactKind.ANTI_KNOWLEDGE),
        # structural knowledge barely moves in 12 days
        entry("mechanics", decay_class=DecayClass.STRUCTURAL),
        # pruned entries are skipped altogether
        entry("pruned", status=Status.PRUNED),
    ]
    plan = plan_decay(entries, now=12 * DAY, half_lives=HALF_LIVES)
    assert isinstance(plan, DecayPlan)
    assert plan.updates["fading"] == pytest.approx(0.4)
    assert plan.updates["gone"] == pytest.approx(0.05)  # 0.8 * 2^(-12/3)
    assert plan.updates["honeypot"] == ANTI_KNOWLEDGE_FLOOR
    assert plan.updates["scam"] == ANTI_KNOWLEDGE_FLOOR
    assert plan.updates["mechanics"] == pytest.approx(0.8 * 2 ** (-12 / 365))
    assert "anchor" not in plan.updates
    assert "pruned" not in plan.updates
    assert plan.evict == ["gone"]
    assert set(plan.reasons) == set(plan.updates) | set(plan.evict)
    assert "below eviction threshold" in plan.reasons["gone"]
    assert "tactical" in plan.reasons["gone"]
    assert "anti-knowledge floor" in plan.reasons["honeypot"]
    assert "anti-knowledge floor" not in plan.reasons["mechanics"]


def test_plan_decay_is_idempotent_from_the_reference() -> None:
    entries = [entry(f"e{i}", last_reinforced=i * DAY, episode_count=i) for i in range(6)]
    first = plan_decay(entries, 10 * DAY, HALF_LIVES)
    assert plan_decay(entries, 10 * DAY, HALF_LIVES) == first
    # the store wrote the decayed values back but kept the reinforced ones: no compounding
    written = [entry(e.id, last_reinforced=e.last_reinforced, episode_count=e.episode_count,
                     confidence=first.updates.get(e.id, e.confidence)) for e in entries]
    again = plan_decay(written, 10 * DAY, HALF_LIVES,
                       reference_confidence={e.id: e.confidence for e in entries})
    assert again.updates == {}
    assert again.evict == first.evict
    later = plan_decay(written, 13 * DAY, HALF_LIVES,
                       reference_confidence={e.id: e.confidence for e in entries})
    closed = plan_decay(entries, 13 * DAY, HALF_LIVES)
    assert later.updates == pytest.approx(closed.updates)


def test_plan_decay_never_raises_what_is_stored() -> None:
    # a stored confidence below what the reference would give is left alone
    low = entry("low", confidence=0.1, last_reinforced=10 * DAY)
    plan = plan_decay([low], 10 * DAY, HALF_LIVES, reference_confidence={"low": 0.9})
    assert plan.updates == {}


def test_plan_decay_rejects_bad_inputs() -> None:
    with pytest.raises(InvalidMemory, match="ephemeral"):
        plan_decay([entry(decay_class=DecayClass.EPHEMERAL)], DAY,
                   {DecayClass.TACTICAL: DAY})
    with pytest.raises(InvalidMemory, match="now"):
        plan_decay([], math.nan, HALF_LIVES)
    with pytest.raises(ValueError, match="eviction_threshold"):
        plan_decay([], DAY, HALF_LIVES, eviction_threshold=2.0)


entries_st = st.lists(
    st.builds(
        entry,
        id=st.uuids().map(str),
        confidence=unit,
        created_at=st.floats(0, 1e8),
        episode_count=episodes,
        decay_class=st.sampled_from(list(DecayClass)),
        entry_type=st.sampled_from(list(EntryType)),
        anchored=st.booleans(),
        status=st.sampled_from(list(Status)),
    ),
    max_size=20,
    unique_by=lambda e: e.id,
)


@given(entries_st, st.floats(0, 2e8), unit, unit)
def test_plan_decay_invariants(
    entries: list[SemanticEntry], now: float, floor: float, threshold: float
) -> None:
    plan = plan_decay(entries, now, HALF_LIVES, floor, threshold)
    by_id = {e.id: e for e in entries}
    for id_, value in plan.updates.items():
        e = by_id[id_]
        assert value < e.confidence
        assert not e.anchored
        assert e.status != Status.PRUNED
        if e.entry_type == EntryType.ANTI_KNOWLEDGE:
            assert value >= min(e.confidence, floor)
        assert id_ in plan.reasons
    for id_ in plan.evict:
        e = by_id[id_]
        assert not e.anchored
        assert e.entry_type != EntryType.ANTI_KNOWLEDGE
        assert plan.updates.get(id_, e.confidence) < threshold
        assert id_ in plan.reasons


def test_stored_reinforced_confidence_is_the_reference_so_passes_never_compound() -> None:
    # Reinforced to 0.8 at t=0; an earlier pass already wrote the decayed 0.4 into
    # confidence at one half-life. At two half-lives the answer is 0.8/4 = 0.2, not 0.4/4.
    half = HALF_LIVES[DecayClass.TACTICAL]
    stored = entry(confidence=0.4, reinforced_confidence=0.8, last_reinforced=0.0)
    plan = plan_decay([stored], now=2 * half, half_lives=HALF_LIVES)
    assert plan.updates["e1"] == pytest.approx(0.2)
    again = plan_decay([stored], now=2 * half, half_lives=HALF_LIVES)
    assert again.updates == plan.updates

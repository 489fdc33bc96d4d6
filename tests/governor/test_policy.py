"""ContextPolicy: composition order, affect modulation, normalisation, (de)serialisation,
and its PolicyStore against a real state.db in a temp dir."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.errors import StateError
from golem.governor.categories import (
    DEFAULT_ALLOCATIONS,
    Category,
    MarketRegime,
    Phase,
    TaskType,
)
from golem.governor.feedback import BetaTable, FeedbackSample, run_loop2
from golem.governor.policy import (
    AFFECT_FLOOR,
    CompressionConfig,
    ContextPolicy,
    ModelPreference,
    RetrievalConfig,
    affect_shifted,
    default_policy,
    normalise,
)
from golem.governor.policy_store import PolicyStore
from golem.grimoire.records import Pad
from golem.runtime.state import StateStore

C = Category
T = TypeVar("T")
share = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
allocations = st.fixed_dictionaries({c: share for c in Category}).filter(
    lambda a: sum(a.values()) > 0.01)
partial = st.dictionaries(st.sampled_from(list(Category)), share, max_size=5)
pads = st.builds(Pad, *(st.floats(-1.0, 1.0) for _ in range(3)))


def maybe(values: list[T]) -> st.SearchStrategy[T | None]:
    return st.none() | st.sampled_from(values)



def policies() -> st.SearchStrategy[ContextPolicy]:
    return st.builds(
        ContextPolicy,
        revision=st.integers(0, 10_000),
        allocations=allocations,
        task_overrides=st.dictionaries(st.sampled_from(list(TaskType)), partial, max_size=3),
        phase_overrides=st.dictionaries(st.sampled_from(list(Phase)), partial, max_size=3),
        regime_overrides=st.dictionaries(st.sampled_from(list(MarketRegime)), partial,
                                         max_size=3),
        model_preference=st.sampled_from(list(ModelPreference)),
    )


def test_seed_defaults() -> None:
    p = default_policy()
    assert p.revision == 0
    assert p.retrieval == RetrievalConfig(0.3, 10, 0.4, 3, 3, 7)
    assert p.compression == CompressionConfig(200, 150)
    eff = p.effective()
    assert math.isclose(sum(eff.values()), 1.0)
    assert math.isclose(eff[C.INVARIANTS], 0.15 / 0.99)


def test_later_layers_win_per_category() -> None:
    p = ContextPolicy(
        task_overrides={TaskType.SWAP: {C.EPISODES: 0.20, C.STRATEGY: 0.20}},
        phase_overrides={Phase.STABLE: {C.EPISODES: 0.30}},
        regime_overrides={MarketRegime.CALM: {C.EPISODES: 0.40}},
    )
    composed = p.composed(TaskType.SWAP, Phase.STABLE, MarketRegime.CALM)
    assert composed[C.EPISODES] == 0.40  # regime beats phase beats task
    assert composed[C.STRATEGY] == 0.20  # task override survives where nobody else speaks
    assert composed[C.PLAYBOOK] == DEFAULT_ALLOCATIONS[C.PLAYBOOK]
    assert p.composed(TaskType.SWAP, Phase.STABLE)[C.EPISODES] == 0.30
    assert p.composed(TaskType.SWAP)[C.EPISODES] == 0.20


def test_seed_crash_in_conservation_is_survival_focused() -> None:
    eff = default_policy().effective(phase=Phase.CONSERVATION, regime=MarketRegime.CRASH)
    assert eff[C.DREAM_HYPOTHESES] > 0.0  # the regime's 0.01 wins over the phase's 0.0
    assert eff[C.CONTRARIAN] == pytest.approx(0.01 / sum(
        default_policy().composed(None, Phase.CONSERVATION, MarketRegime.CRASH).values()))
    terminal = default_policy().effective(phase=Phase.TERMINAL)
    assert terminal[C.INVARIANTS] == max(terminal.values())


@given(policies(), maybe(list(TaskType)), maybe(list(Phase)), maybe(list(MarketRegime)),
       st.none() | pads)
def test_effective_is_a_distribution(p: ContextPolicy, task: TaskType | None,
                                     phase: Phase | None, regime: MarketRegime | None,
                                     pad: Pad | None) -> None:
    eff = p.effective(task, phase, regime, pad)
    assert set(eff) == set(Category)
    assert all(v >= 0.0 for v in eff.values())
    assert math.isclose(math.fsum(eff.values()), 1.0, abs_tol=1e-9)


@given(policies(), st.sampled_from(list(TaskType)), st.sampled_from(list(Phase)),
       st.sampled_from(list(MarketRegime)))
def test_override_order_respected(p: ContextPolicy, task: TaskType, phase: Phase,
                                  regime: MarketRegime) -> None:
    composed = p.composed(task, phase, regime)
    for cat in Category:
        for layer in (p.regime_overrides.get(regime), p.phase_overrides.get(phase),
                      p.task_overrides.get(task)):
            if layer and cat in layer:
                assert composed[cat] == layer[cat]
                break
        else:
            assert composed[cat] == p.allocations[cat]


@given(policies(), st.sampled_from(list(Phase)), st.sampled_from(list(MarketRegime)), pads)
def test_affect_shifts_are_small_and_keep_zeros(p: ContextPolicy, phase: Phase,
                                                regime: MarketRegime, pad: Pad) -> None:
    composed = p.composed(None, phase, regime)
    shifted = affect_shifted(composed, pad)
    for cat in Category:
        assert abs(shifted[cat] - composed[cat]) <= 0.02 + 1e-12
        assert shifted[cat] >= 0.0
        if composed[cat] == 0.0:
            assert shifted[cat] == 0.0
    assert abs(sum(shifted.values()) - sum(composed.values())) <= 0.045 + 1e-12


@given(maybe(list(TaskType)), maybe(list(Phase)), maybe(list(MarketRegime)), pads)
def test_affect_moves_seed_policy_shares_little(task: TaskType | None, phase: Phase | None,
                                                regime: MarketRegime | None, pad: Pad) -> None:
    p = default_policy()
    calm, moved = p.effective(task, phase, regime), p.effective(task, phase, regime, pad)
    assert max(abs(moved[c] - calm[c]) for c in Category) <= 0.03


def test_affect_rules_follow_the_seed() -> None:
    base = default_policy().composed()
    stressed = affect_shifted(base, Pad(pleasure=-0.5, arousal=0.5, dominance=0.0))
    assert stressed[C.CONTRARIAN] == pytest.approx(0.06)
    assert stressed[C.EPISODES] == pytest.approx(0.11)
    assert stressed[C.PLAYBOOK] == pytest.approx(0.14)
    uncertain = affect_shifted(base, Pad(dominance=-0.5))
    assert uncertain[C.PLAYBOOK] == pytest.approx(0.17)
    assert uncertain[C.DREAM_HYPOTHESES] == pytest.approx(0.02)
    complacent = affect_shifted(base, Pad(pleasure=0.8, arousal=-0.5))
    assert complacent[C.CONTRARIAN] == pytest.approx(0.055)
    assert complacent[C.AFFECT] == pytest.approx(0.015)
    thin = {**base, C.DREAM_HYPOTHESES: 0.012, C.CONTRARIAN: 0.004}
    floored = affect_shifted(thin, Pad(dominance=-0.5))
    assert floored[C.DREAM_HYPOTHESES] == AFFECT_FLOOR  # 0.002 lifted to the seed's floor
    assert floored[C.CONTRARIAN] == 0.004  # never lifted above where it started
    assert affect_shifted(base, Pad()) == base  # neutral mood: nothing moves
    # Boundaries are strict, as in the seed.
    assert affect_shifted(base, Pad(pleasure=-0.3, arousal=0.5)) == base


def test_affect_does_not_revive_a_switched_off_category() -> None:
    declining = default_policy().composed(phase=Phase.DECLINING)
    shifted = affect_shifted(declining, Pad(pleasure=-0.9, arousal=0.9, dominance=-0.9))
    assert shifted[C.CONTRARIAN] == 0.0
    assert shifted[C.DREAM_HYPOTHESES] == 0.0


@given(st.dictionaries(st.sampled_from(list(Category)), st.floats(-1.0, 1.0)))
def test_normalise_never_negative(raw: dict[Category, float]) -> None:
    out = normalise(raw)
    assert all(v >= 0.0 for v in out.values())
    assert math.isclose(math.fsum(out.values()), 1.0)


@given(policies())
def test_round_trip_through_json(p: ContextPolicy) -> None:
    text = json.dumps(p.to_dict(), allow_nan=False)
    assert ContextPolicy.from_dict(json.loads(text)) == p


def test_frozen_against_caller_mutation() -> None:
    alloc = dict(DEFAULT_ALLOCATIONS)
    p = ContextPolicy(allocations=alloc)
    alloc[C.EPISODES] = 0.9
    assert p.allocations[C.EPISODES] == 0.12
    with pytest.raises(TypeError):
        p.allocations[C.EPISODES] = 0.5  # type: ignore[index]


@pytest.mark.parametrize("mutate", [
    lambda d: d.update(extra=1),
    lambda d: d["allocations"].update(bogus=0.1),
    lambda d: d["allocations"].update(episodes=-0.1),
    lambda d: d["allocations"].update(episodes=float("nan")),
    lambda d: d["allocations"].update(episodes="0.1"),
    lambda d: d["allocations"].pop("episodes"),
    lambda d: d["phase_overrides"].update(zombie={}),
    lambda d: d["regime_overrides"].update(calm={"episodes": 2.0}),
    lambda d: d["retrieval"].update(max_episode_count=2.5),
    lambda d: d["retrieval"].update(bogus=1),
    lambda d: d["compression"].update(episode_summary_threshold=-1),
    lambda d: d.update(model_preference="yolo"),
    lambda d: d.update(revision=True),
    lambda d: d.update(revision=-1),
    lambda d: d.update(schema=99),
    lambda d: d.update(allocations=dict.fromkeys(d["allocations"], 0.0)),
    lambda d: d.update(task_overrides=[]),
])
def test_from_dict_rejects(mutate: object) -> None:
    data = default_policy().to_dict()
    mutate(data)  # type: ignore[operator]
    with pytest.raises(ValueError):
        ContextPolicy.from_dict(data)


# --- PolicyStore -----------------------------------------------------------------------


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[StateStore, PolicyStore]]:
    state = StateStore.open(tmp_path)
    policies = PolicyStore.open(state)
    yield state, policies
    policies.close()
    state.close()


def _cycle(policy: ContextPolicy, betas: BetaTable) -> tuple[ContextPolicy, BetaTable]:
    window = [FeedbackSample(MarketRegime.CALM, frozenset(Category),
                             frozenset({Category.EPISODES}), quality=0.8)] * 5
    upd = run_loop2(policy, betas, window, MarketRegime.CALM)
    return upd.policy, upd.betas


def test_empty_store_gives_the_default(stores: tuple[StateStore, PolicyStore]) -> None:
    _, ps = stores
    assert ps.latest() == default_policy()
    custom = ContextPolicy(revision=0, allocations=dict.fromkeys(Category, 1.0))
    assert ps.latest(custom) is custom
    assert ps.betas() == BetaTable()
    assert ps.revisions() == []


def test_saved_revision_survives_reopen(tmp_path: Path) -> None:
    state = StateStore.open(tmp_path)
    ps = PolicyStore.open(state)
    p1, b1 = _cycle(default_policy(), BetaTable())
    ps.save(p1, b1, created_at=100.0)
    p2, b2 = _cycle(p1, b1)
    ps.save(p2, b2, created_at=200.0)
    ps.close()
    state.close()

    state = StateStore.open(tmp_path)
    ps = PolicyStore.open(state)
    assert ps.latest() == p2
    assert ps.betas() == b2
    assert ps.revisions() == [(2, 200.0), (1, 100.0)]
    ps.close()
    state.close()


def test_stale_revision_refused_and_nothing_written(
        stores: tuple[StateStore, PolicyStore]) -> None:
    _, ps = stores
    p1, b1 = _cycle(default_policy(), BetaTable())
    ps.save(p1, b1, created_at=1.0)
    _, b_other = _cycle(p1, b1)
    with pytest.raises(StateError, match="not newer"):
        ps.save(p1, b_other, created_at=2.0)
    assert ps.betas() == b1  # the Betas rolled back with the refused revision
    assert ps.revisions() == [(1, 1.0)]


def test_corrupt_row_is_a_state_error(tmp_path: Path,
                                      stores: tuple[StateStore, PolicyStore]) -> None:
    state, ps = stores
    raw = default_policy().to_dict()
    raw["allocations"]["bogus"] = 0.1
    conn = sqlite3.connect(state.path)
    with conn:
        conn.execute("INSERT INTO context_policy VALUES (3, ?, 0.0)", (json.dumps(raw),))
    conn.close()
    with pytest.raises(StateError, match="revision 3 unreadable"):
        ps.latest()


def test_unmigrated_file_is_refused(tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "state.db").close()
    state = StateStore.open_readonly(tmp_path)
    assert state is not None
    with pytest.raises(StateError, match="no policy tables"):
        PolicyStore.open(state)
    state.close()


def test_state_store_migrates_to_the_policy_tables(tmp_path: Path) -> None:
    StateStore.open(tmp_path).close()
    conn = sqlite3.connect(tmp_path / "state.db")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert {"context_policy", "context_beta", "meta", "loops"} <= tables

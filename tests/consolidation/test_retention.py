"""Episode retention: the pure policy on crafted episodes, and the Delta stage deleting
from a real LanceDB store through Grimoire.forget_episodes, logged and emitted."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem.cognition.journal import DecisionJournal, JournalReader
from golem.config import ConsolidationSection
from golem.consolidation import retention as rt
from golem.consolidation.retention_cycle import EpisodeRetention, episode_ids
from golem.events import EventBus, GrimoireForget
from golem.grimoire.embedder import Embedder
from golem.grimoire.errors import InvalidMemory
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.payloads import outcome_payload, revert_payload
from golem.grimoire.records import (
    EntryType,
    Episode,
    EpisodeFacts,
    MemoryType,
    SemanticEntry,
    Status,
    episode_id,
)

from ..grimoire.stores import episode_store
from .test_engine import make_config, run

T = TypeVar("T")
DAY = rt.DAY_S
NOW = 1_767_225_600.0 + 100 * DAY
P = rt.RetentionParams()  # 14-day horizon, failures 60, salient 90


def facts(i: int, age_days: float, *, category: str = "swap", curiosity: float = 0.3,
          importance: float | None = None, verified: bool = True,
          replays: int = 1) -> EpisodeFacts:
    return EpisodeFacts(f"e{i}", NOW - age_days * DAY, category, curiosity, importance,
                           verified, replays)


def ids(plan: rt.RetentionPlan) -> list[str]:
    return [f.id for f in plan.forget]


# ---- the pure policy ----------------------------------------------------------------------

def test_protected_episodes_are_kept_and_the_rest_past_the_horizon_go() -> None:
    old = 20.0
    episodes = [
        facts(0, old),  # plain, consolidated, past the horizon: goes
        facts(1, old),  # evidence of a live fact
        facts(2, old),  # cited by a decision
        facts(3, old, importance=0.9),  # salient by importance
        facts(4, old, curiosity=0.95),  # salient by curiosity
        facts(5, old, category="revert"),  # a failure: kept 60 days
        facts(6, old, category="strategy_outcome"),
        facts(7, old, verified=True, replays=0),  # verified, never replayed, after cursor
        facts(8, 10.0),  # inside the horizon
    ]
    keep = rt.Keep(cursor=NOW - 30 * DAY, cited=frozenset({"e2"}),
                   fact_sources=frozenset({"e1"}))
    plan = rt.plan(episodes, NOW, P, keep)
    assert ids(plan) == ["e0"]
    assert plan.forget[0].reason == "consolidated and past the 14-day retention horizon"
    assert (plan.expired, plan.evicted, plan.deferred) == (1, 0, 0)
    assert plan.protected == 6 and plan.unconsolidated == 1
    reasons = {e.id: rt.protection(e, NOW, P, keep) for e in episodes}
    assert reasons["e1"] == "evidence of a live fact"
    assert reasons["e2"] == "cited by a decision"
    assert reasons["e5"] == reasons["e6"] == "failure (revert or strategy outcome)"


def test_consolidated_means_replayed_or_behind_the_cursor() -> None:
    unreplayed = facts(0, 20, replays=0)
    unverified = facts(1, 20, verified=False, replays=0)
    assert not rt.consolidated(unreplayed, None)
    assert rt.consolidated(unreplayed, NOW - 20 * DAY)  # read by a run: learned or rejected
    assert not rt.consolidated(unverified, NOW - 21 * DAY)
    assert rt.consolidated(facts(2, 20), None)
    plan = rt.plan([unreplayed, unverified], NOW, P, rt.Keep(cursor=None))
    assert ids(plan) == [] and plan.unconsolidated == 2


def test_protection_by_age_ends_so_the_protected_set_stays_bounded() -> None:
    episodes = [facts(0, 59, category="revert"), facts(1, 61, category="revert"),
                facts(2, 89, curiosity=0.95), facts(3, 91, curiosity=0.95),
                facts(4, 92, importance=0.8), facts(5, 200)]
    keep = rt.Keep(cited=frozenset({"e5"}), fact_sources=frozenset())
    assert ids(rt.plan(episodes, NOW, P, keep)) == ["e5", "e4", "e3", "e1"]  # oldest first
    # a live fact's evidence is kept at any age
    keep = rt.Keep(fact_sources=frozenset({"e5"}))
    assert "e5" not in ids(rt.plan(episodes, NOW, P, keep))


def test_horizon_boundary() -> None:
    params = rt.RetentionParams(horizon_s=14 * DAY)
    at, inside = facts(0, 14.0), facts(1, 14.0 - 1e-6)
    assert ids(rt.plan([at, inside], NOW, params, rt.Keep())) == ["e0"]


def test_over_the_cap_lowest_utility_goes_first_even_inside_the_horizon() -> None:
    episodes = [
        facts(0, 1, curiosity=0.8, replays=1),  # surprising, recent: highest utility
        facts(1, 1, curiosity=0.1, replays=1),
        facts(2, 1, curiosity=0.1, replays=5),  # replayed often: little left to teach
        facts(3, 6, curiosity=0.1, replays=1),  # older: less need
        facts(4, 1, curiosity=0.5, replays=1),
        facts(5, 1, curiosity=0.1, verified=False, replays=0),  # unconsolidated: stays
    ]
    params = rt.RetentionParams(max_episodes=3, low_water=1.0)
    plan = rt.plan(episodes, NOW, params, rt.Keep(cursor=NOW - 7 * DAY))
    assert ids(plan) == ["e2", "e3", "e1"]
    assert plan.evicted == 3 and plan.expired == 0
    assert plan.forget[0].reason == "over the cap of 3 episodes, lowest utility"
    u = {e.id: rt.utility(e, NOW, params) for e in episodes}
    assert u["e2"] < u["e3"] < u["e1"] < u["e4"] < u["e0"]


def test_the_cap_counts_the_whole_store_and_expiry_counts_towards_it() -> None:
    episodes = [facts(0, 20), facts(1, 1, curiosity=0.1), facts(2, 1, curiosity=0.2)]
    params = rt.RetentionParams(max_episodes=10, low_water=1.0)
    # 12 in the store, only these three read: one expires, one more must go
    plan = rt.plan(episodes, NOW, params, rt.Keep(), total=12)
    assert ids(plan) == ["e0", "e1"] and (plan.expired, plan.evicted) == (1, 1)
    # the default evicts down to 90% of the cap once over it, and nothing at the cap
    plan = rt.plan(episodes, NOW, rt.RetentionParams(max_episodes=10), rt.Keep(), total=12)
    assert ids(plan) == ["e0", "e1", "e2"] and plan.evicted == 2
    plan = rt.plan(episodes, NOW, rt.RetentionParams(max_episodes=11), rt.Keep(), total=12)
    assert ids(plan) == ["e0"] and plan.evicted == 0


def test_past_the_cap_protection_holds_for_its_share_only() -> None:
    """A market of reverting accounts: reverts are protected for 60 days, so by age alone
    they would fill the store. Past the cap, those past protected_share of it go first,
    lowest utility first; a live fact's evidence never goes."""
    reverts = [facts(i, 1 + i / 10, category="revert", curiosity=0.5) for i in range(12)]
    swaps = [facts(100 + i, 1, curiosity=0.3) for i in range(4)]
    params = rt.RetentionParams(max_episodes=10, low_water=1.0, protected_share=0.5)
    evidence = rt.Keep(fact_sources=frozenset({"e11"}))  # the oldest revert
    plan = rt.plan(reverts + swaps, NOW, params, evidence)
    # 16 in the store, 6 over: 11 reverts may lose protection down to 5, the oldest first
    assert ids(plan) == ["e10", "e9", "e8", "e7", "e6", "e5"]
    assert (plan.evicted, plan.surplus, plan.expired) == (6, 6, 0)
    assert plan.forget[0].reason == ("over the cap of 10 episodes, protected past 0.5 of it, "
                                     "lowest utility")
    # below their share, the protected stay and the unprotected go
    plan = rt.plan(reverts[:4] + swaps * 2 + [facts(200 + i, 2) for i in range(4)], NOW,
                   params, rt.Keep())
    assert plan.surplus == 0 and plan.evicted == 2
    assert not set(ids(plan)) & {e.id for e in reverts}
    # under the cap, protection is whole
    assert ids(rt.plan(reverts[:9], NOW, params, rt.Keep())) == []


def test_at_most_max_per_run_go_and_the_rest_are_deferred() -> None:
    episodes = [facts(i, 20 + i) for i in range(10)]
    plan = rt.plan(episodes, NOW, rt.RetentionParams(max_per_run=4), rt.Keep())
    assert ids(plan) == ["e9", "e8", "e7", "e6"] and plan.deferred == 6


def test_by_default_one_run_past_the_cap_reaches_the_low_water() -> None:
    """The per-run bound must not cut the eviction to low water short: then every check
    past the cap scans every episode again (5,000 a run at a cap of 100,000 did)."""
    cons = ConsolidationSection()
    for params in (rt.RetentionParams(),
                   rt.RetentionParams(max_episodes=cons.max_episodes,
                                      max_per_run=cons.retention_max_per_run)):
        gap = params.max_episodes - int(params.max_episodes * params.low_water)
        arrivals = 5_000  # two golem hours of the default market, past the cap
        assert params.max_per_run >= gap + arrivals


def test_params_are_validated() -> None:
    with pytest.raises(ValueError, match="horizon_s"):
        rt.RetentionParams(horizon_s=-1)
    with pytest.raises(ValueError, match="max_per_run"):
        rt.RetentionParams(max_per_run=-1)
    with pytest.raises(ValueError, match="horizon_s"):
        rt.RetentionParams(horizon_s=math.nan)
    with pytest.raises(ValueError, match="low_water"):
        rt.RetentionParams(low_water=1.5)
    with pytest.raises(ValueError, match="protected_share"):
        rt.RetentionParams(protected_share=-0.1)


_episode = st.builds(
    lambda i, age, cat, cur, imp, ver, rep: facts(i, age, category=cat, curiosity=cur,
                                                  importance=imp, verified=ver, replays=rep),
    st.integers(0, 60), st.floats(0, 120), st.sampled_from(["swap", "revert", "oracle",
                                                             "strategy_outcome"]),
    st.floats(0, 1), st.none() | st.floats(0, 1), st.booleans(), st.integers(0, 3))


@settings(max_examples=300, deadline=None)
@given(episodes=st.lists(_episode, max_size=60), cap=st.integers(0, 60),
       per_run=st.integers(0, 80), horizon=st.floats(0, 100),
       cursor_age=st.none() | st.floats(0, 120), extra=st.integers(0, 30),
       cited=st.sets(st.integers(0, 60), max_size=15),
       sources=st.sets(st.integers(0, 60), max_size=15))
def test_nothing_protected_or_unconsolidated_is_ever_chosen(
        episodes: list[EpisodeFacts], cap: int, per_run: int, horizon: float,
        cursor_age: float | None, extra: int, cited: set[int], sources: set[int]) -> None:
    params = rt.RetentionParams(horizon_s=horizon * DAY, max_episodes=cap,
                                max_per_run=per_run)
    keep = rt.Keep(cursor=None if cursor_age is None else NOW - cursor_age * DAY,
                   cited=frozenset(f"e{i}" for i in cited),
                   fact_sources=frozenset(f"e{i}" for i in sources))
    unique = list({e.id: e for e in episodes}.values())
    total = len(unique) + extra
    plan = rt.plan(episodes, NOW, params, keep, total=total)
    by_id = {e.id: e for e in unique}
    chosen = ids(plan)
    assert len(chosen) == len(set(chosen)) <= per_run
    assert plan.expired + plan.evicted == len(chosen) + plan.deferred
    for f in plan.forget:
        e = by_id[f.id]
        assert rt.consolidated(e, keep.cursor)
        if "protected past" in f.reason:  # only over the cap, never a fact's evidence
            assert total > cap and e.id not in keep.fact_sources
            assert rt.protection(e, NOW, params, keep) is not None
        else:
            assert rt.protection(e, NOW, params, keep) is None
        assert NOW - e.observed_at >= params.horizon_s or "cap" in f.reason
    eligible = [e for e in unique if rt.consolidated(e, keep.cursor)
                and rt.protection(e, NOW, params, keep) is None]
    bounded = [e for e in unique if rt.consolidated(e, keep.cursor)
               and rt.protection(e, NOW, params, keep) is not None
               and e.id not in keep.fact_sources]
    expired = {e.id for e in eligible if NOW - e.observed_at >= params.horizon_s}
    assert plan.expired == len(expired)
    # protection holds for its share of the cap
    assert plan.surplus == 0 or len(bounded) - plan.surplus >= int(cap * params.protected_share)
    # the cap: enough go to reach it, or every eligible one goes
    assert total - plan.expired - plan.evicted <= cap or (
        plan.evicted - plan.surplus == len(eligible) - len(expired))
    if plan.evicted:  # the evicted are the lowest-utility survivors of expiry
        evicted = [f.id for f in plan.forget if "cap" in f.reason
                   and "protected past" not in f.reason]
        if plan.deferred == 0:
            kept = [e for e in eligible if e.id not in expired and e.id not in evicted]
            worst_kept = min((rt.utility(e, NOW, params) for e in kept), default=math.inf)
            assert all(rt.utility(by_id[i], NOW, params) <= worst_kept for i in evicted)


@settings(max_examples=200, deadline=None)
@given(curiosities=st.lists(st.floats(0, 0.89), min_size=1, max_size=40),
       ages=st.lists(st.floats(0, 13), min_size=40, max_size=40),
       replays=st.lists(st.integers(1, 4), min_size=40, max_size=40), cap=st.integers(0, 40),
       low_water=st.floats(0, 1))
def test_over_the_cap_exactly_the_lowest_utility_go(curiosities: list[float], ages: list[float],
                                                    replays: list[int], cap: int,
                                                    low_water: float) -> None:
    episodes = [facts(i, ages[i], curiosity=c, replays=replays[i])
                for i, c in enumerate(curiosities)]
    params = rt.RetentionParams(max_episodes=cap, low_water=low_water)
    plan = rt.plan(episodes, NOW, params, rt.Keep())
    n = len(episodes)
    assert plan.expired == 0
    assert plan.evicted == (0 if n <= cap else n - int(cap * low_water))
    ranked = sorted(episodes, key=lambda e: (rt.utility(e, NOW, params), e.observed_at, e.id))
    assert ids(plan) == [e.id for e in ranked[:plan.evicted]]


ODD_FLOATS = st.one_of(st.floats(-0.5, 1.5), st.sampled_from([0.0, 1.0, -0.0, math.nan,
                                                               math.inf, -math.inf]))


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(ODD_FLOATS, st.one_of(st.none(), ODD_FLOATS),
                               st.sampled_from([0.0, 0.5, 3.0, 13.0, 40.0, -1.0]),
                               st.integers(-2, 6)), max_size=60),
       weight=st.floats(-0.5, 1.5), half_life_days=st.sampled_from([0.0, 0.5, 7.0]))
def test_by_utility_ranks_as_the_scalar_utility_does(
        rows: list[tuple[float, float | None, float, int]], weight: float,
        half_life_days: float) -> None:
    """The ranking is computed over arrays (replay.gains_of, replay.recency_needs); it
    must equal sorting by ``utility`` itself, ties and all: out-of-range and non-finite
    curiosities and importances, no importance, negative counts, equal ages."""
    episodes = [facts(i, age, curiosity=cur, importance=imp, replays=n)
                for i, (cur, imp, age, n) in enumerate(rows)]
    params = rt.RetentionParams(surprise_weight=weight, need_half_life_s=half_life_days * DAY)
    expected = sorted(episodes, key=lambda e: (rt.utility(e, NOW, params), e.observed_at, e.id))
    assert rt.by_utility(episodes, NOW, params) == expected


# ---- the Delta stage over a real store ----------------------------------------------------



def episode(i: int, age_days: float, *, category: str = "swap", namespace: str = "golem-a",
            curiosity: float = 0.2, replays: int = 1) -> Episode:
    block_hash = f"0x{i:064x}"
    payload: dict[str, Any] = (
        revert_payload("0xdead", "swap", None, "sell") if category == "revert"
        else outcome_payload("hedge", "ok", 1.0) if category == "strategy_outcome"
        else {"event": "Swap", "address": "0xaa", "args": {}})
    return Episode(id=episode_id(31337, block_hash, 0), namespace=namespace, chain_id=31337,
                   block_number=i, block_hash=block_hash, log_index=0, tx_hash=block_hash,
                   tick=i, observed_at=NOW - age_days * DAY, category=category,
                   protocol="Uniswap V2", text=f"{category} #{i}", payload=payload,
                   curiosity=curiosity, quality_verified=True, replay_count=replays)


def unit_vectors(n: int) -> np.ndarray:
    v = np.random.default_rng(n).standard_normal((n, 384)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_the_stage_forgets_through_the_grimoire_logged_and_emitted(
        tmp_path: Path, embedder: Embedder) -> None:
    config = make_config(tmp_path)
    plain = [episode(i, 20 + i) for i in range(7)]
    source, cited, named = episode(10, 30), episode(11, 30), episode(14, 30)
    revert, salient = episode(12, 30, category="revert"), episode(13, 30, curiosity=0.95)
    young = [episode(20 + i, 2) for i in range(3)]
    stranger = episode(30, 40, namespace="golem-b")
    everything = [*plain, source, cited, named, revert, salient, *young, stranger]
    journal = DecisionJournal.open(config.data_dir)
    journal.record(5, NOW - 29 * DAY, provider="offline", status="ok", summary="s",
                   record={"decision": {"referenced": [
                       f"grimoire://golem-a/episode/{cited.id}",
                       f"grimoire://golem-b/episode/{stranger.id}"]}}, predictions=[])
    # the model's own citations (a top-level list), and a record that is not JSON
    journal.record(6, NOW - 29 * DAY, provider="offline", status="ok", summary="s",
                   record={"decision": None, "cited": [f"grimoire://golem-a/episode/{named.id}"]},
                   predictions=[])
    journal.record(7, NOW - 29 * DAY, provider="offline", status="ok", summary="s",
                   record={"cited": [f"grimoire://golem-a/episode/{plain[0].id}"]},
                   predictions=[])
    journal.close()
    with sqlite3.connect(config.data_dir / "cognition" / "decisions.db") as conn:
        conn.execute("UPDATE decisions SET record = '{\"cited\": [' WHERE tick = 7")
    reader = JournalReader(config.data_dir / "cognition" / "decisions.db")
    assert [(t, c is None) for t, _, c in reader.citations_after(
        5, not_before=NOW - 30 * DAY, limit=9)] == [(6, False), (7, True)]
    assert reader.citations_after(0, not_before=NOW - 28 * DAY, limit=9) == []
    seen: list[GrimoireForget] = []

    with episode_store(config.data_dir, embedder.signature) as store:
        store.upsert([stranger], unit_vectors(1))  # another golem's, beneath the facade

    async def main() -> tuple[Any, set[str]]:
        bus = EventBus(lambda: NOW)
        bus.subscribe(lambda event, _r: seen.append(event)
                      if isinstance(event, GrimoireForget) else None)
        g = await Grimoire.open(config, now=lambda: NOW, embedder=embedder, events=bus)
        try:
            mine = [e for e in everything if e is not stranger]
            await g.add_episodes(mine, vectors=unit_vectors(len(mine)))
            await g.write_entries([SemanticEntry(
                id="fact-1", namespace="golem-a", text="swaps at 0xaa average 5",
                entry_type=EntryType.INSIGHT, memory_type=MemoryType.FACT, created_at=NOW,
                source_episodes=(source.id,), status=Status.ACTIVE)], checked=False)
            stage = EpisodeRetention(g, cursor=lambda: NOW - DAY,
                                     journal=JournalReader(config.data_dir / "cognition"
                                                           / "decisions.db"), batch=3)
            report = await stage.run(1, NOW)
            again = await stage.run(2, NOW)
            return (report, again), {e.id for e in everything}
        finally:
            await g.close()

    (report, again), before = run(main)
    with episode_store(config.data_dir, embedder.signature) as store:  # every namespace's
        left = {e.id for batch in store.iter_all() for e in batch}
    gone = {e.id for e in plain}
    assert left == before - gone
    assert report.forgotten == report.expired == 7 and report.evicted == 0
    # the source, the two cited, the revert, the salient (not plain[0]: its record is broken)
    assert report.protected == 5
    assert report.episodes == len(everything) - 1  # this namespace only
    assert again.forgotten == 0
    assert [len(e.ids) for e in seen] == [3, 3, 1]  # batches of 3, oldest first
    assert [i for e in seen for i in e.ids] == [e.id for e in reversed(plain)]
    assert {e.reason for e in seen} == {
        "episode retention: consolidated and past the 14-day retention horizon"}


def test_the_stage_enforces_the_cap(tmp_path: Path, embedder: Embedder) -> None:
    config = make_config(tmp_path)
    eps = [episode(i, 1, curiosity=0.05 * i) for i in range(10)]

    async def main() -> tuple[Any, set[str]]:
        g = await Grimoire.open(config, now=lambda: NOW, embedder=embedder)
        try:
            await g.add_episodes(eps, vectors=unit_vectors(len(eps)))
            stage = EpisodeRetention(g, cursor=lambda: None,
                                     params=rt.RetentionParams(max_episodes=6))
            report = await stage.run(1, NOW)
            return report, await g.scan_episodes(
                lambda batches: {e.id for batch in batches for e in batch})
        finally:
            await g.close()

    report, left = run(main)
    assert report.evicted == report.forgotten == 5 and report.scanned == 10
    assert left == {e.id for e in eps[5:]}  # the least curious went, down to 90% of the cap


def test_forget_episodes_needs_a_reason_and_skips_other_namespaces(
        tmp_path: Path, embedder: Embedder) -> None:
    config = make_config(tmp_path)
    mine, theirs = episode(1, 1), episode(2, 1, namespace="golem-b")
    with episode_store(config.data_dir, embedder.signature) as store:
        store.upsert([theirs], unit_vectors(1))  # another golem's, beneath the facade

    async def main() -> list[str]:
        g = await Grimoire.open(config, now=lambda: NOW, embedder=embedder)
        try:
            await g.add_episodes([mine], vectors=unit_vectors(1))
            with pytest.raises(InvalidMemory, match="reason"):
                await g.forget_episodes([mine.id], "  ")
            return await g.forget_episodes([mine.id, theirs.id, "missing", mine.id], "test")
        finally:
            await g.close()

    gone = run(main)
    with episode_store(config.data_dir, embedder.signature) as store:  # every namespace's
        count = store.count()
    assert gone == [mine.id] and count == 1


def test_episode_ids_from_citations() -> None:
    uris = ["grimoire://golem-a/episode/abc", "grimoire://golem-a/insight/def",
            "grimoire://golem-b/episode/x", "https://example", 5, "grimoire://golem-a/episode/"]
    assert episode_ids(uris, "golem-a") == ["abc"]

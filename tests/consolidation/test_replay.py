"""Replay selection and clustering: priority, Mattar-Daw utility, interleaving (pure)."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from golem.consolidation import clusters, replay
from golem.consolidation.replay import ReplayCandidate, ReplayParams

NOW = 1_767_225_600.0
DAY = 86400.0

unit = st.floats(0, 1)
candidate = st.builds(
    ReplayCandidate,
    id=st.uuids().map(str),
    observed_at=st.floats(NOW - 60 * DAY, NOW),
    curiosity=unit,
    importance=st.none() | unit,
    replay_count=st.integers(0, 20),
    recent=st.booleans(),
    context=st.sampled_from(["a|calm", "b|calm", "a|volatile", ""]),
)
candidates = st.lists(candidate, max_size=60, unique_by=lambda c: c.id)
params = st.builds(ReplayParams, batch_size=st.integers(0, 40), recent_fraction=unit,
                   surprise_weight=unit)


@given(candidates, params, st.integers(0, 2**32))
def test_selection_is_a_deterministic_unique_subset(cs: list[ReplayCandidate],
                                                    p: ReplayParams, seed: int) -> None:
    chosen = replay.select(cs, NOW, p, seed)
    assert chosen == replay.select(list(reversed(cs)), NOW, p, seed)
    assert len(chosen) == len(set(chosen)) == min(p.batch_size, len(cs))
    assert set(chosen) <= {c.id for c in cs}


wild = st.floats(allow_nan=True, allow_infinity=True, width=64)
rough_candidate = st.builds(
    ReplayCandidate,
    id=st.uuids().map(str),
    observed_at=st.floats(NOW - 400 * DAY, NOW + DAY),
    curiosity=wild,
    importance=st.none() | wild,
    replay_count=st.integers(-3, 10**6),
    recent=st.booleans(),
    context=st.sampled_from(["a|calm", "b|calm", "a|volatile", ""]),
)
rough_params = st.builds(ReplayParams, batch_size=st.integers(0, 80), recent_fraction=unit,
                         surprise_weight=wild, min_curiosity=st.floats(-0.5, 1.5),
                         need_half_life_s=st.sampled_from([0.0, -1.0, 3600.0, 7 * DAY]))


def scalar_select(cs: list[ReplayCandidate], now: float, p: ReplayParams,
                  seed: int) -> list[str]:
    """select() as it was written before its utilities went over arrays: one
    replay.utility call per old candidate."""
    def clipped(x: float) -> float:
        return min(max(x, 0.0), 1.0) if math.isfinite(x) else 0.0

    eligible = [c for c in cs if clipped(c.curiosity) >= p.min_curiosity]
    recent = [c for c in eligible if c.recent]
    old = [c for c in eligible if not c.recent]
    take_recent, take_old = replay.split(p.batch_size, p.recent_fraction, len(recent),
                                         len(old))
    recent.sort(key=lambda c: (-replay.priority(c.curiosity, c.importance,
                                                p.surprise_weight), c.id))
    live = Counter(c.context for c in recent)
    share = {k: n / len(recent) for k, n in live.items()} if recent else {}
    rng = random.Random(seed)
    keyed = []
    for c in sorted(old, key=lambda c: c.id):
        u = rng.random()
        w = replay.utility(c, now, p, share)
        keyed.append((math.log(u) / w if w > 0 and u > 0 else -math.inf, c.id))
    keyed.sort(key=lambda kv: (-kv[0], kv[1]))
    return replay.interleave([c.id for c in recent[:take_recent]],
                             [i for _, i in keyed[:take_old]])


@settings(max_examples=300)
@given(st.lists(rough_candidate, max_size=80, unique_by=lambda c: c.id), rough_params,
       st.integers(0, 2**32))
def test_selection_over_arrays_is_the_scalar_one(cs: list[ReplayCandidate], p: ReplayParams,
                                                 seed: int) -> None:
    """The same replay, in the same order, for any numbers (out of range, NaN, infinite,
    negative counts, no or negative half-life) as one utility() call per candidate."""
    assert replay.select(cs, NOW, p, seed) == scalar_select(cs, NOW, p, seed)
    old = [c for c in cs if not c.recent]
    share = {"a|calm": 0.25, "": 0.5}
    assert replay.utilities(old, NOW, p, share) == [replay.utility(c, NOW, p, share)
                                                    for c in old]


@given(candidates, params, st.integers(0, 2**32))
def test_recent_share_follows_the_interleave_fraction(cs: list[ReplayCandidate],
                                                      p: ReplayParams, seed: int) -> None:
    chosen = set(replay.select(cs, NOW, p, seed))
    recent = {c.id for c in cs if c.recent}
    old = {c.id for c in cs if not c.recent}
    want = round(p.batch_size * p.recent_fraction)
    took_recent, took_old = len(chosen & recent), len(chosen & old)
    # Each side gets its share, unless it runs short; then the other side fills in.
    if len(recent) >= want and len(old) >= p.batch_size - want:
        assert (took_recent, took_old) == (want, p.batch_size - want)
    assert took_recent == min(len(recent), p.batch_size - took_old)


@given(candidates, params, st.integers(0, 2**32))
def test_recent_episodes_go_by_priority(cs: list[ReplayCandidate], p: ReplayParams,
                                        seed: int) -> None:
    chosen = set(replay.select(cs, NOW, p, seed))
    recent = [c for c in cs if c.recent]

    def prio(c: ReplayCandidate) -> float:
        return replay.priority(c.curiosity, c.importance, p.surprise_weight)

    taken = [prio(c) for c in recent if c.id in chosen]
    left = [prio(c) for c in recent if c.id not in chosen]
    if taken and left:
        assert min(taken) >= max(left)


@given(st.lists(st.integers(0, 10**6), max_size=30, unique=True),
       st.lists(st.integers(10**7, 10**8), max_size=30, unique=True))
def test_interleave_spreads_old_evenly_and_keeps_order(r: list[int], o: list[int]) -> None:
    recent, old = [str(x) for x in r], [str(x) for x in o]
    out = replay.interleave(recent, old)
    assert [x for x in out if x in set(recent)] == recent
    assert [x for x in out if x in set(old)] == old
    total = len(out)
    for i in range(1, total + 1):  # every prefix holds about the old share, +-1
        olds = sum(1 for x in out[:i] if x in set(old))
        assert abs(olds - i * len(old) / total) <= 1


@given(unit, st.none() | unit, unit)
def test_priority_is_a_weighted_mix_in_unit_range(cur: float, imp: float | None,
                                                  w: float) -> None:
    value = replay.priority(cur, imp, w)
    assert 0.0 <= value <= 1.0
    assert min(cur, 0.5 if imp is None else imp) - 1e-12 <= value
    assert value <= max(cur, 0.5 if imp is None else imp) + 1e-12


def test_utility_prefers_useful_relevant_old_episodes() -> None:
    p = ReplayParams(batch_size=4, recent_fraction=0.5, need_half_life_s=DAY)
    recent = [ReplayCandidate(f"r{i}", NOW, 0.5, 0.5, 0, True, "pool-a|calm") for i in range(4)]
    fresh_live = ReplayCandidate("good", NOW - DAY, 0.9, 0.9, 0, False, "pool-a|calm")
    worn = ReplayCandidate("worn", NOW - DAY, 0.9, 0.9, 50, False, "pool-a|calm")
    stale = ReplayCandidate("stale", NOW - 30 * DAY, 0.9, 0.9, 0, False, "pool-z|calm")
    dull = ReplayCandidate("dull", NOW - DAY, 0.0, 0.0, 0, False, "pool-a|calm")
    live = {"pool-a|calm": 1.0}
    u = {c.id: replay.utility(c, NOW, p, live) for c in (fresh_live, worn, stale, dull)}
    assert u["good"] > u["worn"] and u["good"] > u["stale"] and u["dull"] == 0.0
    # Over many seeds the best old episode is drawn far more often than the others.
    wins = sum("good" in replay.select([*recent, fresh_live, worn, stale, dull], NOW,
                                       ReplayParams(batch_size=3, recent_fraction=2 / 3,
                                                    need_half_life_s=DAY), seed)
               for seed in range(200))
    assert wins > 120


def test_replay_order_interleaves_old_among_recent() -> None:
    cs = [ReplayCandidate(f"r{i}", NOW, 1 - i / 10, 0.5, 0, True) for i in range(7)]
    cs += [ReplayCandidate(f"o{i}", NOW - DAY, 0.5, 0.5, 0, False) for i in range(3)]
    order = replay.select(cs, NOW, ReplayParams(batch_size=10), seed=1)
    assert [x for x in order if x.startswith("r")] == [f"r{i}" for i in range(7)]
    positions = [i for i, x in enumerate(order) if x.startswith("o")]
    assert len(positions) == 3 and positions[0] > 0 and positions[-1] >= 7


def test_clusters_split_by_pool_then_by_similarity() -> None:
    e1, e2 = np.array([1.0, 0.0, 0.0], np.float32), np.array([0.99, 0.1, 0.0], np.float32)
    e3 = np.array([0.0, 1.0, 0.0], np.float32)
    records = [("a", "Uniswap V2", {"address": "0xAA"}), ("b", "Uniswap V2", {"address": "0xaa"}),
               ("c", "Uniswap V2", {"address": "0xAA"}), ("d", "Uniswap V2", {"address": "0xbb"}),
               ("e", None, {})]
    vectors = {"a": e1, "b": e2, "c": e3, "d": e1}
    found = clusters.cluster(records, vectors, threshold=0.8)
    assert [(c.protocol, c.pool, c.ids) for c in found] == [
        ("-", "-", ("e",)),
        ("Uniswap V2", "0xaa", ("a", "b")),
        ("Uniswap V2", "0xaa", ("c",)),
        ("Uniswap V2", "0xbb", ("d",)),
    ]

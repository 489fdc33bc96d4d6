"""Workspace assembly: budgets, progressive disclosure, masking, compaction, order, deltas."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.governor.assembly import AssemblySettings, assemble, normalise, u_curve
from golem.governor.categories import DEFAULT_ALLOCATIONS, HARD, Category, MarketRegime, Phase
from golem.governor.workspace import (
    Candidate,
    CognitiveWorkspace,
    Disclosure,
    FrameKind,
    Why,
    estimate_tokens,
    next_frame,
)

C = Category


def cand(cid: str, cat: Category, tokens: int, score: float, *, summary_tokens: int = 2,
         hard: bool = False, text: str | None = None) -> Candidate:
    body = text if text is not None else "t" * (4 * tokens)
    return Candidate(cid, cat, f"grimoire://golem/{cat.value}/{cid}", body, score,
                     summary="s" * (4 * summary_tokens), hard=hard)


def only(cat: Category) -> dict[Category, float]:
    return {cat: 1.0}


@st.composite
def candidate_lists(draw: st.DrawFn) -> list[Candidate]:
    n = draw(st.integers(0, 40))
    out = []
    for i in range(n):
        cat = draw(st.sampled_from(list(Category)))
        out.append(Candidate(
            id=f"c{draw(st.integers(0, n + 3))}" if draw(st.booleans()) else f"u{i}",
            category=cat, source=f"grimoire://g/x/{i}",
            text="x" * draw(st.integers(0, 1200)),
            summary="y" * draw(st.integers(1, 120)),
            score=draw(st.floats(-1.0, 4.0, allow_nan=False)),
            hard=draw(st.booleans()) and draw(st.booleans()),
            untrusted=draw(st.booleans())))
    return out


allocations = st.dictionaries(st.sampled_from(list(Category)), st.floats(0.0, 1.0),
                              min_size=1).filter(lambda d: sum(d.values()) > 0)
budgets = st.integers(20, 6000)


def soft_tokens(ws: CognitiveWorkspace, cat: Category) -> int:
    return sum(p.tokens for p in ws.placed(cat).values() if not p.candidate.is_hard)


@given(candidate_lists(), allocations, budgets)
def test_soft_categories_stay_within_95_percent_of_their_budget(
    cands: list[Candidate], alloc: dict[Category, float], total: int
) -> None:
    ws = assemble(cands, alloc, total)
    for cat in Category:
        if cat in HARD:
            continue
        assert soft_tokens(ws, cat) <= 0.95 * ws.reasons[cat].allocated
        assert ws.reasons[cat].allocated == math.floor(normalise(alloc)[cat] * total)


@given(candidate_lists(), allocations, budgets)
def test_hard_context_is_never_dropped_or_compacted(
    cands: list[Candidate], alloc: dict[Category, float], total: int
) -> None:
    ws = assemble(cands, alloc, total)
    for key in {(c.category, c.id) for c in cands if c.is_hard}:
        placed = ws.placed(key[0]).get(key[1])
        assert placed is not None, key
        assert placed.candidate.is_hard and placed.disclosure is Disclosure.FULL
    assert all(e.why is Why.DUPLICATE for e in ws.exclusions
               if (e.category, e.id) in ws.included_ids())


@given(candidate_lists(), allocations, budgets)
def test_every_candidate_is_placed_or_excluded_with_a_reason(
    cands: list[Candidate], alloc: dict[Category, float], total: int
) -> None:
    ws = assemble(cands, alloc, total)
    placed = [(b.category, p.candidate.id) for b in ws.blocks if not b.echo for p in b.items]
    assert len(placed) == len(set(placed))
    excluded = [(e.category, e.id) for e in ws.exclusions]
    assert len(placed) + len(excluded) == len(cands)
    for c in cands:
        assert (c.category, c.id) in set(placed) | set(excluded)
    dupes = [e for e in ws.exclusions if e.why is Why.DUPLICATE]
    assert all((e.category, e.id) in set(placed) | {(x.category, x.id) for x in ws.exclusions
                                                    if x.why is not Why.DUPLICATE}
               for e in dupes)
    for cat, reason in ws.reasons.items():
        assert reason.included == len(ws.placed(cat))
        assert reason.excluded == sum(e.category is cat for e in ws.exclusions)
        assert reason.why


@given(candidate_lists(), allocations, budgets)
def test_invariants_open_and_close_the_workspace(
    cands: list[Candidate], alloc: dict[Category, float], total: int
) -> None:
    ws = assemble(cands, alloc, total)
    invariants = ws.placed(C.INVARIANTS)
    if not invariants:
        assert all(b.category is not C.INVARIANTS for b in ws.blocks)
        return
    first, last = ws.blocks[0], ws.blocks[-1]
    assert first.category is C.INVARIANTS and not first.echo
    assert last.category is C.INVARIANTS and last.echo
    assert [p.candidate.id for p in first.items] == [p.candidate.id for p in last.items]
    assert all(p.disclosure is Disclosure.SUMMARY for p in last.items)
    assert all(b.category is not C.INVARIANTS for b in ws.blocks[1:-1])


@given(candidate_lists(), allocations, budgets, st.randoms(use_true_random=False))
def test_deterministic_whatever_the_input_order(
    cands: list[Candidate], alloc: dict[Category, float], total: int, rnd: random.Random
) -> None:
    shuffled = list(cands)
    rnd.shuffle(shuffled)
    assert assemble(cands, alloc, total) == assemble(shuffled, alloc, total)


@given(candidate_lists(), allocations, budgets)
def test_used_and_pressure_add_up(
    cands: list[Candidate], alloc: dict[Category, float], total: int
) -> None:
    ws = assemble(cands, alloc, total)
    assert ws.used == sum(b.tokens for b in ws.blocks)
    assert ws.used == sum(r.used for r in ws.reasons.values())
    assert ws.pressure == pytest.approx(ws.used / total)
    if ws.compacted:  # under the threshold again, unless only hard context is left
        assert ws.pressure <= 0.8 or all(p.candidate.is_hard for b in ws.blocks
                                         for p in b.items)
    else:
        assert ws.pressure <= 0.8


def test_progressive_disclosure_full_then_summary_then_excluded() -> None:
    # Budget 100: full while <= 70, summaries (10 tokens) while <= 95, then excluded.
    cands = [cand(f"i{i}", C.INSIGHTS, 30, 1.0 - i / 10, summary_tokens=10) for i in range(6)]
    ws = assemble(cands, only(C.INSIGHTS), 100, AssemblySettings(compact_above=10.0))
    shown = {cid: p.disclosure for cid, p in ws.placed(C.INSIGHTS).items()}
    assert shown == {"i0": Disclosure.FULL, "i1": Disclosure.FULL, "i2": Disclosure.SUMMARY,
                     "i3": Disclosure.SUMMARY, "i4": Disclosure.SUMMARY}
    assert [(e.id, e.why) for e in ws.exclusions] == [("i5", Why.OVER_BUDGET)]
    reason = ws.reasons[C.INSIGHTS]
    assert (reason.allocated, reason.used, reason.full, reason.summarized, reason.excluded) == (
        100, 90, 2, 3, 1)
    assert "over_budget" in reason.why
    # A smaller, lower-ranked item still goes in full when it fits (seed: no early stop).
    small = [*cands[:2], cand("mid", C.INSIGHTS, 30, 0.5, summary_tokens=2),
             cand("tiny", C.INSIGHTS, 5, 0.0)]
    ws = assemble(small, only(C.INSIGHTS), 100, AssemblySettings(compact_above=10.0))
    assert ws.placed(C.INSIGHTS)["mid"].disclosure is Disclosure.SUMMARY
    assert ws.placed(C.INSIGHTS)["tiny"].disclosure is Disclosure.FULL


def test_blocks_keep_rank_order_within_a_category() -> None:
    cands = [cand(f"p{i}", C.PLAYBOOK, 5, s) for i, s in enumerate([0.2, 0.9, 0.5])]
    ws = assemble(cands, only(C.PLAYBOOK), 1000)
    assert [p.candidate.id for p in ws.blocks[0].items] == ["p1", "p2", "p0"]


def test_episodes_are_observation_masked_3_full_7_summaries() -> None:
    eps = [cand(f"e{i:02d}", C.EPISODES, 10, 1.0 - i / 100) for i in range(12)]
    ws = assemble(eps, only(C.EPISODES), 10_000)
    shown = ws.placed(C.EPISODES)
    assert sorted(i for i, p in shown.items() if p.disclosure is Disclosure.FULL) == [
        "e00", "e01", "e02"]
    assert len([p for p in shown.values() if p.disclosure is Disclosure.SUMMARY]) == 7
    assert [(e.id, e.why) for e in ws.exclusions] == [("e10", Why.MASKED), ("e11", Why.MASKED)]
    ws = assemble(eps, only(C.EPISODES), 10_000,
                  AssemblySettings(full_episode_slots=1, summary_episode_slots=2))
    assert len(ws.placed(C.EPISODES)) == 3


def test_zero_allocation_excludes_soft_but_keeps_hard() -> None:
    cands = [cand("d", C.DREAM_HYPOTHESES, 5, 1.0), cand("m", C.MORTALITY, 50, 0.5)]
    ws = assemble(cands, {C.PLAYBOOK: 1.0}, 1000)
    assert [(e.id, e.why) for e in ws.exclusions] == [("d", Why.NO_BUDGET)]
    assert ws.placed(C.MORTALITY)["m"].disclosure is Disclosure.FULL
    assert "over its share" in ws.reasons[C.MORTALITY].why


def test_hard_flag_in_a_soft_category_is_kept_and_counted_first() -> None:
    warning = cand("w", C.INSIGHTS, 80, 0.0, hard=True)
    rest = [cand(f"i{i}", C.INSIGHTS, 10, 1.0) for i in range(3)]
    ws = assemble([warning, *rest], only(C.INSIGHTS), 100, AssemblySettings(compact_above=10))
    shown = ws.placed(C.INSIGHTS)
    assert shown["w"].disclosure is Disclosure.FULL
    # 80 hard tokens already: no full soft item fits under 70, summaries fit up to 95.
    assert [shown[f"i{i}"].disclosure for i in range(3)] == [Disclosure.SUMMARY] * 3
    assert ws.reasons[C.INSIGHTS].used == 86


def test_compaction_above_80_percent_touches_soft_context_only() -> None:
    alloc = {C.INVARIANTS: 0.5, C.PLAYBOOK: 0.25, C.EPISODES: 0.25}
    hard = [cand("cage", C.INVARIANTS, 700, 1.0, summary_tokens=5)]
    soft = [cand(f"p{i}", C.PLAYBOOK, 40, 0.9 - i / 10, summary_tokens=5) for i in range(5)]
    eps = [cand(f"e{i}", C.EPISODES, 40, 0.5 - i / 100, summary_tokens=5) for i in range(9)]
    ws = assemble([*hard, *soft, *eps], alloc, 1000)
    assert ws.compacted
    assert ws.placed(C.INVARIANTS)["cage"].disclosure is Disclosure.FULL
    assert ws.pressure <= 0.8
    shown = ws.placed(C.EPISODES)
    assert len(shown) <= 7
    assert sum(p.disclosure is Disclosure.FULL for p in shown.values()) <= 2
    assert "compacted" in ws.reasons[C.EPISODES].why
    assert "compacted" not in ws.reasons[C.INVARIANTS].why
    # The same input under a lax threshold is not compacted and shows more.
    lax = assemble([*hard, *soft, *eps], alloc, 1000, AssemblySettings(compact_above=2.0))
    assert not lax.compacted and lax.used > ws.used


def test_compaction_drops_soft_when_hard_alone_is_over_budget() -> None:
    cands = [cand("cage", C.INVARIANTS, 2000, 1.0), cand("p", C.PLAYBOOK, 10, 0.5),
             cand("snap", C.DEFI_SNAPSHOT, 300, 0.5)]
    ws = assemble(cands, DEFAULT_ALLOCATIONS, 1000)
    assert ws.compacted and ws.pressure > 1.0
    assert set(ws.placed(C.INVARIANTS)) == {"cage"}
    assert set(ws.placed(C.DEFI_SNAPSHOT)) == {"snap"}
    assert [(e.id, e.why) for e in ws.exclusions] == [("p", Why.COMPACTED)]


def test_u_curve_matches_the_seed_pattern() -> None:
    assert u_curve([1, 2, 3, 4, 5]) == [1, 3, 5, 4, 2]
    assert u_curve([]) == []
    assert u_curve([1]) == [1]


@given(st.integers(0, 30))
def test_u_curve_puts_better_items_nearer_an_edge(n: int) -> None:
    out = u_curve(list(range(n)))
    assert sorted(out) == list(range(n))
    edge = [min(out.index(r), n - 1 - out.index(r)) for r in range(n)]
    assert edge == sorted(edge)


def test_most_important_blocks_sit_at_the_edges_inside_the_invariants() -> None:
    cands = [cand("cage", C.INVARIANTS, 5, 1.0), cand("snap", C.DEFI_SNAPSHOT, 5, 0.1),
             cand("p", C.PLAYBOOK, 5, 0.9), cand("i", C.INSIGHTS, 5, 0.8),
             cand("k", C.CAUSAL_EDGES, 5, 0.2), cand("s", C.STRATEGY, 5, 0.5)]
    ws = assemble(cands, DEFAULT_ALLOCATIONS, 10_000)
    order = [(b.category, b.echo) for b in ws.blocks]
    # ranked: snapshot (hard), playbook, insights, strategy, causal edges
    assert order == [(C.INVARIANTS, False), (C.DEFI_SNAPSHOT, False), (C.INSIGHTS, False),
                     (C.CAUSAL_EDGES, False), (C.STRATEGY, False), (C.PLAYBOOK, False),
                     (C.INVARIANTS, True)]


def test_delta_reports_added_removed_and_changed() -> None:
    a = [cand("cage", C.INVARIANTS, 5, 1.0), cand("p1", C.PLAYBOOK, 10, 0.9),
         cand("snap", C.DEFI_SNAPSHOT, 10, 0.5, text="price 100")]
    first = assemble(a, DEFAULT_ALLOCATIONS, 1000)
    assert first.delta is None
    same = assemble(a, DEFAULT_ALLOCATIONS, 1000, previous=first)
    assert same.delta is not None and same.delta.changed_categories == ()
    assert same.delta.tokens == 0 and same.delta.share == 0.0
    b = [a[0], cand("p2", C.PLAYBOOK, 40, 0.9),
         cand("snap", C.DEFI_SNAPSHOT, 10, 0.5, text="price 101")]
    nxt = assemble(b, DEFAULT_ALLOCATIONS, 1000, previous=first)
    d = nxt.delta
    assert d is not None
    assert d.added == {C.PLAYBOOK: ("p2",)}
    assert d.removed == {C.PLAYBOOK: ("p1",)}
    assert d.changed == {C.DEFI_SNAPSHOT: ("snap",)}
    assert d.changed_categories == (C.PLAYBOOK, C.DEFI_SNAPSHOT)
    assert d.tokens == 40 + estimate_tokens("price 101")
    assert d.share == pytest.approx(d.tokens / 1000)


def test_candidate_tokens_and_summary() -> None:
    c = Candidate("x", C.INSIGHTS, "grimoire://g/insight/x", "abcde\nsecond line", 0.5)
    assert c.text_tokens == estimate_tokens(c.text) == 5  # ceil(17 / 4)
    assert c.summary == "abcde" and c.summary_tokens == 2
    assert estimate_tokens("") == 0 and estimate_tokens("a") == 1
    assert len(Candidate("y", C.INSIGHTS, "s", "z" * 500, 0.1).summary) == 200
    assert Candidate("m", C.MORTALITY, "state://mortality", "v", 0.0).is_hard
    with pytest.raises(ValueError):
        Candidate("", C.INSIGHTS, "s", "t", 0.1)
    with pytest.raises(ValueError):
        Candidate("n", C.INSIGHTS, "s", "t", math.nan)


def test_allocations_and_settings_are_validated() -> None:
    assert sum(normalise(DEFAULT_ALLOCATIONS).values()) == pytest.approx(1.0)  # seed sums 0.99
    for bad in ({C.PLAYBOOK: -0.1, C.EPISODES: 1.0}, {C.PLAYBOOK: 0.0}, {C.PLAYBOOK: math.nan}):
        with pytest.raises(ValueError):
            normalise(bad)
    with pytest.raises(ValueError):
        assemble([], DEFAULT_ALLOCATIONS, 0)
    with pytest.raises(ValueError):
        AssemblySettings(full_under=0.96)
    with pytest.raises(ValueError):
        AssemblySettings(summary_episode_slots=-1)


def test_frames_follow_the_seed_triggers() -> None:
    d = next_frame(None, phase=Phase.STABLE, regime=MarketRegime.CALM, delta_share=None)
    assert (d.kind, d.why) == (FrameKind.I_FRAME, "first")
    d = next_frame(d.state, phase=Phase.STABLE, regime=MarketRegime.CALM, delta_share=0.1)
    assert (d.kind, d.state.p_frames) == (FrameKind.P_FRAME, 1)
    base = d.state
    cases = [(Phase.DECLINING, MarketRegime.CALM, 0.1, "phase_change"),
             (Phase.STABLE, MarketRegime.CRASH, 0.1, "regime_change"),
             (Phase.STABLE, MarketRegime.CALM, 0.31, "delta_share")]
    for phase, regime, share, why in cases:
        got = next_frame(base, phase=phase, regime=regime, delta_share=share)
        assert (got.kind, got.why, got.state.p_frames) == (FrameKind.I_FRAME, why, 0)
        assert (got.state.phase, got.state.regime) == (phase, regime)
    assert next_frame(base, phase=Phase.STABLE, regime=MarketRegime.CALM,
                      delta_share=0.3).kind is FrameKind.P_FRAME
    # a new system prompt or a keyframe the API may no longer hold: a new keyframe
    for kw, why in (({"stable_changed": True}, "stable_changed"),
                    ({"cache_warm": False}, "cache_cold")):
        got = next_frame(base, phase=Phase.STABLE, regime=MarketRegime.CALM, delta_share=0.1,
                         **kw)
        assert (got.kind, got.why, got.state.p_frames) == (FrameKind.I_FRAME, why, 0)


@given(st.lists(st.floats(0.0, 0.3), max_size=60), st.integers(1, 12))
def test_never_more_than_interval_p_frames_in_a_row(shares: list[float], n: int) -> None:
    d = next_frame(None, phase=Phase.STABLE, regime=MarketRegime.CALM, delta_share=None)
    run = 0
    for share in shares:
        d = next_frame(d.state, phase=Phase.STABLE, regime=MarketRegime.CALM,
                       delta_share=share, interval=n)
        if d.kind is FrameKind.I_FRAME:
            assert (d.why, run) == ("interval", n)  # exactly after n P-frames
        run = run + 1 if d.kind is FrameKind.P_FRAME else 0
        assert run <= n

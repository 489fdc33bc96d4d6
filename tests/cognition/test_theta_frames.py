"""Theta's I-frame / P-frame bookkeeping (Keyframes): pure, on plain workspaces."""

from __future__ import annotations

from collections.abc import Sequence

from golem.cognition.frames import CACHE_WARM_S, Keyframes
from golem.cognition.prompt import delta_tokens
from golem.governor.assembly import assemble
from golem.governor.categories import DEFAULT_ALLOCATIONS, Category, MarketRegime, Phase
from golem.governor.workspace import Candidate, CognitiveWorkspace, FrameKind

C = Category
NS = "grimoire://golem-a"
BUDGET = 8000


def ws(tick: int, *, playbook: str = "Split large swaps.", churn: int = 1,
       extra: Sequence[Candidate] = ()) -> CognitiveWorkspace:
    """Ten insights of which ``churn`` are replaced per tick, a moving snapshot."""
    insights = [Candidate(f"i{n}", C.INSIGHTS, f"{NS}/insight/i{n}",
                          f"Insight {n}: fee income follows volume.", 0.5)
                for n in range(tick * churn, tick * churn + 10)]
    return assemble([
        Candidate("cage", C.INVARIANTS, "state://invariants/cage", "No unlimited approvals.", 1.0),
        Candidate("pb", C.PLAYBOOK, "state://playbook", playbook, 0.9),
        Candidate("snap", C.DEFI_SNAPSHOT, "state://defi_snapshot", f"price {3000 + tick}", 1.0),
        *insights, *extra], DEFAULT_ALLOCATIONS, BUDGET)


def step(frames: Keyframes, tick: int, now: float, **kw: object) -> tuple[str, str, bool]:
    workspace = ws(tick, **kw)  # type: ignore[arg-type]
    chain = frames.chain_tokens
    frame, key, links, share = frames.next(workspace, phase=Phase.STABLE,
                                           regime=MarketRegime.CALM, now=now)
    if frame.kind is FrameKind.P_FRAME:
        assert key is not None and links == frames.links
        last = links[-1] if links else key
        assert share == (chain + delta_tokens(last, workspace)) / BUDGET > 0
    else:
        assert key is None and links == () and share == 0.0 and frames.keyframe is workspace
    return frame.kind.value, frame.why, key is not None


def test_a_keyframe_is_used_only_once_sent_and_while_the_cache_can_hold_it() -> None:
    frames = Keyframes()
    assert step(frames, 0, 0.0) == ("i_frame", "first", False)
    # nothing went to the API (an offline tick): a P-frame would find no cached prefix
    assert step(frames, 1, 60.0) == ("i_frame", "cache_cold", False)
    frames.sent(60.0)
    key = frames.keyframe
    assert step(frames, 2, 120.0) == ("p_frame", "delta", True)
    assert frames.keyframe is key and frames.links == ()  # tick 2 was not sent
    assert step(frames, 3, 180.0)[0] == "p_frame"
    frames.sent(180.0)  # tick 3 went out: the next request resends it from the cache
    assert [w.placed(C.DEFI_SNAPSHOT)["snap"].content for w in frames.links] == ["price 3003"]
    # every call that carries the keyframe refreshes the cache's TTL: 10 P-frames in a row,
    # spanning more than the TTL, all stay warm
    for tick in range(4, 11):
        frames.sent(60.0 * tick - 60.0)
        assert step(frames, tick, 60.0 * tick)[0] == "p_frame"
    assert CACHE_WARM_S < 600.0 - 60.0  # the first send was longer ago than the TTL
    frames.sent(600.0)
    assert step(frames, 11, 660.0)[:2] == ("p_frame", "delta")
    frames.sent(660.0)
    assert step(frames, 12, 720.0)[:2] == ("i_frame", "interval")  # 10 P-frames ran
    frames.sent(720.0)
    # a keyframe untouched for longer than the TTL allows: a new one
    assert step(frames, 13, 720.0 + CACHE_WARM_S)[:2] == ("i_frame", "cache_cold")


def test_a_new_system_prompt_or_a_large_delta_makes_a_new_keyframe() -> None:
    frames = Keyframes()
    step(frames, 0, 0.0)
    frames.sent(0.0)
    assert step(frames, 1, 60.0)[0] == "p_frame"
    assert step(frames, 2, 120.0, playbook="Rewritten by the curator.")[:2] == (
        "i_frame", "stable_changed")
    frames.sent(120.0)
    # ten new insights of ~10 tokens each are ~1.5% of the budget: still a P-frame
    assert step(frames, 3, 180.0, churn=10, playbook="Rewritten by the curator.")[0] == \
        "p_frame"
    big = Keyframes()
    step(big, 0, 0.0)
    big.sent(0.0)
    # recalled warnings are hard context: all of them go in, in full, whatever the budget
    huge = ws(1, extra=[Candidate(f"w{k}", C.INVARIANTS, f"{NS}/warning/w{k}", "x" * 400, 0.5)
                        for k in range(40)])
    assert delta_tokens(big.keyframe, huge) > 0.3 * BUDGET  # type: ignore[arg-type]
    frame, *_ = big.next(huge, phase=Phase.STABLE, regime=MarketRegime.CALM, now=60.0)
    assert (frame.kind, frame.why) == (FrameKind.I_FRAME, "delta_share")

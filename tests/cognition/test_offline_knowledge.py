"""The offline tier decides from the learned outcomes in its workspace (pure)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from golem.cognition.experts import Scored, record
from golem.cognition.offline import (
    OTHER_REGIME_WEIGHT,
    SWAP_COST,
    Entry,
    Situation,
    cited_attribution,
    decide,
)
from golem.governor.workspace import Knowledge
from golem.perception.market import PricePoint

FEED = "0x00000000000000000000000000000000000000cc"
POOL = "0x6d411e0a54382ed43f02410ce1c7a7c122afa6e1"
HOLDINGS = (("USDC", 50.0), ("WETH", 50.0))
FALL = tuple(PricePoint(1000.0 + 60 * i, p) for i, p in enumerate((2000, 1990, 1960)))  # -2%


def outcome(uri: str, *, mean: float, p_up: float, n: int = 40, regime: str = "trending",
            bucket: str = "fell_hard", feed: str = FEED, confidence: float = 0.7) -> Entry:
    fact = {"feed": feed, "regime": regime, "bucket": bucket, "horizon_s": 300.0,
            "n": n, "mean": mean, "stddev": 0.004, "p_up": p_up}
    return Entry(uri, "insights", f"After oracle feed {feed} ...",
                 Knowledge("conditional_outcome", fact, confidence))


def situation(*entries: Entry, regime: str = "trending") -> Situation:
    return Situation(FEED, FALL, entries, 0, HOLDINGS, POOL, 40.0, regime)


def test_a_learned_reversion_turns_a_fall_into_a_buy_and_says_which_fact_did_it() -> None:
    revert = outcome("grimoire://g/entry/revert", mean=0.012, p_up=0.9)
    d = decide(situation(revert))
    (p,) = d.predictions
    assert p.direction == "up" and p.confidence > 0.7
    (action,) = d.actions
    assert (action.kind, action.asset_in, action.asset_out) == ("swap", "USDC", "WETH")
    assert d.attribution[0][0] == revert.uri and d.attribution[0][1] > 0
    assert revert.uri in d.referenced and "learned outcome" in d.analysis


def test_without_matching_knowledge_the_prior_decides_and_never_trades() -> None:
    elsewhere = [outcome("a", mean=0.012, p_up=0.9, feed="0x" + "dd" * 20),
                 outcome("b", mean=0.012, p_up=0.9, bucket="rose")]
    d = decide(situation(*elsewhere))
    assert d.attribution == ()
    assert d.predictions[0].direction == "down"  # the prior's up/down tie: the move's sign
    assert d.predictions[0].confidence < 0.5
    assert d.actions[0].kind == "hold" and "prior" in d.actions[0].reason
    bare = decide(situation())  # unmatched knowledge changes no prediction or action
    assert (d.predictions, d.actions, d.outlook) == (bare.predictions, bare.actions,
                                                     bare.outlook)


def test_an_edge_smaller_than_the_swap_cost_holds() -> None:
    small = outcome("small", mean=SWAP_COST / 2, p_up=0.8)
    d = decide(situation(small))
    assert d.actions[0].kind == "hold" and "no edge" in d.actions[0].reason
    assert d.attribution and d.predictions[0].direction == "up"


def test_another_regimes_outcome_counts_less() -> None:
    own = decide(situation(outcome("x", mean=0.02, p_up=0.9)))
    other = decide(situation(outcome("x", mean=0.02, p_up=0.9, regime="calm")))
    assert 0 < other.attribution[0][1] < own.attribution[0][1]
    assert OTHER_REGIME_WEIGHT < 1


def test_malformed_facts_are_never_used() -> None:
    bad = [outcome("nan", mean=math.nan, p_up=0.9), outcome("neg", mean=0.01, p_up=0.9, n=-4),
           outcome("str", mean=0.01, p_up=0.9, n="many")]  # type: ignore[arg-type]
    good = outcome("good", mean=0.012, p_up=0.9)
    d = decide(situation(*bad, good))
    assert [uri for uri, _ in d.attribution] == ["good"]
    assert "3 malformed fact(s) ignored" in d.analysis and d.skipped_knowledge == 3
    alone = decide(situation(good))
    assert (d.predictions, d.actions, d.outlook) == (alone.predictions, alone.actions,
                                                     alone.outlook)


def test_a_negative_stddev_share_or_confidence_is_skipped_too() -> None:
    fact = outcome("x", mean=0.012, p_up=0.9)
    assert fact.knowledge is not None
    odd = [Entry(f"odd{i}", "insights", "...", Knowledge(
        "conditional_outcome", {**fact.knowledge.fact, **change}, 0.7))
        for i, change in enumerate(({"stddev": -0.01}, {"p_up": 1.5}, {"n_eff": -3},
                                    {"mean": math.inf}))]
    odd.append(Entry("odd-confidence", "insights", "...", Knowledge(
        "conditional_outcome", fact.knowledge.fact, math.nan)))
    d = decide(situation(*odd))
    assert d.skipped_knowledge == 5 and d.attribution == ()
    assert (d.outlook, d.predictions) == (decide(situation()).outlook,
                                          decide(situation()).predictions)


def procedural(attempts: int, succeeded: int, uri: str = "grimoire://g/entry/swaps") -> Entry:
    fact = {"strategy": "swap", "attempts": attempts, "succeeded": succeeded,
            "pnl_n": attempts, "pnl_mean_usd": -0.01}
    return Entry(uri, "strategy", "Action 'swap' succeeded ...",
                 Knowledge("procedural", fact, 0.6))


def test_the_golems_own_record_with_swaps_scales_the_size() -> None:
    revert = outcome("grimoire://g/entry/revert", mean=0.012, p_up=0.9)
    full = decide(situation(revert)).actions[0]
    good = decide(situation(revert, procedural(20, 20))).actions[0]
    poor = decide(situation(revert, procedural(8, 1)))
    (small,) = poor.actions
    assert small.kind == good.kind == full.kind == "swap"
    assert small.notional_usd == pytest.approx(full.notional_usd * 2 * 2 / 10, abs=0.01)
    assert small.notional_usd < good.notional_usd == full.notional_usd
    even = decide(situation(revert, procedural(8, 4))).actions[0]
    assert even.notional_usd == full.notional_usd  # even odds or better: full size
    assert "1 of 8 of our swaps went through" in small.reason
    assert "grimoire://g/entry/swaps" in poor.referenced
    # the record changes the size, never the prediction
    assert poor.predictions == decide(situation(revert)).predictions


def test_a_nonsensical_record_is_skipped_and_counted() -> None:
    revert = outcome("grimoire://g/entry/revert", mean=0.012, p_up=0.9)
    d = decide(situation(revert, procedural(-2, 1), procedural(3, 5, "x")))
    assert d.skipped_knowledge == 2
    assert d.actions == decide(situation(revert)).actions


def test_a_model_decision_is_attributed_to_the_learned_entries_it_cited() -> None:
    revert = outcome("grimoire://g/entry/revert", mean=0.012, p_up=0.9)
    other = outcome("grimoire://g/entry/other", mean=0.004, p_up=0.6, n=80)
    broken = outcome("grimoire://g/entry/broken", mean=math.nan, p_up=0.9)
    s = situation(revert, other, broken)
    attribution, skipped = cited_attribution(s, {revert.uri, broken.uri})
    assert [uri for uri, _ in attribution] == [revert.uri] and skipped == 1
    # the same shares the offline tier gives when it sees only the cited entries
    assert attribution == decide(situation(revert)).attribution
    assert cited_attribution(s, set()) == ((), 0)
    assert cited_attribution(s, {"grimoire://g/warning/w"}) == ((), 0)


def traded(side: str, trades: int, paid: int, *, regime: str = "trending",
           bucket: str = "fell_hard", uri: str = "grimoire://g/entry/trades") -> Entry:
    fact = {"strategy": "swap", "side": side, "regime": regime, "bucket": bucket,
            "trades": trades, "paid": paid, "mean_edge": -0.001}
    return Entry(uri, "strategy", "Our own buys of WETH after ...",
                 Knowledge("procedural", fact, 0.6))


def test_its_record_in_this_situation_shrinks_a_losing_trade_and_nothing_else() -> None:
    revert = outcome("grimoire://g/entry/revert", mean=0.012, p_up=0.9)
    full = decide(situation(revert)).actions[0]
    losing = decide(situation(revert, traded("buy", 8, 1)))
    (small,) = losing.actions
    assert small.notional_usd == pytest.approx(full.notional_usd * 2 * 2 / 10, abs=0.01)
    assert "1 of 8 of our buys in this situation paid" in small.reason
    assert "grimoire://g/entry/trades" in losing.referenced
    # a winning record does not grow a trade past its cap
    assert decide(situation(revert, traded("buy", 8, 7))).actions[0].notional_usd \
        == full.notional_usd
    # another side, regime or bucket is another situation
    for other in (traded("sell", 8, 1), traded("buy", 8, 1, regime="calm"),
                  traded("buy", 8, 1, bucket="fell")):
        assert decide(situation(revert, other)).actions == (full,)
    nonsense = decide(situation(revert, traded("buy", 3, 5)))
    assert nonsense.skipped_knowledge == 1 and nonsense.actions == (full,)


def test_knowledge_is_weighed_against_the_prior_by_its_recent_record() -> None:
    revert = outcome("grimoire://g/entry/revert", mean=0.012, p_up=0.9)
    alone = decide(situation(revert))
    assert alone.outlooks is not None
    knows, prior = alone.outlooks
    assert knows == pytest.approx(alone.outlook, abs=1e-6) and knows[2] > 0.7
    assert prior[0] == pytest.approx(prior[2])
    worse = record([Scored(knows, prior, "down")] * 40)
    assert worse.weight == 0.0
    d = decide(replace(situation(revert), record=worse))
    assert d.outlooks == alone.outlooks  # both are recorded whatever the weight
    (p,) = d.predictions
    assert p.direction == "down" and p.confidence < 0.5  # the prior's
    assert d.attribution == () and d.actions[0].kind == "hold"
    assert "not used" in d.analysis
    bare = decide(situation())
    assert (d.predictions, d.outlook) == (bare.predictions, bare.outlook)
    half = record(([Scored(knows, prior, "up")] * 3 + [Scored(knows, prior, "down")]) * 10)
    assert 0 < half.weight < 1
    h = decide(replace(situation(revert), record=half))
    assert h.outlook is not None and prior[2] < h.outlook[2] < knows[2]
    assert h.attribution[0][1] == pytest.approx(half.weight * alone.attribution[0][1],
                                                abs=1e-6)
    assert "share against the prior" in h.analysis
    better = record([Scored(knows, prior, "up")] * 40)
    assert decide(replace(situation(revert), record=better)) == alone


def test_a_raised_pool_fee_raises_the_bar_to_trade() -> None:
    """The swap's cost is the pool's fee of now (Theta reads it from the pool): an edge
    that pays at V2's 0.3% holds once the fee has been raised past it."""
    learned = outcome("x", mean=0.012, p_up=0.9)
    cheap = decide(situation(learned))
    assert cheap.actions[0].kind == "swap"
    assert replace(situation(learned), swap_cost=SWAP_COST).swap_cost == situation().swap_cost
    dear = decide(replace(situation(learned), swap_cost=0.05))
    assert dear.actions[0].kind == "hold" and "no edge after costs" in dear.actions[0].reason
    assert dear.predictions == cheap.predictions  # the forecast is the same; only the act

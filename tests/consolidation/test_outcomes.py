"""Conditional outcomes from oracle answers (pure): a planted regularity is found per
regime, repeat sightings pool, and a changed behaviour supersedes instead of averaging."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from golem.consolidation import outcomes
from golem.consolidation.extract import ExtractParams, extract, merge_fact
from golem.grimoire.records import Episode, FactKind
from golem.perception.market import move_bucket

from .test_extract import POOL_C, T0, ep

STEP = 60.0


def answer(price: float, regime: str) -> dict[str, Any]:
    return {"event": "AnswerUpdated", "address": POOL_C, "perceived_regime": regime,
            "args": {"current": round(price * 1e8), "roundId": 1, "updatedAt": 0}}


def planted(regime: str, after_drop: float, *, cycles: int = 12, seed: int = 1,
            start: int = 0) -> list[Episode]:
    """Answers every minute: calm wobble, then a 2.5% drop over 10 minutes, then the next 5
    minutes move ``after_drop`` (positive: revert, negative: continue), and so on. In
    "volatile" every answer also jumps 0.9% up or down, alternately (so the tape reads
    volatile, ``tape_regime``, while the moves above stay what they are)."""
    rng = random.Random(seed)
    eps, price, t, i = [], 2000.0, T0 + start * STEP, start
    wiggle = 0.009 if regime == "volatile" else 0.0
    for _ in range(cycles):
        steps = [rng.uniform(-0.0005, 0.0005) for _ in range(16)]
        steps += [-0.0025] * 10 + [after_drop / 5] * 6
        for k, step in enumerate(steps):
            price *= 1 + step + (wiggle if k % 2 == 0 else -wiggle)
            eps.append(ep(i, t, answer(price, regime), category="oracle",
                          protocol="Chainlink"))
            i, t = i + 1, t + STEP
    return eps


def facts_of(eps: list[Episode]) -> dict[tuple[str, str], dict[str, Any]]:
    found = outcomes.conditional_outcomes(eps, lookback_s=600, horizon_s=300)
    return {(c.fact["regime"], c.fact["bucket"]): c.fact for c in found}


def test_move_buckets() -> None:
    assert [move_bucket(m) for m in (-0.03, -0.01, 0.0, 0.01, 0.02)] == [
        "fell_hard", "fell", "flat", "rose", "rose_hard"]


def test_a_planted_regularity_is_found_per_regime() -> None:
    facts = facts_of(planted("volatile", +0.012) + planted("trending", -0.012, start=10_000))
    revert, carry = facts[("volatile", "fell_hard")], facts[("trending", "fell_hard")]
    assert revert["mean"] > 0.005 and revert["p_up"] > 0.6
    assert carry["mean"] < -0.005 and carry["p_up"] < 0.2
    down, flat, up = carry["shares"]  # the scoring's classes (flat: within 0.2%)
    assert down > 0.6 and up < 0.2 and down + flat + up == pytest.approx(1.0)
    assert up <= carry["p_up"] <= up + flat  # "up" is beyond the band, p_up above 0
    assert revert["n"] >= 5 and revert["horizon_s"] == 300.0
    assert "fell 1.5% or more" in outcomes.outcome_text(revert)
    calm = facts[("volatile", "flat")]
    assert abs(calm["mean"]) < abs(revert["mean"])


def test_extract_proposes_them_and_a_repeat_sighting_pools_exactly() -> None:
    eps = planted("volatile", +0.012)
    params = ExtractParams()
    first = next(c for c in extract(eps, (T0, T0 + 10**6), params, seed=1)
                 if c.fact_kind is FactKind.CONDITIONAL_OUTCOME
                 and c.fact["bucket"] == "fell_hard")
    later = planted("volatile", +0.010, seed=2, start=5000)
    second = next(c for c in extract(later, (T0, T0 + 10**7), params, seed=1)
                  if c.key == first.key)
    merged, text = merge_fact(FactKind.CONDITIONAL_OUTCOME, first.fact, second)
    assert "superseded" not in merged
    n1, n2 = first.fact["n"], second.fact["n"]
    assert merged["n"] == n1 + n2
    assert merged["mean"] == pytest.approx(
        (first.fact["mean"] * n1 + second.fact["mean"] * n2) / (n1 + n2))
    assert f"of {n1 + n2} cases" in text


def test_a_changed_behaviour_supersedes_instead_of_averaging() -> None:
    before = facts_of(planted("volatile", +0.012))[("volatile", "fell_hard")]
    after = facts_of(planted("volatile", -0.012, seed=3))[("volatile", "fell_hard")]
    merged = outcomes.merge_outcome(before, after)
    assert merged["mean"] == after["mean"] and merged["n"] == after["n"]
    assert merged["superseded"]["mean"] == before["mean"]


def test_unusable_answers_are_ignored() -> None:
    eps = planted("calm", 0.0, cycles=2)
    bad = [ep(90_000 + k, T0 + k, {**answer(1.0, "calm"), "args": {"current": v}})
           for k, v in enumerate((0, -5, "x", math.nan, True))]
    assert facts_of(eps + bad) == facts_of(eps)


def test_successive_runs_with_context_count_every_answer_once() -> None:
    """A run sees the episodes since its cursor plus the preceding lookback and horizon as
    context; counted_after the cursor, the runs together count what one run over all of
    it counts."""
    eps = planted("trending", -0.012, cycles=6)
    whole = {c.key: c.fact["n"] for c in outcomes.conditional_outcomes(
        eps, lookback_s=600, horizon_s=300, min_samples=1)}
    split = T0 + 100 * STEP
    first = [e for e in eps if e.observed_at <= split]
    second = [e for e in eps if split - 900 <= e.observed_at]
    counts: dict[str, int] = {}
    for run in (outcomes.conditional_outcomes(first, lookback_s=600, horizon_s=300,
                                              min_samples=1),
                outcomes.conditional_outcomes(second, lookback_s=600, horizon_s=300,
                                              min_samples=1, counted_after=split)):
        for c in run:
            counts[c.key] = counts.get(c.key, 0) + c.fact["n"]
    assert counts == whole and sum(whole.values()) > 100


def swap_episode(i: int, t: float, side: str, result: str = "ok") -> Episode:
    into, out = ("USDC", "WETH") if side == "buy" else ("WETH", "USDC")
    return ep(50_000 + i, t, {"action": "swap", "result": result, "pnl_usd": -0.01,
                              "asset_in": into, "asset_out": out, "settle": False},
              category="strategy_outcome", protocol=None)


def test_its_own_swaps_are_judged_by_what_the_feed_did_next_in_that_situation() -> None:
    eps = planted("trending", -0.012, cycles=6)  # after each drop the fall continues
    drops = [e.observed_at for k, e in enumerate(eps) if k % 32 == 27]  # 2 min into it
    buys = [swap_episode(k, t + 1, "buy") for k, t in enumerate(drops)]
    sells = [swap_episode(100 + k, t + 1, "sell") for k, t in enumerate(drops)]
    failed = [swap_episode(200 + k, t + 1, "buy", "reverted") for k, t in enumerate(drops)]
    found = {c.fact["side"]: c for c in outcomes.trade_outcomes(
        [*eps, *buys, *sells, *failed], lookback_s=600, horizon_s=300)}
    buy, sell = found["buy"].fact, found["sell"].fact
    assert (buy["regime"], buy["bucket"]) == ("trending", "fell_hard")
    # reverted swaps do not count, nor the last drop's (no answer 5 min after it)
    assert buy["trades"] == sell["trades"] == len(drops) - 1
    assert buy["paid"] == 0 and sell["paid"] == len(drops) - 1
    assert buy["mean_edge"] < 0 < sell["mean_edge"]
    assert found["buy"].fact_kind is FactKind.PROCEDURAL
    assert "paid (beat the swap's cost over the next 5 min) in 0 of" in found["buy"].text
    merged, text = merge_fact(FactKind.PROCEDURAL, buy, found["buy"])
    assert merged["trades"] == 2 * buy["trades"] and f"in 0 of {2 * buy['trades']}" in text

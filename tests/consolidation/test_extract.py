"""Fact extraction and the quality gate on hand-built episode sets (pure, no stores)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from golem.consolidation import baselines, causal, extract, facts, verify
from golem.consolidation.causal import CausalParams
from golem.grimoire.payloads import outcome_payload, revert_payload
from golem.grimoire.records import EntryType, Episode, FactKind, episode_id

POOL_A = "0x00000000000000000000000000000000000000aa"
POOL_B = "0x00000000000000000000000000000000000000bb"
POOL_C = "0x00000000000000000000000000000000000000cc"
HONEYPOT = "0x000000000000000000000000000000000000dead"
HONEY = "0x0000000000000000000000000000000000001111"
T0 = 1_767_225_600.0


def ep(i: int, t: float, payload: dict[str, Any], category: str = "swap",
       protocol: str | None = "Uniswap V2", tick: int = 0) -> Episode:
    block_hash = f"0x{i:064x}"
    return Episode(id=episode_id(31337, block_hash, 0), namespace="golem-a", chain_id=31337,
                   block_number=i, block_hash=block_hash, log_index=0, tx_hash=block_hash,
                   tick=tick, observed_at=t, category=category, protocol=protocol,
                   text=f"event {i}", payload=payload, curiosity=0.5)


def swap(amount0_in: int, amount1_out: int = 1, pool: str = POOL_A,
         regime: str = "calm") -> dict[str, Any]:
    return {"event": "Swap", "address": pool, "perceived_regime": regime,
            "args": {"sender": POOL_C, "amount0In": amount0_in, "amount1In": 0,
                     "amount0Out": 0, "amount1Out": amount1_out, "to": POOL_C}}


def sync(r0: int, r1: int, pool: str = POOL_B) -> dict[str, Any]:
    return {"event": "Sync", "address": pool, "perceived_regime": "calm",
            "args": {"reserve0": r0, "reserve1": r1}}


def by_key(cands: list[facts.FactCandidate]) -> dict[str, facts.FactCandidate]:
    return {c.key: c for c in cands}


# ---- baselines ------------------------------------------------------------------------

def test_size_baseline_is_exact() -> None:
    values = [2, 4, 4, 4, 5, 5, 7, 9]  # mean 5, population stddev 2
    eps = [ep(i, T0 + i, swap(v, amount1_out=10)) for i, v in enumerate(values)]
    found = by_key(baselines.size_baselines(eps))
    c = found[f"baseline|swap_amount0|{POOL_A.lower()}|calm"]
    assert c.fact["mean"] == 5.0
    assert c.fact["stddev"] == 2.0
    assert c.fact["n"] == 8
    assert c.fact_kind == FactKind.BASELINE and c.fact["key"] == c.key
    assert "mean 5," in c.text and "stddev 2 " in c.text and "regime calm" in c.text
    assert "0x0000...00aa" in c.text and c.tokens == (POOL_A.lower(),)
    amount1 = found[f"baseline|swap_amount1|{POOL_A.lower()}|calm"]
    assert (amount1.fact["mean"], amount1.fact["stddev"]) == (10.0, 0.0)


def test_size_baseline_splits_by_regime_and_needs_three_samples() -> None:
    eps = [ep(0, T0, swap(1, regime="calm")), ep(1, T0 + 1, swap(3, regime="calm")),
           ep(2, T0 + 2, swap(3, regime="calm")), ep(3, T0 + 3, swap(100, regime="volatile")),
           ep(4, T0 + 4, swap(200, regime="volatile"))]
    found = by_key(baselines.size_baselines(eps))
    pool = POOL_A.lower()
    calm = found[f"baseline|swap_amount0|{pool}|calm"]
    assert calm.fact["mean"] == 7 / 3
    variance = ((1 - 7 / 3) ** 2 + 2 * (3 - 7 / 3) ** 2) / 3
    assert math.isclose(calm.fact["stddev"], math.sqrt(variance))
    assert f"baseline|swap_amount0|{pool}|volatile" not in found  # only 2 samples
    assert f"baseline|swap_amount0|{pool}|*" not in found  # sizes are per regime


def test_sync_oracle_and_liquidation_metrics() -> None:
    assert baselines.metrics_of(sync(7, 9)) == [("reserve0", 7.0), ("reserve1", 9.0)]
    oracle = {"event": "AnswerUpdated", "address": POOL_C,
              "args": {"current": 2000_00000000, "roundId": 1, "updatedAt": 5}}
    assert baselines.metrics_of(oracle) == [("oracle_answer", 2000_00000000.0)]
    v3 = {"event": "Swap", "address": POOL_C,
          "args": {"sender": POOL_C, "recipient": POOL_C, "amount0": -5, "amount1": 7,
                   "sqrtPriceX96": 1, "liquidity": 1, "tick": 0}}
    assert baselines.metrics_of(v3) == [("swap_amount0", 5.0), ("swap_amount1", 7.0)]
    assert baselines.metrics_of({"event": "unknown", "args": {}}) == []


def test_rate_baseline_is_exact() -> None:
    # bins of 300 s over [T0, T0 + 1200]: counts 2, 1, 0, 3 -> per hour 24, 12, 0, 36
    times = [10, 20, 310, 900, 1000, 1200]
    eps = [ep(i, T0 + t, swap(1)) for i, t in enumerate(times)]
    found = by_key(baselines.rate_baselines(eps, T0, T0 + 1200, 300.0))
    c = found[f"baseline|event_rate|{POOL_A.lower()}|*"]
    assert c.fact["mean"] == 18.0
    assert math.isclose(c.fact["stddev"], math.sqrt(180.0))
    assert c.fact["n"] == 4 and c.fact["unit"] == "per_hour"
    assert "events per hour" in c.text


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=30),
       st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=30))
def test_pooled_statistics_equal_the_statistics_of_the_union(a: list[float],
                                                              b: list[float]) -> None:
    ma, sa = baselines.stats(a)
    mb, sb = baselines.stats(b)
    n, mean, sd = baselines.pooled((len(a), ma, sa), (len(b), mb, sb))
    m_all, s_all = baselines.stats(a + b)
    assert n == len(a) + len(b)
    assert math.isclose(mean, m_all, rel_tol=1e-9, abs_tol=1e-6)
    assert math.isclose(sd, s_all, rel_tol=1e-6, abs_tol=1e-3)


# ---- causal relations -----------------------------------------------------------------

def _pool_events(counts: np.ndarray, pool: str, start_index: int, bin_s: float,
                 ) -> list[Episode]:
    out = []
    for b, n in enumerate(counts):
        for k in range(int(n)):
            i = start_index + len(out)
            out.append(ep(i, T0 + b * bin_s + 1 + k, swap(1, pool=pool)))
    return out


def test_planted_lag_is_found_with_the_right_lag() -> None:
    rng = np.random.default_rng(1)
    bins, lag = 600, 3
    a = rng.poisson(0.8, bins)
    b = np.roll(a, lag) + rng.poisson(0.3, bins)  # B echoes A three bins (180 s) later
    b[:lag] = 0
    eps = _pool_events(a, POOL_A, 0, 60.0) + _pool_events(b, POOL_B, 10_000, 60.0)
    found = causal.causal_relations(eps, T0, T0 + bins * 60.0, CausalParams(), seed=7)
    assert len(found) == 1
    rel = found[0]
    assert rel.fact["cause"] == POOL_A.lower() and rel.fact["effect"] == POOL_B.lower()
    assert rel.fact["lag_s"] == 180.0
    assert rel.fact["corr"] > rel.fact["threshold"]
    assert rel.links == (causal.rate_key(POOL_A.lower()), causal.rate_key(POOL_B.lower()))
    assert rel.fact_kind == FactKind.CAUSAL_RELATION and "180 s" in rel.text


def test_independent_series_give_no_relation() -> None:
    for seed in range(5):
        rng = np.random.default_rng(100 + seed)
        bins = 600
        eps = (_pool_events(rng.poisson(0.8, bins), POOL_A, 0, 60.0)
               + _pool_events(rng.poisson(0.8, bins), POOL_B, 10_000, 60.0)
               + _pool_events(rng.poisson(0.5, bins), POOL_C, 20_000, 60.0))
        assert causal.causal_relations(eps, T0, T0 + bins * 60.0, CausalParams(),
                                       seed=seed) == []


@given(st.integers(2, 9), st.integers(8, 200), st.integers(1, 45), st.integers(0, 2**32 - 1))
def test_surrogate_peaks_are_each_shifts_own_scan(p: int, t: int, surrogates: int,
                                                  seed: int) -> None:
    """The batched chance scan equals, surrogate by surrogate, rolling each series by its
    shift and taking the largest lagged correlation between two different series."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((p, t))
    max_lag = max(1, min(10, t // 4))
    shifts = rng.integers(0, t, size=(surrogates, p))
    batched = causal.surrogate_peaks(z, shifts, max_lag)
    assert batched.shape == (surrogates,)
    for row, peak in zip(shifts, batched, strict=True):
        shifted = np.stack([np.roll(z[i], int(s)) for i, s in enumerate(row)])
        corr = causal.lagged_corr(shifted, max_lag)
        corr[:, np.arange(p), np.arange(p)] = -np.inf
        assert math.isclose(peak, float(corr.max()), rel_tol=1e-12, abs_tol=1e-12)


def test_protocol_pattern_liquidations_after_oracle_updates() -> None:
    oracle = {"event": "AnswerUpdated", "address": POOL_C, "args": {}}
    liq = {"event": "LiquidationCall", "address": POOL_B, "args": {}}
    eps = [ep(i, T0 + i * 600, oracle, "oracle") for i in range(36)]  # 6 hours
    eps += [ep(100 + i, T0 + i * 600 + 20, liq, "liquidation") for i in range(0, 30, 3)]
    eps += [ep(200, T0 + 5000, liq, "liquidation"), ep(201, T0 + 9300, liq, "liquidation")]
    found = causal.pattern(eps, T0, T0 + 36 * 600, trigger="AnswerUpdated",
                           follower="LiquidationCall", window_s=60.0)
    assert found is not None
    assert found.fact["hits"] == 10 and found.fact["followers"] == 12
    assert math.isclose(found.fact["base_rate"], 0.1)
    assert found.fact_kind == FactKind.PROTOCOL_PATTERN and "10 of 12" in found.text
    # Liquidations spread evenly, unrelated to the updates: no pattern.
    spread = [e for e in eps if e.payload["event"] == "AnswerUpdated"]
    spread += [ep(300 + i, T0 + 137 + i * 1777, liq, "liquidation") for i in range(12)]
    assert causal.pattern(spread, T0, T0 + 36 * 600, trigger="AnswerUpdated",
                          follower="LiquidationCall", window_s=60.0) is None


# ---- anti-knowledge and procedural facts ----------------------------------------------

def test_honeypot_reverts_become_anti_knowledge() -> None:
    eps = [ep(i, T0 + i, revert_payload(HONEYPOT, "swapExactTokensForETH", HONEY, "sell"),
              "revert") for i in range(5)]
    eps += [ep(10 + i, T0 + i, revert_payload(POOL_C, "deposit", None, "deposit"), "revert")
            for i in range(2)]  # two reverts: not yet a pattern
    found = facts.anti_knowledge(eps)
    assert len(found) == 1
    c = found[0]
    assert c.entry_type == EntryType.ANTI_KNOWLEDGE and c.fact_kind == FactKind.ANTI_KNOWLEDGE
    assert c.key == f"anti|{HONEYPOT}|swapExactTokensForETH"
    assert c.text.startswith(f"Selling {HONEY} through swapExactTokensForETH at {HONEYPOT}")
    assert "5 of 5 attempts" in c.text
    assert (c.fact["reverts"], c.fact["attempts"]) == (5, 5)


def test_successes_dilute_reverts() -> None:
    eps = [ep(i, T0 + i, revert_payload(HONEYPOT, "sell", HONEY, "sell"), "revert")
           for i in range(3)]
    ok = {**outcome_payload("sell", "ok", 1.0), "address": HONEYPOT, "function": "sell"}
    eps += [ep(10 + i, T0 + i, ok, "strategy_outcome") for i in range(3)]
    assert facts.anti_knowledge(eps) == []  # 3 of 6 attempts: not "always reverts"


def test_procedural_fact_from_action_outcomes() -> None:
    results = [("ok", 10.0), ("reverted", -2.0), ("ok", 4.0), ("ok", 0.0)]
    eps = [ep(i, T0 + i, outcome_payload("rebalance", r, pnl), "strategy_outcome")
           for i, (r, pnl) in enumerate(results)]
    [c] = facts.procedural(eps)
    assert c.fact_kind == FactKind.PROCEDURAL and c.entry_type == EntryType.STRATEGY_FRAGMENT
    assert (c.fact["attempts"], c.fact["succeeded"], c.fact["pnl_mean_usd"]) == (4, 3, 3.0)
    assert "succeeded 3 of 4 times (75%)" in c.text and "+3.00 USD" in c.text


def test_merge_pools_baselines_and_adds_counts() -> None:
    first = baselines.size_baselines([ep(i, T0 + i, swap(v)) for i, v in enumerate([1, 2, 3])])
    second = baselines.size_baselines([ep(i, T0 + i, swap(v)) for i, v in enumerate([4, 5, 6])])
    key = f"baseline|swap_amount0|{POOL_A.lower()}|calm"
    old, new = by_key(first)[key], by_key(second)[key]
    merged, text = extract.merge_fact(FactKind.BASELINE, old.fact, new)
    assert (merged["n"], merged["mean"]) == (6, 3.5)
    assert math.isclose(merged["stddev"], math.sqrt(35 / 12))
    assert "mean 3.5," in text


def test_extract_keys_are_unique_and_stable() -> None:
    eps = [ep(i, T0 + 60 * i, swap(i + 1)) for i in range(12)]
    one = extract.extract(eps, (T0, T0 + 720), extract.ExtractParams(), seed=1)
    two = extract.extract(eps, (T0, T0 + 720), extract.ExtractParams(), seed=1)
    assert [c.key for c in one] == [c.key for c in two]
    assert len({c.key for c in one}) == len(one)
    assert all(c.fact["key"] == c.key for c in one)


# ---- the quality gate -----------------------------------------------------------------

def test_gate_accepts_sound_events() -> None:
    for payload in (swap(5), sync(1, 2)):
        assert verify.verify(ep(1, T0, payload)) == (True, "consistent")
    assert verify.verify(ep(2, T0, revert_payload(HONEYPOT, "sell", None, "sell"), "revert"))[0]
    assert verify.verify(ep(3, T0, outcome_payload("lp", "ok", 1.5), "strategy_outcome"))[0]


def test_gate_rejects_inconsistent_episodes() -> None:
    bad = {
        "zero reserve": sync(0, 5),
        "negative size": swap(-5),
        "unknown event": {"event": "unknown", "address": POOL_A, "args": {}},
        "no args": {"event": "Swap", "address": POOL_A},
        "wrong args": {"event": "Sync", "address": POOL_A, "args": {"reserve0": 1}},
        "string size": {**swap(1), "args": {**swap(1)["args"], "amount0In": "lots"}},
        "no address": {**sync(1, 1), "address": ""},
        "nothing": {},
    }
    for why, payload in bad.items():
        ok, reason = verify.verify(ep(1, T0, payload))
        assert not ok, why
        assert reason and reason != "consistent"
    assert not verify.verify(ep(2, T0, {"event": "Reverted"}, "revert"))[0]
    assert not verify.verify(ep(3, T0, outcome_payload("lp", "maybe", 1.0),
                                "strategy_outcome"))[0]


def test_gate_records_covering_predictions() -> None:
    e = ep(1, T0, swap(5), tick=12)
    outcomes = [verify.PredictionOutcome(10, 14, POOL_A.upper().replace("0X", "0x"), True),
                verify.PredictionOutcome(10, 14, None, False),
                verify.PredictionOutcome(13, 20, None, True),
                verify.PredictionOutcome(10, 14, POOL_B, True)]
    ok, reason = verify.verify(e, outcomes)
    assert ok and reason == "consistent; covered by 2 scored predictions (1 hit)"

"""Features per event type, and the price-feed regime signal they give perception."""

from __future__ import annotations

import math
import random

from golem.perception.beliefs import BeliefState
from golem.perception.features import features, size_key
from golem.perception.regime import Regime


def test_sizes_are_kept_per_event_type_and_feeds_give_moves() -> None:
    swap = features("Swap", {"amount0In": 10**18, "amount1Out": 2 * 10**9, "sender": "0x1"})
    sync = features("Sync", {"reserve0": 10**21, "reserve1": 10**12})
    assert swap == {size_key("Swap"): math.log10(1 + 10**18)}
    assert set(sync) == {"Sync size"}
    assert features("AnswerUpdated", {"current": 2000}) == {}  # no previous answer yet
    move = features("AnswerUpdated", {"current": 1900}, previous_answer=2000)
    assert move == {"price move": math.log10(1900 / 2000)}
    assert features("Transfer", {"from": "0x1", "to": "0x2"}) == {}


def test_a_crash_on_a_feed_is_detected_at_once_and_calm_random_walks_are_not() -> None:
    """The feed level wanders; its moves are what the CUSUM watches."""
    for seed in range(4):
        rng = random.Random(seed)
        beliefs, price, previous = BeliefState(), 2000.0, None
        regimes = []
        for i in range(2_020):
            price *= math.exp((-0.04 if i >= 2_000 else 0.0) + 0.002 * rng.gauss(0, 1))
            answer = int(price * 1e8)
            beliefs, obs = beliefs.observe(
                "Chainlink", "0xfeed", tick=i,
                continuous=features("AnswerUpdated", {"current": answer}, previous))
            previous = answer
            regimes.append(obs.regime)
        assert set(regimes[:2_000]) == {Regime.STATIONARY}, seed
        assert Regime.TRANSITION in regimes[2_000:2_003], seed

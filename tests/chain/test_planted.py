"""The planted regularity's mid-life swap and its state across a restart (pure)."""

from __future__ import annotations

import json

from golem.chain.planted import PlantedDrops


def drifts(planted: PlantedDrops, start: float, regime: str, prices: list[float]) -> list[float]:
    return [planted.drift(regime, start + 60 * i, p, 60) for i, p in enumerate(prices)]


FALL = [100.0] * 11 + [97.0] + [97.0] * 5  # a 3% fall over the 10-minute lookback


def test_a_large_fall_reverts_in_one_regime_and_continues_after_the_swap() -> None:
    before = PlantedDrops(swap_after_s=3600)
    pulled = drifts(before, 0.0, "volatile", FALL)
    assert max(pulled) > 0 and min(pulled) >= 0  # reverts: pulled back up
    after = PlantedDrops(swap_after_s=3600)
    after.drift("calm", 0.0, 100.0, 60)  # born at 0
    pushed = drifts(after, 7200.0, "volatile", FALL)  # two hours later: swapped
    assert min(pushed) < 0 and max(pushed) <= 0  # continues: pushed further down
    assert after.regimes_at(7200.0) == ("calm", "volatile")
    assert PlantedDrops().regimes_at(1e9) == ("volatile", "calm")  # 0: never swaps


def test_state_survives_json_and_continues_identically() -> None:
    one = PlantedDrops(swap_after_s=600)
    first = drifts(one, 0.0, "volatile", FALL[:12])
    two = PlantedDrops(swap_after_s=600)
    two.restore_state(json.loads(json.dumps(one.state())))
    rest = FALL[12:]
    assert drifts(one, 720.0, "volatile", rest) == drifts(two, 720.0, "volatile", rest)
    assert any(first)

"""The planted regularity's mid-life swap and its state across a restart (pure)."""

from __future__ import annotations

import json

import pytest

from golem.chain.cursor import CaptureStore
from golem.chain.planted import PlantedDrops
from golem.chain.source import SimulatedSource
from golem.errors import ConfigError


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


def test_a_data_dir_keeps_the_planted_market_it_was_built_with(tmp_path) -> None:
    """The planted regularity is part of the chain: a journal replays only under the same
    parameters, so reopening with others (or none) is refused, and the same ones replay
    to the same head."""
    store = CaptureStore.open(tmp_path / "chain")
    try:
        source = SimulatedSource.create(5, 1_767_225_600.0, store,
                                        planted=PlantedDrops(swap_after_s=60))
        for i in range(1, 4):
            source.advance(1_767_225_600.0 + 10 * i, 10.0)
        head = source.evm.head()
        again = SimulatedSource.create(5, 1_767_225_600.0, store,
                                       planted=PlantedDrops(swap_after_s=60))
        assert again.evm.head() == head
        for other in (None, PlantedDrops(swap_after_s=120)):
            with pytest.raises(ConfigError, match="planted"):
                SimulatedSource.create(5, 1_767_225_600.0, store, planted=other)
    finally:
        store.close()

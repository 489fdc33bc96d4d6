"""The simulated oracle's pull toward its initial price (``[chain]
price_pull_half_life_s``): without it the crashes drag the price to its floor and it
stays there; with it a crash is followed by a recovery. Part of the chain a data dir
replays, and a pull of 0 is exactly the market as it was."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from golem.chain.cursor import CaptureStore
from golem.chain.market import deploy_market
from golem.chain.options import market_options
from golem.chain.revm import RevmEvm
from golem.chain.simulator import (
    DRIFT_VOL,
    PRICE_BAND,
    REGIMES,
    MarketSimulator,
    held_transitions,
    oracle_move,
)
from golem.chain.source import SimulatedSource
from golem.config import parse_config
from golem.errors import ConfigError

T0 = 1_800_000_000
DT = 10.0
HOUR_STEPS = 360


def test_one_step_without_a_pull_is_the_old_walk_and_a_pull_halves_the_distance() -> None:
    drift, vol = DRIFT_VOL["crash"]
    assert oracle_move(2_000.0, 2_000.0, "crash", trend_sign=1.0, dt=DT, shock=0.5) == \
        pytest.approx(2_000.0 * math.exp(drift + vol * 0.5))
    drift, vol = DRIFT_VOL["trending"]
    assert oracle_move(1_500.0, 2_000.0, "trending", trend_sign=-1.0, dt=40.0, shock=-1.0,
                       planted=0.01) == \
        pytest.approx(1_500.0 * math.exp(-drift * 2 - vol * 2 + 0.01))
    # calm has no drift: with no shock, only the pull moves the price
    pulled = oracle_move(2_000.0 * math.e, 2_000.0, "calm", trend_sign=1.0, dt=1_800.0,
                         shock=0.0, pull_half_life_s=1_800.0)
    assert math.log(pulled / 2_000.0) == pytest.approx(0.5)
    # the band still reflects, in log space
    floor = 2_000.0 / PRICE_BAND
    assert oracle_move(floor * 1.01, 2_000.0, "crash", trend_sign=1.0, dt=DT,
                       shock=0.0) > floor


def walk(seed: int, hours: int, pull_half_life_s: float) -> list[float]:
    """The oracle alone over the simulator's own regime chain, one 10 s step at a time,
    as a share of where it started."""
    rng = random.Random(seed)
    rows = held_transitions(1.0)
    regime, sign, price, out = "calm", 1.0, 1.0, []
    for _ in range(hours * HOUR_STEPS):
        new = rng.choices(REGIMES, rows[regime])[0]
        if new != regime:
            sign = rng.choice((-1.0, 1.0))
        regime = new
        price = oracle_move(price, 1.0, regime, trend_sign=sign, dt=DT,
                            shock=rng.gauss(0.0, 1.0), pull_half_life_s=pull_half_life_s)
        out.append(price)
    return out


def test_without_a_pull_the_price_sits_at_its_floor_with_it_near_where_it_started() -> None:
    floor_share, band_share = [], []
    for seed in range(6):
        late = walk(seed, 36, 0.0)[12 * HOUR_STEPS:]  # golem hours 12-36
        floor_share.append(sum(p < 1.5 / PRICE_BAND for p in late) / len(late))
        pulled = walk(seed, 36, 1_800.0)[12 * HOUR_STEPS:]
        band_share.append(sum(0.5 <= p <= 2.0 for p in pulled) / len(pulled))
    assert min(floor_share) > 0.8
    assert min(band_share) > 0.6 and sum(band_share) / len(band_share) > 0.8


def test_the_simulator_pulls_its_oracle_back_after_a_crash() -> None:
    prices = {}
    for pull in (0.0, 600.0):
        evm = RevmEvm()
        sim = MarketSimulator(evm, deploy_market(evm, 5), 5, regime="crash",
                              pull_half_life_s=pull)
        for i in range(8):  # crash for 80 s, then calm
            sim.step(T0 + DT * i, DT)
            sim.force_regime("crash")
        for i in range(8, 200):
            sim.force_regime("calm")
            sim.step(T0 + DT * i, DT)
        prices[pull] = sim.price / sim.market.initial_eth_usd
    assert prices[0.0] < 0.85  # the crash stays
    assert abs(math.log(prices[600.0])) < abs(math.log(prices[0.0])) / 4
    with pytest.raises(ValueError, match="half-life"):
        MarketSimulator(RevmEvm(), deploy_market(RevmEvm(), 5), 5, pull_half_life_s=-1.0)


def test_the_pull_is_part_of_the_chain_a_data_dir_keeps(tmp_path: Path) -> None:
    store = CaptureStore.open(tmp_path / "chain")
    try:
        source = SimulatedSource.create(3, T0, store, pull_half_life_s=1_800.0)
        assert "pull_half_life_s=1800" in source.rules
        assert SimulatedSource.create(3, T0, store, pull_half_life_s=1_800.0).rules == \
            source.rules
        with pytest.raises(ConfigError, match="pull_half_life_s=1800"):
            SimulatedSource.create(3, T0, store)
    finally:
        store.close()
    old = CaptureStore.open(tmp_path / "old")
    try:
        unpulled = SimulatedSource.create(3, T0, old)  # a data dir made before the option
        assert "pull" not in unpulled.rules
        with pytest.raises(ConfigError, match="price_pull_half_life_s = 0"):
            SimulatedSource.create(3, T0, old, pull_half_life_s=1_800.0)
    finally:
        old.close()


def test_the_config_pulls_by_default_and_refuses_a_negative_half_life() -> None:
    assert market_options(parse_config("").chain)["pull_half_life_s"] == 1_800.0
    assert market_options(parse_config("[chain]\nprice_pull_half_life_s = 0\n").chain)[
        "pull_half_life_s"] == 0.0
    with pytest.raises(ConfigError, match="price_pull_half_life_s"):
        parse_config("[chain]\nprice_pull_half_life_s = -1\n")

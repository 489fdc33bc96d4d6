"""A simulated market that holds its regimes longer (``[chain] regime_hold``): the same
Markov chain with every stay stretched, on the real in-process EVM; part of the chain a
data dir replays, and the unheld market is exactly the market as it always was."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.chain.cursor import CaptureStore
from golem.chain.market import deploy_market
from golem.chain.options import market_options
from golem.chain.revm import RevmEvm
from golem.chain.simulator import REGIMES, TRANSITIONS, MarketSimulator, held_transitions
from golem.chain.source import SimulatedSource
from golem.config import parse_config
from golem.errors import ConfigError

T0 = 1_800_000_000
DT = 10.0


def stationary(rows: dict[str, tuple[float, float, float, float]]) -> list[float]:
    share = [1.0 / len(REGIMES)] * len(REGIMES)
    for _ in range(20_000):
        share = [sum(share[i] * rows[r][j] for i, r in enumerate(REGIMES))
                 for j in range(len(REGIMES))]
    return share


def test_held_rows_stretch_every_stay_and_keep_where_the_chain_goes() -> None:
    held = held_transitions(10.0)
    assert held_transitions(1.0) == TRANSITIONS
    for regime, row in TRANSITIONS.items():
        i = REGIMES.index(regime)
        assert sum(held[regime]) == pytest.approx(1.0)
        # expected stay 1 / (1 - p_stay) grows tenfold
        assert 1 / (1 - held[regime][i]) == pytest.approx(10 / (1 - row[i]))
        # given a switch, the next regime is drawn as before
        leave, held_leave = 1 - row[i], 1 - held[regime][i]
        for j in range(len(REGIMES)):
            if j != i:
                assert held[regime][j] / held_leave == pytest.approx(row[j] / leave)
    assert stationary(held) == pytest.approx(stationary(TRANSITIONS), abs=1e-6)
    with pytest.raises(ValueError, match="hold"):
        held_transitions(0.5)


def switches(hold: float, steps: int = 400) -> int:
    evm = RevmEvm()
    sim = MarketSimulator(evm, deploy_market(evm, 11), 11, regime_hold=hold)
    for i in range(steps):
        sim.step(T0 + DT * i, DT)
    return len(sim.ground_truth)


def test_a_held_market_switches_regime_far_less_often() -> None:
    assert switches(1.0) > 3 * switches(10.0) >= 3


def test_the_hold_is_part_of_the_chain_a_data_dir_keeps(tmp_path: Path) -> None:
    store = CaptureStore.open(tmp_path / "chain")
    try:
        source = SimulatedSource.create(3, T0, store, regime_hold=10.0)
        assert "regime_hold=10" in source.rules
        again = SimulatedSource.create(3, T0, store, regime_hold=10.0)
        assert again.rules == source.rules
        with pytest.raises(ConfigError, match="regime_hold=10"):
            SimulatedSource.create(3, T0, store)
    finally:
        store.close()


def test_the_config_gives_the_hold_and_refuses_less_than_one() -> None:
    cfg = parse_config("[chain]\nregime_hold = 10.0\n")
    assert market_options(cfg.chain)["regime_hold"] == 10.0
    assert market_options(parse_config("").chain)["regime_hold"] == 1.0
    with pytest.raises(ConfigError, match="regime_hold"):
        parse_config("[chain]\nregime_hold = 0.5\n")

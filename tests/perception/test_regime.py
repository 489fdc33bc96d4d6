"""Regime detection on synthetic series: noise stays stationary, steps are found fast."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem.perception.regime import Regime, RegimeConfig, RegimeDetector, worst

CFG = RegimeConfig()


def run(xs: np.ndarray, cfg: RegimeConfig = CFG) -> list[Regime]:
    det = RegimeDetector()
    out = []
    for x in xs:
        det = det.step(float(x), cfg)
        out.append(det.regime)
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(-100, 100), st.floats(0.001, 100))
def test_stationary_noise_stays_stationary(seed: int, mean: float, sd: float) -> None:
    xs = np.random.default_rng(seed).normal(mean, sd, 2000)
    assert set(run(xs)) == {Regime.STATIONARY}


@pytest.mark.parametrize(("step", "max_delay"), [(3.0, 10), (5.0, 4), (10.0, 1)])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_step_is_transition_then_new_regime(step: float, max_delay: int, sign: float) -> None:
    for seed in range(20):
        rng = np.random.default_rng(seed)
        xs = np.concatenate([rng.normal(0, 1, 200), rng.normal(sign * step, 1, 200)])
        regimes = run(xs)
        assert set(regimes[:200]) == {Regime.STATIONARY}
        first = regimes.index(Regime.TRANSITION)
        assert 200 <= first <= 200 + max_delay
        new = regimes.index(Regime.NEW_REGIME)
        assert first < new <= first + 40
        assert regimes[-1] is Regime.STATIONARY  # settled into the new level


def test_new_regime_holds_then_returns_to_stationary() -> None:
    rng = np.random.default_rng(4)
    xs = np.concatenate([rng.normal(0, 1, 100), rng.normal(20, 1, 100)])
    det = RegimeDetector()
    seen = []
    for x in xs:
        det = det.step(float(x), CFG)
        seen.append(det.regime)
    new = seen.index(Regime.NEW_REGIME)
    assert seen[new : new + CFG.hold] == [Regime.NEW_REGIME] * CFG.hold
    assert seen[new + CFG.hold] is Regime.STATIONARY
    assert det.changes == 1


def test_no_alarm_during_warmup() -> None:
    assert set(run(np.array([0.0, 100.0, -100.0, 50.0] * 4))) == {Regime.STATIONARY}


def test_wild_values_stay_finite() -> None:
    det = RegimeDetector()
    for x in [0.0] * 30 + [1e15, -1e15, 1e15]:
        det = det.step(x, CFG)
    assert np.isfinite([det.s_pos, det.s_neg, det.ref_mean, det.ref_var]).all()


def test_round_trip_and_worst() -> None:
    det = RegimeDetector()
    for x in np.random.default_rng(0).normal(0, 1, 50):
        det = det.step(float(x), CFG)
    assert RegimeDetector.from_dict(det.to_dict()) == det
    assert worst([Regime.STATIONARY, Regime.NEW_REGIME]) is Regime.NEW_REGIME
    assert worst([Regime.NEW_REGIME, Regime.TRANSITION]) is Regime.TRANSITION
    assert worst([]) is Regime.STATIONARY

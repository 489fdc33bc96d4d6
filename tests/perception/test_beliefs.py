"""Belief state: EMA predictions, precision, weighted errors, persistence round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem.perception.beliefs import (
    MAX_PRECISION,
    BeliefConfig,
    BeliefState,
    FeatureBelief,
    PrecisionEstimate,
    channel_key,
)
from golem.perception.regime import Regime


def test_ema_prediction_uses_alpha() -> None:
    cfg = BeliefConfig(alpha=0.25)
    fb, first = FeatureBelief().observe(4.0, cfg)
    assert first.prediction is None and first.z == 1.0  # no prediction: unit error
    fb, seen = fb.observe(8.0, cfg)
    assert seen.prediction == 4.0 and seen.error == 4.0
    assert fb.prediction == pytest.approx(0.75 * 4.0 + 0.25 * 8.0)


def test_precision_is_inverse_variance_of_errors() -> None:
    rng = np.random.default_rng(5)
    est = PrecisionEstimate()
    for e in rng.normal(0.0, 0.5, 5000):
        est = est.updated(float(e), 0.99)
    assert est.precision == pytest.approx(4.0, rel=0.25)
    assert est.is_calibrated


def test_precision_is_clamped() -> None:
    est = PrecisionEstimate()
    for _ in range(2000):
        est = est.updated(0.0, 0.95)
    assert est.precision == MAX_PRECISION
    assert PrecisionEstimate().precision == 1.0


def test_weighted_error_uses_precision_before_the_observation() -> None:
    cfg = BeliefConfig()
    fb = FeatureBelief()
    rng = np.random.default_rng(1)
    for x in rng.normal(10.0, 0.1, 300):
        fb, _ = fb.observe(float(x), cfg)
    p_before = fb.precision.precision
    fb2, seen = fb.observe(12.0, cfg)
    assert seen.precision == p_before
    assert seen.weighted_error == pytest.approx(p_before * seen.error)
    assert seen.z == pytest.approx(seen.error * math.sqrt(p_before))
    assert abs(seen.z) > 10  # a 20-sigma jump on a tight channel
    assert fb2.precision.precision < p_before  # the outlier loosens the channel


def test_tight_channel_deviation_weighs_more_than_loose_one() -> None:
    rng = np.random.default_rng(2)
    state = BeliefState()
    for i in range(200):
        state, _ = state.observe(
            "uniswap-v2", "0xTight", tick=i, continuous={"x": 1 + 0.01 * rng.normal()}
        )
        state, _ = state.observe(
            "uniswap-v2", "0xLoose", tick=i, continuous={"x": 1 + 1.0 * rng.normal()}
        )
    _, tight = state.observe("uniswap-v2", "0xTight", tick=200, continuous={"x": 2.0})
    _, loose = state.observe("uniswap-v2", "0xLoose", tick=200, continuous={"x": 2.0})
    assert tight.precision > 100 * loose.precision
    assert tight.max_abs_z > 10 * loose.max_abs_z
    assert tight.surprise > loose.surprise


def test_channels_are_keyed_by_protocol_and_pool() -> None:
    state, obs = BeliefState().observe("aave-v3", "0xABC", tick=3, continuous={"log_size": 1.0})
    assert obs.channel == channel_key("aave-v3", "0xabc") == "aave-v3:0xabc"
    state, _ = state.observe("aave-v3", "0xdef", tick=4, continuous={"log_size": 1.0})
    assert set(state.channels) == {"aave-v3:0xabc", "aave-v3:0xdef"}
    assert state.channels["aave-v3:0xabc"].last_tick == 3


def test_rates_and_flags_add_surprise() -> None:
    state = BeliefState()
    for i in range(100):
        state, calm = state.observe(
            "token", "0xh", tick=i, counts={"events": (2, 1.0)}, flags={"revert": False}
        )
    _, burst = state.observe("token", "0xh", tick=100, counts={"events": (40, 1.0)})
    _, revert = state.observe("token", "0xh", tick=100, flags={"revert": True})
    assert burst.rate_surprise["events"] > 20 * calm.rate_surprise["events"]
    assert revert.flag_surprise["revert"] > 20 * calm.flag_surprise["revert"]
    assert burst.surprise == pytest.approx(burst.rate_surprise["events"])


def test_step_change_sets_channel_regime() -> None:
    rng = np.random.default_rng(9)
    state = BeliefState()
    regimes = []
    for i, x in enumerate(np.concatenate([rng.normal(0, 1, 200), rng.normal(6, 1, 100)])):
        state, obs = state.observe("p", "0x1", tick=i, continuous={"x": float(x), "y": 0.0})
        regimes.append(obs.regime)
    assert Regime.TRANSITION not in regimes[:200]
    assert Regime.TRANSITION in regimes[200:205]
    assert Regime.NEW_REGIME in regimes[200:]


def test_bad_feature_rejected() -> None:
    with pytest.raises(ValueError):
        BeliefState().observe("p", "0x1", tick=0, continuous={"x": math.inf})
    with pytest.raises(ValueError):
        BeliefState().observe("p", "0x1", tick=0, continuous={"x": 1e300})


events = st.lists(
    st.tuples(
        st.sampled_from(["uniswap-v2", "aave-v3"]),
        st.sampled_from(["0xA", "0xb"]),
        st.dictionaries(st.sampled_from(["log_size", "gas"]), st.floats(-1e6, 1e6), max_size=2),
        st.dictionaries(
            st.just("events"), st.tuples(st.integers(0, 50), st.floats(0.5, 10)), max_size=1
        ),
        st.dictionaries(st.just("revert"), st.booleans(), max_size=1),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(events)
def test_round_trip_through_json(evs: list) -> None:  # type: ignore[type-arg]
    state = BeliefState()
    for tick, (proto, pool, cont, counts, flags) in enumerate(evs):
        state, _ = state.observe(
            proto, pool, tick=tick, continuous=cont, counts=counts, flags=flags
        )
    text = json.dumps(state.to_dict(), allow_nan=False)
    restored = BeliefState.from_dict(json.loads(text))
    assert restored == state
    # and it behaves identically afterwards
    a = state.observe("uniswap-v2", "0xa", tick=99, continuous={"gas": 3.0})
    b = restored.observe("uniswap-v2", "0xa", tick=99, continuous={"gas": 3.0})
    assert a == b


def test_unknown_version_rejected() -> None:
    with pytest.raises(ValueError):
        BeliefState.from_dict({"version": 99, "channels": {}})

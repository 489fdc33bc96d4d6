"""EFE routing: each branch by hand, then monotonicity and finiteness properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.perception.beliefs import BeliefState
from golem.perception.curiosity import curiosity_score
from golem.perception.routing import (
    RoutingAction,
    RoutingConfig,
    information_gain,
    route,
    route_observation,
)

unit = st.floats(0, 1)
precision = st.floats(0, 1e6)


def test_seed_weights_in_scores() -> None:
    d = route(curiosity=0.8, precision=1.0, relevance=0.5)
    esc, silent, disc = (d.scores[a] for a in RoutingAction)
    gain = 0.8 / (1.0 + 1.0)  # seed: uncertainty = 1 / (precision + 1)
    assert d.information_gain == pytest.approx(gain)
    assert (esc.pragmatic, esc.epistemic) == pytest.approx((0.5, gain))
    assert (silent.pragmatic, silent.epistemic) == pytest.approx((0.3 * 0.5, 0.1 * gain))
    assert (disc.pragmatic, disc.epistemic, disc.cost) == (0.0, 0.0, 0.0)
    assert esc.efe == pytest.approx(-(0.5 + gain - 0.3))


def test_surprising_event_on_loose_channel_escalates() -> None:
    d = route(curiosity=0.95, precision=0.2, relevance=0.0)
    assert d.action is RoutingAction.ESCALATE
    assert "reaches" in d.reason


def test_relevant_but_dull_event_updates_silently() -> None:
    d = route(curiosity=0.1, precision=1.0, relevance=0.4)
    assert d.curiosity < d.threshold
    assert d.action is RoutingAction.UPDATE_SILENTLY
    assert "is below" in d.reason


def test_irrelevant_dull_event_is_discarded() -> None:
    d = route(curiosity=0.05, precision=1.0, relevance=0.0)
    assert d.action is RoutingAction.DISCARD


def test_below_threshold_never_escalates_even_if_relevant() -> None:
    d = route(curiosity=0.2, precision=0.0, relevance=1.0)
    assert d.scores[RoutingAction.ESCALATE].value > d.scores[RoutingAction.UPDATE_SILENTLY].value
    assert d.action is RoutingAction.UPDATE_SILENTLY


def test_precision_lowers_the_gate() -> None:
    # Same curiosity: gated out on a loose channel, a candidate on a tight one.
    cfg = RoutingConfig(escalation_cost=0.0)
    loose = route(curiosity=0.45, precision=0.0, relevance=0.5, cfg=cfg)
    tight = route(curiosity=0.45, precision=100.0, relevance=0.5, cfg=cfg)
    assert loose.threshold == pytest.approx(0.5) and tight.threshold == pytest.approx(0.3)
    assert loose.action is RoutingAction.UPDATE_SILENTLY
    assert tight.action is RoutingAction.ESCALATE


def test_ties_go_to_the_cheaper_action() -> None:
    free = RoutingConfig(escalation_cost=0.0, update_cost=0.0)
    assert route(0.0, 1.0, 0.0, free).action is RoutingAction.DISCARD


def test_nan_rejected() -> None:
    with pytest.raises(ValueError):
        route(math.nan, 1.0, 0.0)
    with pytest.raises(ValueError):
        route(0.5, math.nan, 0.0)


@given(st.floats(0, 20), st.floats(0, 20), st.floats(0, 20), precision, unit)
def test_more_surprise_never_lowers_escalate_score(
    z: float, s: float, ds: float, p: float, rel: float
) -> None:
    lo = route(curiosity_score(z, s), p, rel)
    hi = route(curiosity_score(z, s + ds), p, rel)
    assert hi.scores[RoutingAction.ESCALATE].value >= lo.scores[RoutingAction.ESCALATE].value
    if lo.action is RoutingAction.ESCALATE:
        assert hi.action is RoutingAction.ESCALATE


@given(unit, precision, unit, unit)
def test_more_relevance_never_lowers_escalate_score(
    c: float, p: float, r: float, dr: float
) -> None:
    lo, hi = route(c, p, r), route(c, p, min(1.0, r + dr))
    assert hi.scores[RoutingAction.ESCALATE].value >= lo.scores[RoutingAction.ESCALATE].value


@given(st.floats(-10, 10), st.floats(0, 1e300), st.floats(-10, 10))
def test_scores_finite_and_action_is_best_allowed(c: float, p: float, r: float) -> None:
    d = route(c, p, r)
    assert all(math.isfinite(v) for s in d.scores.values() for v in (s.efe, s.value))
    allowed = [
        a for a in RoutingAction if a is not RoutingAction.ESCALATE or d.curiosity >= d.threshold
    ]
    assert d.scores[d.action].efe == min(d.scores[a].efe for a in allowed)
    assert 0.0 <= d.information_gain <= d.curiosity <= 1.0


def test_information_gain_falls_with_precision() -> None:
    assert information_gain(1.0, 0.0) == 1.0
    assert information_gain(1.0, 9.0) == pytest.approx(0.1)
    assert information_gain(1.0, 9.0, precision_unit=9.0) == pytest.approx(0.5)


def test_pipeline_escalates_a_spike_and_discards_noise() -> None:
    rng = np.random.default_rng(12)
    state = BeliefState()
    actions = []
    for i, x in enumerate(rng.normal(0.0, 1.0, 300)):
        state, obs = state.observe("uniswap-v2", "0xp", tick=i, continuous={"log_size": float(x)})
        actions.append(route_observation(obs, relevance=0.0).action)
    assert actions[50:].count(RoutingAction.ESCALATE) <= 5  # ~0.6% expected
    assert actions[50:].count(RoutingAction.DISCARD) >= 180
    state, spike = state.observe("uniswap-v2", "0xp", tick=300, continuous={"log_size": 8.0})
    d = route_observation(spike, relevance=0.0)
    assert d.action is RoutingAction.ESCALATE
    assert d.curiosity > 0.99

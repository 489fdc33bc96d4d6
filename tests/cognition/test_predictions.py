"""Prediction scoring: a proper scoring rule, bounded, rewarding honest confidence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.cognition.predictions import observed_direction, score_prediction

prices = st.floats(1.0, 1e6)
conf = st.floats(0.0, 1.0)


def test_hits_and_misses() -> None:
    hit = score_prediction("down", 0.05, 0.8, 2000.0, 1900.0)
    assert hit.direction_hit and hit.quality == pytest.approx(1 - 0.2**2)
    assert hit.actual_move == pytest.approx(-0.05) and hit.magnitude_error == pytest.approx(0)
    miss = score_prediction("up", 0.05, 0.8, 2000.0, 1900.0)
    assert not miss.direction_hit and miss.quality == pytest.approx(1 - 0.8**2)
    assert observed_direction(0.001) == "flat" and observed_direction(-0.01) == "down"


@given(st.sampled_from(["up", "down", "flat"]), st.floats(0, 1), conf, prices, prices)
def test_quality_is_bounded_and_confidence_pays_only_when_right(
        direction: str, magnitude: float, confidence: float, baseline: float,
        actual: float) -> None:
    s = score_prediction(direction, magnitude, confidence, baseline, actual)
    assert 0.0 <= s.quality <= 1.0 and s.magnitude_error >= 0
    bolder = score_prediction(direction, magnitude, min(1.0, confidence + 0.1), baseline,
                              actual)
    if s.direction_hit:
        assert bolder.quality >= s.quality
    else:
        assert bolder.quality <= s.quality


@given(conf, st.floats(0.0, 1.0))
def test_brier_is_proper(confidence: float, p_true: float) -> None:
    """Expected quality is highest when the stated confidence equals the true hit rate."""
    def expected(c: float) -> float:
        return p_true * (1 - (c - 1) ** 2) + (1 - p_true) * (1 - c**2)
    assert expected(p_true) >= expected(confidence) - 1e-12

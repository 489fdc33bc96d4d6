"""Curiosity squash and the precision-modulated threshold."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.perception.curiosity import curiosity_score, precision_modulated_threshold

nonneg = st.floats(0, 1e300, allow_nan=False)


@given(nonneg, nonneg)
def test_curiosity_in_unit_interval(z: float, s: float) -> None:
    assert 0.0 <= curiosity_score(z, s) <= 1.0


@given(nonneg, nonneg, st.floats(0, 50), st.floats(0, 50))
def test_curiosity_monotone(z: float, s: float, dz: float, ds: float) -> None:
    base = curiosity_score(z, s)
    assert curiosity_score(z + dz, s) >= base
    assert curiosity_score(z, s + ds) >= base
    assert curiosity_score(-z, s) == base  # sign of the error does not matter


def test_curiosity_anchors() -> None:
    assert curiosity_score(0.0, 0.0) == 0.0
    assert curiosity_score(3.0, 0.0) == pytest.approx(1 - math.exp(-1))
    assert curiosity_score(0.0, 1.0) == pytest.approx(1 - math.exp(-1))
    assert curiosity_score(1.0, 0.01) < 0.15  # ordinary noise is dull
    assert curiosity_score(math.inf, 0.0) == 1.0
    with pytest.raises(ValueError):
        curiosity_score(math.nan, 0.0)


def test_threshold_follows_seed_formula() -> None:
    assert precision_modulated_threshold(0.5, 0.0, 100.0) == 0.5
    assert precision_modulated_threshold(0.5, 50.0, 100.0) == pytest.approx(0.5 * (1 - 0.2))
    assert precision_modulated_threshold(0.5, 1e6, 100.0) == pytest.approx(0.3)


@given(st.floats(-5, 5), st.floats(0, 1e7), st.floats(0, 1e7), st.floats(1e-3, 1e6))
def test_higher_precision_lowers_threshold(base: float, p1: float, dp: float, pmax: float) -> None:
    lo = precision_modulated_threshold(base, p1 + dp, pmax)
    hi = precision_modulated_threshold(base, p1, pmax)
    assert lo <= hi
    assert 0.03 - 1e-12 <= lo <= 0.95


def test_threshold_ignores_bad_precision() -> None:
    assert precision_modulated_threshold(0.5, math.nan, 100.0) == 0.5
    assert precision_modulated_threshold(0.5, 10.0, 0.0) == 0.5

"""The knowledge combination of the offline tier (pure): prior, weights, cancellation,
attribution and the refusal of malformed facts."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.cognition.forecast import PRIOR_WEIGHT, Evidence, brier, combine

means = st.floats(min_value=-0.2, max_value=0.2, allow_nan=False)
shares = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
counts = st.integers(min_value=1, max_value=10_000)
stddevs = st.floats(min_value=0.0, max_value=0.2, allow_nan=False)
evidence = st.builds(Evidence, key=st.sampled_from(["a", "b", "c", "d"]), n=counts,
                     mean=means, stddev=stddevs, p_up=shares, confidence=shares)


def test_with_no_evidence_the_forecast_is_the_prior() -> None:
    f = combine([], prior_stddev=0.02)
    assert (f.mean, f.p_up, f.weight, f.contributions, f.skipped) == (0.0, 0.5, 0.0, (), 0)
    assert f.stddev == pytest.approx(0.02) and f.from_prior


@given(means, counts, stddevs, shares, shares)
def test_equal_weights_and_opposite_means_cancel(mean: float, n: int, sd: float, p: float,
                                                 c: float) -> None:
    f = combine([Evidence("up", n, mean, sd, p, c), Evidence("down", n, -mean, sd, 1 - p, c)])
    assert f.mean == pytest.approx(0.0, abs=1e-12)
    assert f.p_up == pytest.approx(0.5)


@given(means, counts, counts, stddevs, shares, st.lists(evidence, max_size=4))
def test_more_evidence_never_lowers_a_facts_weight(mean: float, n1: int, n2: int, sd: float,
                                                  p: float, others: list[Evidence]) -> None:
    small, large = sorted((n1, n2))
    others = [o for o in others if o.key != "fact"]

    def share(n: int) -> float:
        f = combine([Evidence("fact", n, mean, sd, p, 0.9), *others])
        return abs(dict(f.contributions).get("fact", 0.0))

    assert share(large) >= share(small) - 1e-12


@given(st.lists(evidence, max_size=6))
def test_contributions_add_up_to_the_mean_and_stay_bounded(items: list[Evidence]) -> None:
    f = combine(items)
    assert sum(v for _, v in f.contributions) == pytest.approx(f.mean, abs=1e-12)
    # a weighted average of the items' means and the prior's 0
    assert min([0.0, *(e.mean for e in items)]) - 1e-12 <= f.mean \
        <= max([0.0, *(e.mean for e in items)]) + 1e-12
    assert 0.0 <= f.p_up <= 1.0 and f.stddev > 0


def test_a_confident_well_counted_fact_moves_the_forecast_and_is_credited() -> None:
    f = combine([Evidence("revert", 95, -0.01, 0.004, 0.2, 1.0)])
    assert f.mean == pytest.approx(-0.01 * 95 / (95 + PRIOR_WEIGHT))
    assert f.p_up == pytest.approx((0.2 * 95 + 0.5 * PRIOR_WEIGHT) / 100)
    assert f.contributions == (("revert", pytest.approx(f.mean)),)
    assert brier(f.p_up, went_up=False) < brier(0.5, went_up=False)


@pytest.mark.parametrize("bad", [
    Evidence("nan", 10, math.nan, 0.01, 0.5, 0.9),
    Evidence("inf", 10, 0.01, math.inf, 0.5, 0.9),
    Evidence("negative count", -3, 0.01, 0.01, 0.5, 0.9),
    Evidence("no count", 0, 0.01, 0.01, 0.5, 0.9),
    Evidence("negative stddev", 10, 0.01, -0.01, 0.5, 0.9),
    Evidence("share above one", 10, 0.01, 0.01, 1.5, 0.9),
    Evidence("confidence above one", 10, 0.01, 0.01, 0.5, 2.0),
])
def test_malformed_facts_are_skipped_and_counted(bad: Evidence) -> None:
    good = Evidence("good", 20, 0.02, 0.01, 0.7, 0.8)
    f = combine([good, bad])
    assert f.skipped == 1
    assert f == dataclasses.replace(combine([good]), skipped=1)


def test_a_bad_prior_is_refused() -> None:
    with pytest.raises(ValueError, match="prior_stddev"):
        combine([], prior_stddev=0.0)

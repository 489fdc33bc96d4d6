"""The knowledge combination of the offline tier (pure): prior, weights, cancellation,
attribution and the refusal of malformed facts."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.cognition.forecast import (
    PRIOR_WEIGHT,
    Evidence,
    brier,
    brier3,
    combine,
    horizon_stddev,
    normal_outlook,
)
from golem.cognition.predictions import FLAT_BAND
from golem.perception.market import PricePoint

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


@given(st.floats(min_value=1e-4, max_value=0.5))
def test_the_priors_outlook_is_symmetric_and_widens_with_the_spread(sd: float) -> None:
    down, flat, up = combine([], prior_stddev=sd).outlook
    assert down == pytest.approx(up) and down + flat + up == pytest.approx(1.0)
    wider = combine([], prior_stddev=sd * 2).outlook
    assert wider[1] <= flat + 1e-12  # a wider tape: "flat" is less likely
    if sd > 3 * FLAT_BAND:  # the usual move is well beyond the flat band
        assert flat < down


@given(st.lists(evidence, max_size=6), st.floats(min_value=1e-4, max_value=0.2))
def test_the_outlook_is_a_distribution(items: list[Evidence], sd: float) -> None:
    outlook = combine(items, prior_stddev=sd).outlook
    assert all(0 <= p <= 1 for p in outlook) and sum(outlook) == pytest.approx(1.0)


@given(means, counts, stddevs, shares)
def test_opposite_facts_of_equal_weight_leave_a_symmetric_outlook(
        mean: float, n: int, sd: float, c: float) -> None:
    f = combine([Evidence("up", n, mean, sd, 0.5, c), Evidence("down", n, -mean, sd, 0.5, c)])
    assert f.outlook[0] == pytest.approx(f.outlook[2], abs=1e-9)


def test_the_outlook_leans_with_the_evidence_and_keeps_the_tapes_spread() -> None:
    prior = combine([], prior_stddev=0.01).outlook
    up = combine([Evidence("x", 95, 0.004, 0.02, 0.8, 1.0)], prior_stddev=0.01).outlook
    assert up[2] > prior[2] and up[0] < prior[0]
    # the spread is the tape's: the learned stddev (0.02) does not widen the outlook
    assert up[1] == pytest.approx(normal_outlook(0.01 * 0.8416, 0.01)[1], abs=0.02)


def test_brier3_scores_the_observed_class() -> None:
    assert brier3((0.0, 0.0, 1.0), "up") == 0.0
    assert brier3((1.0, 0.0, 0.0), "up") == 2.0
    assert brier3((1 / 3, 1 / 3, 1 / 3), "flat") == pytest.approx(2 / 3)


def test_horizon_stddev_scales_the_tapes_spread() -> None:
    tape = [PricePoint(60.0 * i, 100.0 * (1.01 if i % 2 else 1.0)) for i in range(11)]
    sd = horizon_stddev(tape, 300.0)
    assert sd == pytest.approx(math.log(1.01) * math.sqrt(300.0 / 60.0))
    assert horizon_stddev(tape[:2], 300.0) is None


def test_a_zero_spread_puts_everything_on_the_means_class() -> None:
    assert normal_outlook(0.01, 0.0) == (0.0, 0.0, 1.0)
    assert normal_outlook(-0.01, 0.0) == (1.0, 0.0, 0.0)
    assert normal_outlook(FLAT_BAND / 2, 0.0) == (0.0, 1.0, 0.0)

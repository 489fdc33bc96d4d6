"""Bayesian surprise: KL >= 0, small at a confident prior's mean, larger for extremes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.perception.surprise import (
    BetaBernoulli,
    GammaPoisson,
    NormalGamma,
    NormalKnownVariance,
    digamma,
    kl_gamma,
)

finite = st.floats(-1e6, 1e6, allow_nan=False)
positive = st.floats(0.01, 1e4, allow_nan=False)


def surprise(prior, *obs):  # type: ignore[no-untyped-def]
    return prior.updated(*obs).kl_from(prior)


def test_digamma_matches_known_values() -> None:
    euler = 0.5772156649015329
    assert digamma(1.0) == pytest.approx(-euler, abs=1e-12)
    assert digamma(0.5) == pytest.approx(-euler - 2 * math.log(2), abs=1e-12)
    assert digamma(10.0) == pytest.approx(2.251752589066721, abs=1e-12)
    with pytest.raises(ValueError):
        digamma(0.0)


def test_gamma_kl_matches_monte_carlo() -> None:
    rng = np.random.default_rng(7)
    a1, b1, a0, b0 = 3.0, 2.0, 1.5, 0.5
    x = rng.gamma(a1, 1 / b1, 400_000)

    def logpdf(x: np.ndarray, a: float, b: float) -> np.ndarray:
        return a * math.log(b) - math.lgamma(a) + (a - 1) * np.log(x) - b * x

    mc = float(np.mean(logpdf(x, a1, b1) - logpdf(x, a0, b0)))
    assert kl_gamma(a1, b1, a0, b0) == pytest.approx(mc, rel=0.02)
    assert kl_gamma(2.0, 3.0, 2.0, 3.0) == pytest.approx(0.0, abs=1e-12)


def test_normal_gamma_kl_matches_monte_carlo() -> None:
    rng = np.random.default_rng(11)
    p0 = NormalGamma(mean=0.0, kappa=2.0, a=2.0, b=1.0)
    p1 = NormalGamma(mean=0.7, kappa=5.0, a=4.0, b=1.5)
    n = 400_000
    tau = rng.gamma(p1.a, 1 / p1.b, n)
    mu = rng.normal(p1.mean, 1 / np.sqrt(p1.kappa * tau))

    def logpdf(mu: np.ndarray, tau: np.ndarray, p: NormalGamma) -> np.ndarray:
        lg = p.a * math.log(p.b) - math.lgamma(p.a) + (p.a - 1) * np.log(tau) - p.b * tau
        ln = 0.5 * np.log(p.kappa * tau / (2 * math.pi)) - 0.5 * p.kappa * tau * (mu - p.mean) ** 2
        return lg + ln

    mc = float(np.mean(logpdf(mu, tau, p1) - logpdf(mu, tau, p0)))
    assert p1.kl_from(p0) == pytest.approx(mc, rel=0.03)


@given(finite, positive, positive, positive, finite)
def test_normal_gamma_surprise_nonnegative(
    mean: float, k: float, a: float, b: float, x: float
) -> None:
    s = surprise(NormalGamma(mean, k, a, b), x)
    assert s >= 0.0 and math.isfinite(s)


@given(finite, positive, positive, finite)
def test_normal_known_variance_surprise_nonnegative(
    m: float, t: float, lam: float, x: float
) -> None:
    s = surprise(NormalKnownVariance(m, t, lam), x)
    assert s >= 0.0 and math.isfinite(s)


@given(positive, positive, st.integers(0, 10_000), st.floats(0.01, 100))
def test_gamma_poisson_surprise_nonnegative(a: float, b: float, n: int, t: float) -> None:
    s = surprise(GammaPoisson(a, b), n, t)
    assert s >= 0.0 and math.isfinite(s)


@given(positive, positive, st.booleans())
def test_beta_bernoulli_surprise_nonnegative(al: float, be: float, outcome: bool) -> None:
    s = surprise(BetaBernoulli(al, be), outcome)
    assert s >= 0.0 and math.isfinite(s)


@given(finite, st.floats(1e3, 1e6))
def test_observation_at_confident_prior_mean_is_unsurprising(m: float, strength: float) -> None:
    # strength pseudo-observations of unit variance: high prior precision on mu and tau
    assert surprise(NormalGamma(m, strength, strength, strength), m) < 1e-3
    assert surprise(NormalKnownVariance(m, strength, 1.0), m) < 1e-3
    assert surprise(GammaPoisson(strength * 2.0, strength), 2.0) < 1e-3


@given(st.floats(0.0, 3.0), st.floats(0.0, 3.0))
def test_extreme_observations_surprise_more(d1: float, extra: float) -> None:
    d2 = d1 + extra + 0.1
    for prior in (NormalGamma(1.0, 20.0, 20.0, 20.0), NormalKnownVariance(1.0, 20.0, 1.0)):
        assert surprise(prior, 1.0 + d2) > surprise(prior, 1.0 + d1)
        assert surprise(prior, 1.0 - d2) > surprise(prior, 1.0 - d1)
    rate = GammaPoisson(20.0, 10.0)  # expects 2 per tick
    assert surprise(rate, 2 + round(10 * d2) + 1) > surprise(rate, 2 + round(10 * d1))


def test_rare_outcome_surprises_more_than_common() -> None:
    reverts_rare = BetaBernoulli(1.0, 50.0)
    assert surprise(reverts_rare, True) > 10 * surprise(reverts_rare, False)


@given(st.floats(0.01, 0.999))
def test_discount_keeps_mean_and_loses_evidence(rho: float) -> None:
    ng = NormalGamma(2.0, 50.0, 30.0, 15.0).discounted(rho)
    assert ng.mean == 2.0 and ng.a / ng.b == pytest.approx(2.0)
    assert ng.kappa <= 50.0 and ng.kappa >= 0.5
    gp = GammaPoisson(40.0, 20.0).discounted(rho)
    assert gp.a / gp.b == pytest.approx(2.0) and gp.a <= 40.0
    bb = BetaBernoulli(3.0, 9.0).discounted(rho)
    assert bb.alpha / (bb.alpha + bb.beta) == pytest.approx(0.25)
    assert 1.0 - 1e-9 <= bb.alpha + bb.beta <= 12.0


def test_discounting_keeps_surprise_alive() -> None:
    rng = np.random.default_rng(3)
    forgetful, hoarder = NormalGamma(), NormalGamma()
    for x in rng.normal(0.0, 1.0, 5000):
        forgetful = forgetful.discounted(0.99).updated(float(x))
        hoarder = hoarder.updated(float(x))
    shock = 5.0
    assert surprise(forgetful.discounted(0.99), shock) > 3 * surprise(hoarder, shock)
    assert surprise(forgetful.discounted(0.99), shock) > 0.1


def test_constant_feature_stays_finite() -> None:
    model = NormalGamma()
    for _ in range(100_000):
        model = model.discounted(0.99).updated(1.0)
    assert model.b > 0.0
    assert math.isfinite(surprise(model.discounted(0.99), 2.0))


def test_bad_input_rejected() -> None:
    with pytest.raises(ValueError):
        NormalGamma().updated(math.nan)
    with pytest.raises(ValueError):
        GammaPoisson().updated(-1, 1.0)
    with pytest.raises(ValueError):
        GammaPoisson().updated(1, 0.0)

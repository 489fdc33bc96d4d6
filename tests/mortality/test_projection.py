"""The terminal projection follows the components' own clocks (issue 24, "also seen")."""

from __future__ import annotations

import pytest

from golem.mortality.projection import poisson_quantile, project_terminal

DAY = 86_400.0


def test_an_hour_into_a_month_is_not_half_a_day_from_terminal() -> None:
    # the reported case: 30-day lifespan, one hour old, vitality 0.999
    p = project_terminal(age_s=3600, lifespan_s=30 * DAY, economic=1.0, epistemic=1.0,
                         shock_factor=0.999, hazard_per_day=0.02, hazard_shock=0.1,
                         economic_history=[(0, 1.0), (600, 1.0), (1200, 1.0), (1800, 1.0)])
    # exact on the Hayflick clock: 0.999 x (1 - age/L) = 0.1  ->  age = L (1 - 0.1/0.999)
    expected = 30 * DAY * (1 - 0.1 / 0.999) - 3600
    assert p.clock == "hayflick"
    assert p.ttl_s == pytest.approx(expected, abs=2.0)
    assert p.expected_shocks == pytest.approx(0.02 * expected / DAY, rel=1e-6)
    assert p.shocks_p90 == poisson_quantile(p.expected_shocks) == 2  # P(N <= 1) = 0.897
    assert p.earliest_s is not None and p.earliest_s < p.ttl_s  # two shocks: sooner


def test_a_falling_economic_clock_comes_first() -> None:
    history = [(t * 600.0, 1.0 - t * 0.01) for t in range(6)]  # -1.44 a day
    p = project_terminal(age_s=3000, lifespan_s=30 * DAY, economic=0.95, epistemic=1.0,
                         shock_factor=1.0, hazard_per_day=0.0, hazard_shock=0.1,
                         economic_history=history)
    assert p.clock == "economic"
    assert p.ttl_s is not None and p.ttl_s < DAY
    assert p.earliest_s == p.ttl_s and p.shocks_p90 == 0


def test_terminal_now() -> None:
    p = project_terminal(age_s=29.9 * DAY, lifespan_s=30 * DAY, economic=1.0, epistemic=1.0,
                         shock_factor=1.0, hazard_per_day=0.02, hazard_shock=0.1)
    assert p.clock == "terminal" and p.ttl_s == 0.0


def test_poisson_quantile() -> None:
    assert poisson_quantile(0.0) == 0
    assert poisson_quantile(0.05) == 0  # P(0) = 0.95
    assert poisson_quantile(2.0) == 4  # P(N <= 3) = 0.857, P(N <= 4) = 0.947


def test_market_noise_in_the_economic_component_is_not_a_clock() -> None:
    # marked to market: up and down around a slight fall, as in a simulated hour
    noisy = [(0, 1.0), (600, 1.0), (1200, 0.97), (1800, 1.0), (2400, 0.99), (3000, 0.985)]
    p = project_terminal(age_s=3000, lifespan_s=30 * DAY, economic=0.985, epistemic=1.0,
                         shock_factor=1.0, hazard_per_day=0.0, hazard_shock=0.1,
                         economic_history=noisy)
    assert p.clock == "hayflick"
    assert p.ttl_s == pytest.approx(30 * DAY * (1 - 0.1 / 0.985) - 3000, abs=2.0)

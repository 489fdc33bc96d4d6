"""Vitality math: components, composite, phases, reserve, hazard, projected time to live,
and the phase budget. Unit tests and hypothesis properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.governor.budget import phase_budget
from golem.governor.categories import Phase
from golem.mortality import vitality as v

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
usd = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)
ORDER = [Phase.TERMINAL, Phase.DECLINING, Phase.CONSERVATION, Phase.STABLE, Phase.THRIVING]


# --- phases -------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "phase"), [
    (1.0, Phase.THRIVING), (0.7000001, Phase.THRIVING), (0.7, Phase.STABLE),
    (0.6, Phase.STABLE), (0.5, Phase.STABLE), (0.4999, Phase.CONSERVATION),
    (0.3, Phase.CONSERVATION), (0.2999, Phase.DECLINING), (0.1, Phase.DECLINING),
    (0.0999, Phase.TERMINAL), (0.0, Phase.TERMINAL)])
def test_phase_boundaries(value: float, phase: Phase) -> None:
    assert v.phase_of(value) is phase


@given(unit, unit)
def test_phase_is_monotone_in_vitality(a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    assert ORDER.index(v.phase_of(lo)) <= ORDER.index(v.phase_of(hi))


# --- composite ----------------------------------------------------------------------

@given(unit, unit, unit)
def test_composite_is_the_product_in_unit_interval(e: float, p: float, s: float) -> None:
    state = v.VitalityState(e, p, s)
    assert 0.0 <= state.composite <= 1.0
    assert state.composite == pytest.approx(e * p * s)


@given(unit, unit, unit, unit, st.integers(0, 2))
def test_composite_monotone_in_each_component(e: float, p: float, s: float, x: float,
                                              which: int) -> None:
    parts = [e, p, s]
    lo, hi = list(parts), list(parts)
    lo[which], hi[which] = min(parts[which], x), max(parts[which], x)
    assert v.VitalityState(*lo).composite <= v.VitalityState(*hi).composite


@given(unit, unit, st.integers(0, 2))
def test_any_zero_component_is_terminal(a: float, b: float, which: int) -> None:
    parts = [a, b]
    parts.insert(which, 0.0)
    state = v.VitalityState(*parts)
    assert state.composite == 0.0
    assert state.phase is Phase.TERMINAL
    assert state.dead_component


def test_cause_names_the_weakest_component() -> None:
    assert v.VitalityState(0.1, 0.9, 0.9).cause() == v.ECONOMIC
    assert v.VitalityState(0.9, 0.05, 0.9).cause() == v.EPISTEMIC
    assert v.VitalityState(0.9, 0.9, 0.2, hayflick_ratio=0.8).cause() == v.HAYFLICK
    assert v.VitalityState(0.9, 0.9, 0.2, hayflick_ratio=0.1,
                           shock_factor=0.3).cause() == v.HAZARD


# --- economic and the reserve -------------------------------------------------------

def test_death_reserve_formula() -> None:
    assert v.death_reserve_usd(10.0) == pytest.approx(0.30)  # the floor wins
    assert v.death_reserve_usd(100.0) == pytest.approx(2.0)  # 2 %
    assert v.death_reserve_usd(15.0) == pytest.approx(0.30)  # 0.30 either way
    assert v.death_reserve_usd(1000.0, floor=0.5, fraction=0.01) == pytest.approx(10.0)


@given(usd, st.floats(0.0, 1.0), st.floats(0.0, 0.5))
def test_death_reserve_is_the_max(start: float, floor: float, fraction: float) -> None:
    r = v.death_reserve_usd(start, floor, fraction)
    assert r >= floor and r >= fraction * start
    assert r in (floor, fraction * start)


def test_economic_values() -> None:
    assert v.economic(100.0, 0.0, 100.0, 2.0) == 1.0
    assert v.economic(51.0, 0.0, 100.0, 2.0) == pytest.approx(0.5)
    assert v.economic(100.0, 49.0, 100.0, 2.0) == pytest.approx(0.5)  # spend comes off
    assert v.economic(2.0, 0.0, 100.0, 2.0) == 0.0  # only the reserve is left: dead
    assert v.economic(1.0, 5.0, 100.0, 2.0) == 0.0
    assert v.economic(500.0, 0.0, 100.0, 2.0) == 1.0  # profit is capped at healthy
    assert v.economic(0.2, 0.0, 0.2, 0.3) == 0.0  # a budget below the reserve


@given(usd, usd, usd, st.floats(1.0, 1e6), st.floats(0.0, 0.9))
def test_economic_monotone_in_equity_and_spend(a: float, b: float, spent: float,
                                                start: float, share: float) -> None:
    reserve = share * start
    lo, hi = sorted((a, b))
    assert v.economic(lo, spent, start, reserve) <= v.economic(hi, spent, start, reserve)
    assert v.economic(hi, lo, start, reserve) >= v.economic(hi, hi, start, reserve)
    assert 0.0 <= v.economic(a, spent, start, reserve) <= 1.0


# --- epistemic ----------------------------------------------------------------------

def test_epistemic_unproven_below_min_samples() -> None:
    e = v.epistemic([False] * 9, min_samples=10, threshold=0.35)
    assert e.unproven and e.value == 1.0 and not e.senescent


def test_epistemic_mapping() -> None:
    good = v.epistemic([True] * 7 + [False] * 3, min_samples=10, threshold=0.35)
    assert not good.unproven and good.value == 1.0  # fitness (7+2)/14 = 0.64 >= 0.50
    assert good.fitness == pytest.approx(9 / 14)
    # fitness 6/14 = 0.43: between 0.35 and 0.50, linear from 0.5 to 1.0
    mid = v.epistemic([True] * 4 + [False] * 6, min_samples=10, threshold=0.35)
    assert mid.value == pytest.approx(0.5 + 0.5 * (6 / 14 - 0.35) / 0.15)
    bad = v.epistemic([False] * 20, min_samples=10, threshold=0.35)  # fitness 2/24
    assert bad.senescent and bad.value == pytest.approx(0.5 * (2 / 24) / 0.35)
    later = v.epistemic([False] * 20, min_samples=10, threshold=0.35, checks_below=3)
    assert later.value == pytest.approx(bad.value * 0.8 ** 3)
    # 0.119 x 0.8^11 = 0.0102 still counts; 0.8^12 takes it under 0.01: dead of staleness
    assert v.epistemic([False] * 20, min_samples=10, threshold=0.35,
                       checks_below=11).value == pytest.approx(bad.value * 0.8 ** 11)
    assert v.epistemic([False] * 20, min_samples=10, threshold=0.35,
                       checks_below=12).value == 0.0


@given(st.lists(st.booleans(), max_size=60), st.lists(st.booleans(), max_size=60),
       st.integers(0, 30), st.floats(0.05, 0.95))
def test_epistemic_in_unit_interval_and_monotone_in_fitness(
        a: list[bool], b: list[bool], streak: int, threshold: float) -> None:
    ea = v.epistemic(a, min_samples=5, threshold=threshold, checks_below=streak)
    assert 0.0 <= ea.value <= 1.0
    n = max(len(a), 5)
    worse = v.epistemic([False] * n, min_samples=5, threshold=threshold, checks_below=streak)
    better = v.epistemic([True] * n, min_samples=5, threshold=threshold, checks_below=streak)
    mixed = v.epistemic([True] * sum(a) + [False] * (n - sum(a)), min_samples=5,
                        threshold=threshold, checks_below=streak)
    assert worse.value <= mixed.value <= better.value
    if better.fitness >= threshold + v.HEALTHY_MARGIN:
        assert better.value == 1.0
    assert v.epistemic(b, min_samples=5, threshold=threshold, checks_below=streak + 1).value \
        <= v.epistemic(b, min_samples=5, threshold=threshold, checks_below=streak).value


# --- stochastic and the hazard ------------------------------------------------------

def test_stochastic_values() -> None:
    assert v.stochastic(0, 100, []) == 1.0
    assert v.stochastic(25, 100, []) == pytest.approx(0.75)
    assert v.stochastic(25, 100, [0.1, 0.5]) == pytest.approx(0.75 * 0.9 * 0.5)
    assert v.stochastic(150, 100, []) == 0.0
    assert v.stochastic(0, 100, [1.0]) == 0.0


@given(st.floats(0, 1e7), st.floats(1, 1e7), st.lists(unit, max_size=10), st.floats(0, 1e6))
def test_stochastic_declines_with_age(age: float, life: float, shocks: list[float],
                                      more: float) -> None:
    now = v.stochastic(age, life, shocks)
    assert 0.0 <= now <= 1.0
    assert v.stochastic(age + more, life, shocks) <= now
    assert v.stochastic(age, life, [*shocks, 0.1]) <= now


def test_hazard_draw_is_deterministic_and_calibrated() -> None:
    draws = [v.hazard_draw(v.hazard_rng(42, t), 0.5, 86_400) for t in range(2000)]
    assert draws == [v.hazard_draw(v.hazard_rng(42, t), 0.5, 86_400) for t in range(2000)]
    assert 0.45 < sum(draws) / len(draws) < 0.55
    assert draws != [v.hazard_draw(v.hazard_rng(43, t), 0.5, 86_400) for t in range(2000)]
    assert v.hazard_probability(0.02, 0) == 0.0
    assert v.hazard_probability(0.0, 86_400) == 0.0
    # per-tick probabilities compose to the daily one
    assert 1 - (1 - v.hazard_probability(0.3, 3600)) ** 24 == pytest.approx(0.3)


# --- projected time to live ---------------------------------------------------------

def test_time_to_terminal() -> None:
    line = [(t * 100.0, 1.0 - t * 0.1) for t in range(5)]  # -0.001 per s, now 0.6
    assert v.time_to_terminal(line) == pytest.approx(500.0)
    assert v.time_to_terminal(line[:2]) is None  # too few points
    assert v.time_to_terminal([(0, 0.5), (1, 0.5), (2, 0.5)]) is None  # flat
    assert v.time_to_terminal([(0, 0.3), (1, 0.4), (2, 0.5)]) is None  # rising
    assert v.time_to_terminal([(0, 0.5), (1, 0.05)]) == 0.0  # already terminal
    assert v.time_to_terminal([]) is None


@given(st.lists(st.tuples(st.floats(0, 1e6), unit), min_size=3, max_size=20))
def test_time_to_terminal_is_none_or_nonnegative(points: list[tuple[float, float]]) -> None:
    points.sort()
    ttl = v.time_to_terminal(points)
    assert ttl is None or (ttl >= 0.0 and math.isfinite(ttl))


# --- budget by phase ----------------------------------------------------------------

def test_phase_budget_follows_the_seed() -> None:
    assert phase_budget(8000, Phase.THRIVING) == 8000
    assert phase_budget(8000, Phase.STABLE) == 6400
    assert phase_budget(8000, Phase.CONSERVATION) == 5600
    assert phase_budget(8000, Phase.DECLINING) == 4800
    assert phase_budget(8000, Phase.TERMINAL) == 3200
    assert phase_budget(1000, Phase.TERMINAL) == 500  # never below the config's minimum
    assert phase_budget(300, Phase.TERMINAL) == 300  # nor above a smaller configured one


@given(st.integers(500, 1_000_000))
def test_phase_budget_shrinks_with_the_phase(base: int) -> None:
    budgets = [phase_budget(base, p) for p in ORDER]
    assert budgets == sorted(budgets)
    assert all(500 <= b <= base for b in budgets) and budgets[-1] == base

"""Vitality: economic x epistemic x stochastic, and the behavioural phase it puts the golem in.

Pure: plain numbers in, plain numbers out (no I/O, no clock, no store). The Delta stage
(vitality_check.py) gathers the inputs and keeps the history (vitality_store.py).

The epistemic component judges what the golem knows, not how predictable the market
is: its evidence is, for each recent prediction whose outlook differed from a reference
that knows nothing but the tape (no change on average, the tape's spread), whether the
prediction scored the better Brier (``DecisionJournal.recent_verdicts``; predictions
whose horizons overlap count once). Predictive fitness is the smoothed share of those
it won. A golem that says what the reference
says has shown nothing and stays unproven; one whose knowledge keeps moving it off the
reference the wrong way is going stale. (The absolute direction hit rate was the
evidence before: on a market with no edge to find, a sticky call on a coin flip fell
below the threshold by luck, and a default golem died of it at golem day 1.2;
benchmarks/README.md.)

The components multiply, so any one at zero kills whatever the others say. Phase
boundaries: each phase includes its lower bound, and Thriving is strictly above 0.7:
0.7 and 0.5 are Stable, 0.3 is Conservation, 0.1 is Declining, below 0.1 is Terminal.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from golem.governor.categories import Phase

TERMINAL_BELOW = 0.1
# (lower bound, phase), checked top down; Thriving's bound is exclusive.
_BOUNDS = ((0.5, Phase.STABLE), (0.3, Phase.CONSERVATION), (TERMINAL_BELOW, Phase.DECLINING))
THRIVING_ABOVE = 0.7
# Phase as a number for tick counters: 0 terminal .. 4 thriving.
PHASE_RANK: dict[Phase, int] = {Phase.TERMINAL: 0, Phase.DECLINING: 1, Phase.CONSERVATION: 2,
                                Phase.STABLE: 3, Phase.THRIVING: 4}

# Epistemic mapping (documented in `epistemic`).
PRIOR_HITS = 2.0  # Beta(2, 2): a weak prior at a coin flip, so 3 wins of 3 is not 100 %
PRIOR_MISSES = 2.0
HEALTHY_MARGIN = 0.15  # fitness at threshold + margin and above counts as fully healthy
AT_THRESHOLD = 0.5  # the component's value exactly at the senescence threshold
SENESCENCE_DECAY = 0.8  # each further check below the threshold multiplies by this
DEAD_BELOW = 0.01  # a component this small is zero: the golem died of staleness

ECONOMIC = "economic"
EPISTEMIC = "epistemic senescence"
HAYFLICK = "stochastic (Hayflick limit)"
HAZARD = "stochastic (hazard)"


def clamp01(x: float) -> float:
    return 0.0 if math.isnan(x) or x <= 0.0 else min(1.0, x)


@dataclass(frozen=True)
class VitalityState:
    """One reading. `unproven`: too few verdicts (predictions that differed from the
    reference) to judge the epistemic clock (it reads 1.0 until then); `senescent`:
    predictive fitness below the threshold."""

    economic: float
    epistemic: float
    stochastic: float
    unproven: bool = False
    senescent: bool = False
    hayflick_ratio: float = 0.0  # age / lifespan
    shock_factor: float = 1.0  # product of (1 - shock) over the hazards taken

    @property
    def composite(self) -> float:
        return clamp01(self.economic) * clamp01(self.epistemic) * clamp01(self.stochastic)

    @property
    def phase(self) -> Phase:
        if min(self.economic, self.epistemic, self.stochastic) <= 0.0:
            return Phase.TERMINAL
        return phase_of(self.composite)

    @property
    def dead_component(self) -> bool:
        return min(self.economic, self.epistemic, self.stochastic) <= 0.0

    def cause(self) -> str:
        """What is killing the golem (or would, first): the weakest component."""
        weakest = min((self.economic, 0), (self.epistemic, 1), (self.stochastic, 2))[1]
        if weakest == 0:
            return ECONOMIC
        if weakest == 1:
            return EPISTEMIC
        # the stochastic clock: the larger of the two losses names it
        return HAZARD if 1.0 - self.shock_factor > self.hayflick_ratio else HAYFLICK


def phase_of(v: float) -> Phase:
    if v > THRIVING_ABOVE:
        return Phase.THRIVING
    for bound, phase in _BOUNDS:
        if v >= bound:
            return phase
    return Phase.TERMINAL


def death_reserve_usd(start_usd: float, floor: float = 0.30, fraction: float = 0.02) -> float:
    """What normal life may never spend: max(floor, fraction x starting budget), kept for
    the death protocol's reflection and notifications."""
    return max(floor, fraction * start_usd)


def economic(equity_usd: float, inference_spent_usd: float, start_usd: float,
             reserve_usd: float) -> float:
    """Spendable balance above the death reserve relative to the starting one. Equity is the
    wallet plus positions marked to market; model spend is paid from the same budget, so it
    comes off too. A budget at or below the reserve leaves nothing to live on: 0."""
    span = start_usd - reserve_usd
    if span <= 0.0:
        return 0.0
    return clamp01((equity_usd - inference_spent_usd - reserve_usd) / span)


@dataclass(frozen=True)
class Epistemic:
    value: float
    fitness: float  # smoothed share of verdicts won
    samples: int
    unproven: bool
    senescent: bool


def predictive_fitness(hits: Sequence[bool]) -> float:
    """The share of True under a Beta(PRIOR_HITS, PRIOR_MISSES) prior (posterior mean)."""
    return (sum(hits) + PRIOR_HITS) / (len(hits) + PRIOR_HITS + PRIOR_MISSES)


def epistemic(hits: Sequence[bool], *, min_samples: int, threshold: float,
              checks_below: int = 0) -> Epistemic:
    """Predictive fitness over the verdicts of the window (True: the prediction beat the
    reference; the caller chooses the window).

    Fewer than `min_samples`: unproven, 1.0. Fitness f at or above threshold +
    HEALTHY_MARGIN: 1.0; from the threshold up to there it rises linearly from
    AT_THRESHOLD to 1.0. Below the threshold the golem is dying of staleness: the value
    starts at AT_THRESHOLD x f / threshold and is multiplied by SENESCENCE_DECAY for each
    consecutive earlier check that was also below (`checks_below`); under DEAD_BELOW it
    is 0.
    """
    n = len(hits)
    if n < min_samples:
        return Epistemic(1.0, predictive_fitness(hits), n, unproven=True, senescent=False)
    f = predictive_fitness(hits)
    if f >= threshold:
        healthy = min(1.0, threshold + HEALTHY_MARGIN)
        rise = 1.0 if healthy <= threshold else (f - threshold) / (healthy - threshold)
        return Epistemic(clamp01(AT_THRESHOLD + (1.0 - AT_THRESHOLD) * rise), f, n,
                         unproven=False, senescent=False)
    value = AT_THRESHOLD * f / threshold * SENESCENCE_DECAY ** max(0, checks_below)
    return Epistemic(0.0 if value < DEAD_BELOW else clamp01(value), f, n, unproven=False,
                     senescent=True)


def hayflick_ratio(age_s: float, lifespan_s: float) -> float:
    return clamp01(age_s / lifespan_s) if lifespan_s > 0 else 1.0


def stochastic(age_s: float, lifespan_s: float, shocks: Sequence[float]) -> float:
    """(1 - age/lifespan) x prod(1 - shock), in [0, 1]."""
    return clamp01((1.0 - hayflick_ratio(age_s, lifespan_s)) * shock_factor(shocks))


def shock_factor(shocks: Sequence[float]) -> float:
    return float(math.prod(1.0 - clamp01(s) for s in shocks))


def hazard_rng(seed: int, tick: int) -> random.Random:
    """The draw for one Delta tick: the same (seed, tick) always rolls the same."""
    return random.Random(f"{seed}:hazard:{tick}")  # noqa: S311 - simulation, not crypto


def hazard_probability(per_day: float, dt_s: float) -> float:
    """The chance of a shock in dt_s when per_day is the chance in a day."""
    if dt_s <= 0 or per_day <= 0:
        return 0.0
    survive: float = (1.0 - min(per_day, 1.0)) ** (dt_s / 86_400.0)
    return 1.0 - survive


def hazard_draw(rng: random.Random, per_day: float, dt_s: float) -> bool:
    return rng.random() < hazard_probability(per_day, dt_s)


def time_to_terminal(samples: Sequence[tuple[float, float]], *,
                     terminal_below: float = TERMINAL_BELOW, min_points: int = 3) -> float | None:
    """Seconds until the composite crosses into Terminal at its recent trend: the
    least-squares slope over `samples` ((golem time, composite), oldest first). None when
    there are too few points or it is not declining; 0 when already Terminal."""
    if not samples:
        return None
    latest = samples[-1][1]
    if latest < terminal_below:
        return 0.0
    if len(samples) < min_points:
        return None
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mv = sum(v for _, v in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    if var <= 0.0:
        return None
    slope = sum((t - mt) * (v - mv) for t, v in samples) / var
    if slope >= 0.0 or not math.isfinite(slope):
        return None
    return (latest - terminal_below) / -slope

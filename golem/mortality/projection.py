"""When the golem turns Terminal, projected on the vitality components' own clocks. Pure.

The stochastic component's Hayflick clock is known exactly: ``(1 - age/lifespan)`` falls
linearly to 0 at the lifespan. Holding the other factors where they are (economic at its
recent least-squares trend when that is falling, epistemic and the shock factor as they
are), the composite ``E x K x S`` crosses the Terminal bound at one computable time: the
central estimate. Economic vitality moves with the market both ways, so its trend counts
only when it falls by more than twice the slope's standard error (market noise over a
short window is not a clock). Hazard shocks are the known unknown: over that span a
Poisson number of them is expected; the early bound applies the 90th-percentile count at
once (each takes ``hazard_shock`` off S), so "terminal between ``earliest_s`` and
``ttl_s``" holds unless more shocks land than that or the economic or epistemic clock
turns down faster than it has been. The old projection, a straight line through the
recent composites, read a month-long life as half a day after one simulated hour.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from golem.mortality.vitality import TERMINAL_BELOW

P90 = 0.9


@dataclass(frozen=True)
class Projection:
    """Seconds from the newest sample; ``ttl_s`` None only when nothing declines."""

    ttl_s: float | None
    earliest_s: float | None
    clock: str  # "hayflick" | "economic" | "terminal"
    expected_shocks: float
    shocks_p90: int
    economic_slope_per_day: float | None
    lifespan_left_s: float


def least_squares_slope(points: Sequence[tuple[float, float]],
                        ) -> tuple[float, float] | None:
    """(slope per second, its standard error) of (t, value) points; None below 3 points
    or with no time span."""
    if len(points) < 3:
        return None
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    if var <= 0.0:
        return None
    slope = sum((t - mt) * (v - mv) for t, v in points) / var
    residual = sum((v - mv - slope * (t - mt)) ** 2 for t, v in points)
    se = math.sqrt(residual / (n - 2) / var)
    return (slope, se) if math.isfinite(slope) and math.isfinite(se) else None


def poisson_quantile(mean: float, q: float = P90) -> int:
    """The smallest k with P(N <= k) >= q for N ~ Poisson(mean)."""
    if mean <= 0.0:
        return 0
    k, term = 0, math.exp(-mean)
    total = term
    while total < q and k < 10_000:
        k += 1
        term *= mean / k
        total += term
    return k


def project_terminal(*, age_s: float, lifespan_s: float, economic: float, epistemic: float,
                     shock_factor: float, hazard_per_day: float, hazard_shock: float,
                     economic_history: Sequence[tuple[float, float]] = (),
                     terminal_below: float = TERMINAL_BELOW) -> Projection:
    """The projection from the newest sample's components (see the module docstring)."""
    left = max(0.0, lifespan_s - age_s)
    fit = least_squares_slope(economic_history)
    slope = fit[0] if fit else None
    falling = fit is not None and fit[0] + 2.0 * fit[1] < 0.0
    hayflick_now = 1.0 - age_s / lifespan_s if lifespan_s > 0 else 0.0

    def composite(t: float, shocks: int) -> float:
        e = economic + (slope or 0.0) * t if falling else economic
        s = max(0.0, hayflick_now - t / lifespan_s) * shock_factor * (1.0 - hazard_shock) ** shocks
        return max(0.0, e) * epistemic * s

    if composite(0.0, 0) < terminal_below:
        return Projection(0.0, 0.0, "terminal", 0.0, 0, _per_day(slope), left)
    ttl = _crossing(lambda t: composite(t, 0), terminal_below, left)
    mean = hazard_per_day * ttl / 86_400.0
    k90 = poisson_quantile(mean)
    earliest = _crossing(lambda t: composite(t, k90), terminal_below, left)
    hayflick_only = _crossing(lambda t: max(0.0, hayflick_now - t / lifespan_s) * shock_factor
                              * economic * epistemic, terminal_below, left)
    clock = "economic" if falling and ttl < hayflick_only - 1.0 else "hayflick"
    return Projection(ttl, min(earliest, ttl), clock, mean, k90, _per_day(slope), left)


def _per_day(slope: float | None) -> float | None:
    return None if slope is None else slope * 86_400.0


def _crossing(f: Callable[[float], float], bound: float, hi: float) -> float:
    """The first t in [0, hi] with f(t) < bound, f non-increasing (bisection)."""
    if f(0.0) < bound:
        return 0.0
    if f(hi) >= bound:
        return hi
    lo = 0.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        if f(mid) < bound:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1.0:
            break
    return hi

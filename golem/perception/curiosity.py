"""Curiosity score and the precision-modulated escalation threshold (seed 002).

Curiosity is the seed's free-energy reading of triage: "surprise (Bayesian) +
prediction error (precision-weighted)" (seed l.1690). We add the two, each in
its natural unit, and squash the sum into [0, 1):

    x = (z / Z_SCALE)^2 + surprise / SURPRISE_SCALE
    curiosity = 1 - exp(-x)

``z = error * sqrt(precision)`` is the precision-weighted error in sigmas, so a
3-sigma error alone (or 1 nat of surprise alone) gives 1 - 1/e = 0.63. The
squash is monotone in both inputs and 0 only when both are 0.
"""

from __future__ import annotations

import math

Z_SCALE = 3.0
SURPRISE_SCALE = 1.0

# seed l.1468-1470: a high-precision channel's threshold drops to 60% of base.
PRECISION_THRESHOLD_DROP = 0.4
MIN_BASE_THRESHOLD = 0.05
MAX_BASE_THRESHOLD = 0.95


def curiosity_score(
    abs_z: float,
    surprise: float,
    *,
    z_scale: float = Z_SCALE,
    surprise_scale: float = SURPRISE_SCALE,
) -> float:
    """Curiosity in [0, 1] from a precision-weighted error and a Bayesian surprise."""
    if math.isnan(abs_z) or math.isnan(surprise):
        raise ValueError("curiosity inputs must not be NaN")
    r = abs(abs_z) / z_scale
    x = r * r + max(0.0, surprise) / surprise_scale  # float * overflows to inf, no error
    return 1.0 - math.exp(-x)


def precision_modulated_threshold(
    base_threshold: float, precision: float, max_precision: float
) -> float:
    """Escalation threshold: higher channel precision gives a LOWER threshold.

    ``base * (1 - 0.4 * min(precision / max_precision, 1))`` (seed l.1462-1471):
    a well-modelled channel that deviates is the most interesting signal. The
    base is clamped to [0.05, 0.95], so the result lies in [0.03, 0.95].
    """
    base = min(MAX_BASE_THRESHOLD, max(MIN_BASE_THRESHOLD, base_threshold))
    if not precision > 0.0 or not max_precision > 0.0:
        normalized = 0.0
    else:
        normalized = min(precision / max_precision, 1.0)
    return base * (1.0 - PRECISION_THRESHOLD_DROP * normalized)

"""A predictive distribution from the knowledge in the workspace (pure).

Evidence is what consolidation learned about situations like the current one: for a
conditional outcome, "after this kind of situation the next-horizon return had mean m,
standard deviation s and was positive in a share p of n cases", held with confidence c.

The combination is a weighted pooling with a prior:

- the prior is "no change": mean 0, a positive share of 0.5, the standard deviation
  ``prior_stddev``, worth ``PRIOR_WEIGHT`` observations;
- an evidence item weighs ``c * n`` (confidence times its count), so more evidence never
  lowers a fact's weight, and a fact held with no confidence weighs nothing;
- the mean and the positive share are the weight-averaged ones (prior included); the
  variance pools each item's own variance and its mean's distance from the pooled mean,
  so disagreeing evidence widens the distribution;
- each item's contribution to the mean is ``w * m / W`` (W: the total weight, prior
  included); contributions sum to the mean, since the prior's mean is 0.

Two facts of equal weight and opposite means cancel; with no usable evidence the
forecast is the prior. Items with a non-finite number, a count below 1, a standard
deviation below 0, a share or confidence outside [0, 1] are skipped and counted, never
used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

PRIOR_WEIGHT = 5.0  # the prior counts as this many observations
DEFAULT_PRIOR_STDDEV = 0.01


@dataclass(frozen=True)
class Evidence:
    """One conditional outcome bearing on the situation."""

    key: str  # the knowledge entry's identity, for attribution
    n: float  # observations behind it
    mean: float  # mean next-horizon return (a fraction: 0.01 is +1%)
    stddev: float
    p_up: float  # share of those returns above 0
    confidence: float  # the entry's confidence, 0..1


@dataclass(frozen=True)
class Forecast:
    mean: float
    stddev: float
    p_up: float
    weight: float  # total evidence weight, prior excluded (0: the prior alone)
    contributions: tuple[tuple[str, float], ...]  # (key, share of the mean), largest first
    skipped: int = 0  # items refused as malformed

    @property
    def from_prior(self) -> bool:
        return self.weight == 0.0


def usable(item: Evidence) -> bool:
    """Whether an item may be used (see the module docstring)."""
    numbers = (item.n, item.mean, item.stddev, item.p_up, item.confidence)
    return (all(isinstance(x, int | float) and math.isfinite(x) for x in numbers)
            and item.n >= 1 and item.stddev >= 0 and 0 <= item.p_up <= 1
            and 0 <= item.confidence <= 1)


def combine(evidence: Sequence[Evidence],
            prior_stddev: float = DEFAULT_PRIOR_STDDEV) -> Forecast:
    """Pool the evidence with the prior (see the module docstring)."""
    if not (math.isfinite(prior_stddev) and prior_stddev > 0):
        raise ValueError(f"prior_stddev must be a positive number, got {prior_stddev!r}")
    items = [e for e in evidence if usable(e)]
    skipped = len(evidence) - len(items)
    weights = [e.confidence * e.n for e in items]
    evidence_weight = sum(weights)
    total = PRIOR_WEIGHT + evidence_weight
    mean = sum(w * e.mean for w, e in zip(weights, items, strict=True)) / total
    p_up = (PRIOR_WEIGHT * 0.5
            + sum(w * e.p_up for w, e in zip(weights, items, strict=True))) / total
    variance = (PRIOR_WEIGHT * (prior_stddev ** 2 + mean ** 2)
                + sum(w * (e.stddev ** 2 + (e.mean - mean) ** 2)
                      for w, e in zip(weights, items, strict=True))) / total
    shares: dict[str, float] = {}
    for w, e in zip(weights, items, strict=True):
        if w > 0:
            shares[e.key] = shares.get(e.key, 0.0) + w * e.mean / total
    ranked = tuple(sorted(shares.items(), key=lambda kv: (-abs(kv[1]), kv[0])))
    return Forecast(mean=mean, stddev=math.sqrt(variance), p_up=p_up,
                    weight=evidence_weight, contributions=ranked, skipped=skipped)


def brier(p_up: float, went_up: bool) -> float:
    """The Brier score of one forecast of "up" (0 best, 1 worst)."""
    return (p_up - (1.0 if went_up else 0.0)) ** 2

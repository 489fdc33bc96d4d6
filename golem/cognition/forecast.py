"""A predictive distribution from the knowledge in the workspace (pure).

Evidence is what consolidation learned about situations like the current one: for a
conditional outcome, "after this kind of situation the next-horizon return had mean m,
standard deviation s and was positive in a share p of n cases", held with confidence c.

The combination is a weighted pooling with a prior:

- the prior is "no change": mean 0, a positive share of 0.5, the standard deviation
  ``prior_stddev``, worth ``PRIOR_WEIGHT`` observations. It is no change *on average*,
  not a confident "flat": its three-way outlook is that of a normal distribution with
  mean 0 and ``prior_stddev`` (``normal_outlook``), so when the market's usual move over
  the horizon is wide, "flat" is the least likely of the three. The caller sets
  ``prior_stddev`` from what the tape shows (``horizon_stddev``);
- an evidence item weighs ``c * n`` (confidence times its count), so more evidence never
  lowers a fact's weight, and a fact held with no confidence weighs nothing;
- the mean and the positive share are the weight-averaged ones (prior included); the
  variance pools each item's own variance and its mean's distance from the pooled mean,
  so disagreeing evidence widens the distribution;
- each item's contribution to the mean is ``w * m / W`` (W: the total weight, prior
  included); contributions sum to the mean, since the prior's mean is 0;
- the three-way outlook (down, flat, up) takes its spread from the tape and its lean
  from the evidence: a normal distribution with stddev ``prior_stddev`` centred where
  the pooled share of "up" puts it (``prior_stddev * inverse_normal(p_up)``). The share
  of "up" is the robust part of a conditional outcome (means of fat-tailed returns are
  noisy), and a fact learned over many volatility levels says little about how wide the
  next move is, which the current tape says better. With no evidence, or evidence
  that cancels, the outlook is the prior's.

Two facts of equal weight and opposite means cancel; with no usable evidence the
forecast is the prior. Items with a non-finite number, a count below 1, a standard
deviation below 0, a share or confidence outside [0, 1] are skipped and counted, never
used.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from golem.cognition.predictions import FLAT_BAND, Outlook, observed_direction
from golem.perception.market import PricePoint

PRIOR_WEIGHT = 5.0  # the prior counts as this many observations
DEFAULT_PRIOR_STDDEV = 0.01
DIRECTIONS = ("down", "flat", "up")  # the order of an Outlook
P_CLIP = 1e-3  # a pooled share of "up" is kept this far from 0 and 1 for its quantile
_UNIT = statistics.NormalDist()


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
    outlook: Outlook = (0.0, 1.0, 0.0)

    @property
    def from_prior(self) -> bool:
        return self.weight == 0.0


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def normal_outlook(mean: float, stddev: float, band: float = FLAT_BAND) -> Outlook:
    """(down, flat, up) for a return ~ N(mean, stddev): below -band, within it, above
    it (``golem.cognition.predictions.observed_direction``'s classes). A zero stddev
    puts everything on the mean's class."""
    if stddev <= 0:
        cls = observed_direction(mean, band)
        return (float(cls == "down"), float(cls == "flat"), float(cls == "up"))
    down = _phi((-band - mean) / stddev)
    up = 1.0 - _phi((band - mean) / stddev)
    return down, max(0.0, 1.0 - down - up), up


def horizon_stddev(prices: Sequence[PricePoint], horizon_s: float) -> float | None:
    """The tape's volatility scaled to the horizon: the root mean square of its log
    returns per second of the time they span, times sqrt(horizon_s); None with fewer
    than three answers or no time between them."""
    if len(prices) < 3 or min(p.price for p in prices) <= 0:
        return None
    span = prices[-1].time - prices[0].time
    if span <= 0:
        return None
    squares = sum(math.log(b.price / a.price) ** 2 for a, b in itertools.pairwise(prices))
    return math.sqrt(squares / span * horizon_s)


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
    lean = _UNIT.inv_cdf(min(1.0 - P_CLIP, max(P_CLIP, p_up)))
    outlook = normal_outlook(prior_stddev * lean, prior_stddev)
    return Forecast(mean=mean, stddev=math.sqrt(variance), p_up=p_up,
                    weight=evidence_weight, contributions=ranked, skipped=skipped,
                    outlook=outlook)


def brier(p_up: float, went_up: bool) -> float:
    """The Brier score of one forecast of "up" (0 best, 1 worst)."""
    return (p_up - (1.0 if went_up else 0.0)) ** 2


def brier3(outlook: Outlook, observed: str) -> float:
    """The Brier score of a three-way forecast against the observed class ("down",
    "flat" or "up"): the sum of squared differences, 0 best, 2 worst."""
    hit = DIRECTIONS.index(observed)
    return sum((p - (1.0 if i == hit else 0.0)) ** 2 for i, p in enumerate(outlook))

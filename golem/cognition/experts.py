"""How much the offline tier's forecast leans on its knowledge rather than its prior: as
much as the knowledge has lately proven to earn (pure).

The offline tier has two forecasters for every prediction: the knowledge (the learned
conditional outcomes pooled with the prior, ``golem.cognition.forecast.combine``) and
the prior alone (no change on average, the tape's spread). Knowledge goes stale, and it
can be overconfident: a conditional outcome learned in one stretch of the market can be
wrong for the next stretch that looks the same on the tape, and a golem that follows it
regardless can miss prediction after prediction until its epistemic clock kills it.
Picking whichever mixture scored best lately is no cure: on a few dozen noisy scores it
chases noise (benchmarks/README.md has the measurements).

So Theta journals both outlooks of every offline prediction, and the knowledge works in
the shadow until it has proven itself: once they are scored, for each weight w in
WEIGHTS the outlook w x knowledge + (1 - w) x prior is scored (three-way Brier,
``predictions.outlook_brier``) over the last ``window`` scored predictions, prediction
by prediction against the prior alone. A weight qualifies when its mean improvement over
the prior is more than Z standard errors of those paired differences; the qualifying
weight with the lowest mean Brier is used, and none qualifying (or fewer than
``min_scored`` scored predictions) means w = 0: the prior decides, and nothing learned
is traded on. The record is recent on purpose: knowledge that goes stale loses its
weight within a window, and knowledge that becomes right again earns it back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from golem.cognition.predictions import CLASSES, Outlook

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)  # the knowledge's share of the forecast
WINDOW = 60  # the scored predictions compared
MIN_SCORED = 20  # fewer: the prior alone
Z = 2.0  # standard errors a weight's improvement over the prior must clear


@dataclass(frozen=True)
class Scored:
    """One scored prediction: each forecaster's outlook and what the feed did."""

    knowledge: Outlook
    prior: Outlook
    observed: str  # "down", "flat" or "up"


@dataclass(frozen=True)
class Record:
    """The knowledge's weight, and the mean Brier score of each candidate weight over
    the ``scored`` predictions compared (empty when too few; weight 0 is the prior's)."""

    scored: int
    weight: float
    briers: tuple[tuple[float, float], ...] = ()

    def describe(self) -> str:
        by = dict(self.briers)
        if not self.briers:
            return f"only {self.scored} scored predictions to judge the learned outcomes by"
        return (f"over the last {self.scored} scored predictions the learned outcomes alone "
                f"scored a Brier of {by[1.0]:.3f}, the prior alone {by[0.0]:.3f}, a "
                f"{self.weight:.0%} share {by[self.weight]:.3f}")


def mix(knowledge: Outlook, prior: Outlook, weight: float) -> Outlook:
    """weight x knowledge + (1 - weight) x prior, class by class."""
    down, flat, up = (weight * k + (1.0 - weight) * p
                      for k, p in zip(knowledge, prior, strict=True))
    return down, flat, up


def record(scored: Sequence[Scored], window: int = WINDOW,
           min_scored: int = MIN_SCORED) -> Record:
    """The weight over the newest ``window`` of ``scored`` (oldest first); see the
    module docstring. ValueError for a window below 1."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    recent = list(scored)[-window:]
    if len(recent) < min_scored:
        return Record(len(recent), 0.0)
    knowledge = np.array([s.knowledge for s in recent], dtype=np.float64)
    prior_outlooks = np.array([s.prior for s in recent], dtype=np.float64)
    truth = np.array([[1.0 if c == s.observed else 0.0 for c in CLASSES] for s in recent])
    prior = _briers(prior_outlooks, truth)
    best, best_mean = 0.0, _mean(prior)
    briers = [(0.0, best_mean)]
    for w in WEIGHTS[1:]:
        # mix(), element by element, for every prediction at once
        mine = _briers(w * knowledge + (1.0 - w) * prior_outlooks, truth)
        mean = _mean(mine)
        briers.append((w, mean))
        gain = [a - b for a, b in zip(mine, prior, strict=True)]
        error = _stdev(gain) / math.sqrt(len(gain))
        if _mean(gain) + Z * error < 0 and mean < best_mean:
            best, best_mean = w, mean
    return Record(len(recent), best, tuple(briers))


def _briers(outlooks: np.ndarray, truth: np.ndarray) -> list[float]:
    """outlook_brier of each row against its one-hot truth (the same sums, in order)."""
    squared = (outlooks - truth) ** 2
    return (squared[:, 0] + squared[:, 1] + squared[:, 2]).tolist()  # type: ignore[no-any-return]


def _mean(values: Sequence[float]) -> float:
    """statistics.fmean: the correctly rounded sum over n."""
    return math.fsum(values) / len(values)


def _stdev(values: Sequence[float]) -> float:
    """The sample standard deviation, to within a rounding of statistics.stdev (which
    sums in exact fractions, ~1 ms for a window of 60)."""
    mean = _mean(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))

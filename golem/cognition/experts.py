"""How much the offline tier's forecast leans on its knowledge rather than its prior: the
mixture that scored best lately (pure).

The offline tier has two forecasters for every prediction: the knowledge (the learned
conditional outcomes pooled with the prior, ``golem.cognition.forecast.combine``) and
the prior alone (no change on average, the tape's spread). Knowledge goes stale, and it
can be overconfident: a conditional outcome learned in one stretch of the market can be
wrong for the next stretch that looks the same on the tape, and a golem that keeps
following it misses prediction after prediction until the epistemic clock kills it,
while the prior would have done no worse than chance. So Theta journals both outlooks
of every offline prediction and, once they are scored, this module picks the weight of
the knowledge in the forecast: for each weight w in WEIGHTS, the outlook w x knowledge
+ (1 - w) x prior is scored (three-way Brier, ``predictions.outlook_brier``) over the
last ``window`` scored predictions, and the best weight is used (ties to the larger
weight). With fewer than ``min_scored`` of them the knowledge is used alone (w = 1:
there is nothing to judge it by yet). The record is recent on purpose, so a golem whose
knowledge becomes right again leans on it again; the search is "follow the best
mixture lately", an online model selection over five candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from golem.cognition.predictions import outlook_brier

Outlook = tuple[float, float, float]  # probabilities of down, flat, up
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)  # the knowledge's share of the forecast
WINDOW = 60  # the scored predictions compared
MIN_SCORED = 20  # fewer: the knowledge alone


@dataclass(frozen=True)
class Scored:
    """One scored prediction: each forecaster's outlook and what the feed did."""

    knowledge: Outlook
    prior: Outlook
    observed: str  # "down", "flat" or "up"


@dataclass(frozen=True)
class Record:
    """The knowledge's weight, and the mean Brier score of each candidate weight over
    the ``scored`` predictions compared (empty when too few)."""

    scored: int
    weight: float
    briers: tuple[tuple[float, float], ...] = ()

    def describe(self) -> str:
        by = dict(self.briers)
        return (f"over the last {self.scored} scored predictions the learned outcomes alone "
                f"scored a Brier of {by.get(1.0, float('nan')):.3f}, the prior alone "
                f"{by.get(0.0, float('nan')):.3f}, a {self.weight:.0%} share "
                f"{by.get(self.weight, float('nan')):.3f}")


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
        return Record(len(recent), 1.0)
    briers = tuple((w, sum(outlook_brier(mix(s.knowledge, s.prior, w), s.observed)
                           for s in recent) / len(recent)) for w in WEIGHTS)
    best = min(briers, key=lambda wb: (round(wb[1], 12), -wb[0]))[0]
    return Record(len(recent), best, briers)

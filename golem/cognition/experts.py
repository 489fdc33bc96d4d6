"""Whether the offline tier follows its knowledge or its prior: the better recent record
wins (pure).

The offline tier has two forecasters for every prediction: the knowledge (the learned
conditional outcomes pooled with the prior, ``golem.cognition.forecast.combine``) and
the prior alone. Knowledge goes stale: a conditional outcome learned in one stretch of
the market can be wrong for the next stretch that looks the same on the tape, and a
golem that keeps following it misses prediction after prediction until the epistemic
clock kills it, while the prior would have done no worse than chance. So Theta keeps
both directions of every offline prediction (the journal's ``forecasters``) and, once
they are scored, compares the two records where the two disagreed (where they agree,
following either gives the same hit).

The rule is the deterministic weighted majority of two experts (Littlestone and
Warmuth, 1994) with equal weights over a window: follow the knowledge unless, over the
last ``window`` scored disagreements, the prior missed fewer times; with fewer than
``min_disagreements`` of them the knowledge is followed (there is nothing to judge it
by yet). Ties go to the knowledge. The record is recent on purpose, so a golem whose
knowledge becomes right again follows it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WINDOW = 20  # the scored disagreements compared
MIN_DISAGREEMENTS = 6  # fewer: follow the knowledge


@dataclass(frozen=True)
class Scored:
    """One scored prediction: what each forecaster said and what the feed did."""

    knowledge: str  # "down", "flat" or "up"
    prior: str
    observed: str


@dataclass(frozen=True)
class Record:
    """The two forecasters' misses over the compared disagreements."""

    disagreements: int
    knowledge_misses: int
    prior_misses: int

    @property
    def trust_knowledge(self) -> bool:
        return (self.disagreements < MIN_DISAGREEMENTS
                or self.knowledge_misses <= self.prior_misses)

    def describe(self) -> str:
        return (f"over the last {self.disagreements} scored predictions where they "
                f"disagreed, the learned outcomes missed {self.knowledge_misses} and the "
                f"prior {self.prior_misses}")


def record(scored: Sequence[Scored], window: int = WINDOW) -> Record:
    """The record over the newest ``window`` disagreements of ``scored`` (oldest first)."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    apart = [s for s in scored if s.knowledge != s.prior][-window:]
    return Record(len(apart), sum(s.knowledge != s.observed for s in apart),
                  sum(s.prior != s.observed for s in apart))

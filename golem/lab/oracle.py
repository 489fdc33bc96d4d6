"""The regime-aware oracle bound (pure): what a forecaster that reads the market's TRUE
regime from the simulator's ground truth would have said at each of a life's scored
predictions, and the no-change prior's score beside it.

Definition. Each scored prediction falls in a cell: the market's true regime at the
decision's golem time (the last regime switch at or before it, ``read_ground_truth``),
the trailing-move bucket the golem itself saw (``golem.perception.market.move_bucket``,
journalled with the decision), and, on a market whose planted regularity swaps
mid-life, which side of the swap the decision falls on. The oracle's outlook for a
prediction is the frequency of each outcome class (down, flat, up over the horizon,
flat within ``FLAT_BAND``: the scoring's own classes) among ALL the life's scored
predictions in its cell, with SMOOTHING pseudo-counts added to each class (a Dirichlet
prior: no class gets probability 0, and a cell seen once is not taken for certain).
It is scored like the golem's outlooks (``outlook_brier``).

This is a hindsight bound, fitted in-sample: the frequencies are counted over the
same outcomes they are scored on, including the prediction's own. Without smoothing,
a cell's frequencies are the constant outlook with the lowest mean Brier over the cell
(the Brier score's mean is minimised by the empirical frequencies), so the bound is the
best any forecaster can score whose outlook depends only on the cell; the smoothing
costs a little in sparse cells. Why it bounds the golem: the golem's knowledge is the
same kind of thing (outcome frequencies per regime and move bucket), but it must read
the regime from the tape (``tape_regime``, which lags and mislabels), learn the
frequencies online from outcomes already due (paying for every early and every stale
estimate), and notice the swap by itself; the oracle is given all three. The golem can
score below the bound only by using what the cells leave out (its outlooks also follow
the tape's recent spread), which the report then shows. The bound is optimistic:
predictions a minute apart share most of their horizon, so a cell's frequencies
partly record the path this very life took (docs/lab/README.md gives how much).

Why not the simulator's generative model (per-regime drift and volatility, the planted
pull): the exact predictive distribution needs state the ground truth does not record
(whether a planted move is under way and its sign, the regime path over the horizon,
the feed's answers as the EVM delivered them), and a model of the simulator the lab
would then have to verify as well. The cell frequencies need only what is recorded,
are defined for any market the simulator makes, and are scored on exactly the
outcomes the golem was scored on.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from golem.cognition.predictions import CLASSES, Outlook, outlook_brier

SMOOTHING = 1.0  # pseudo-counts added to each outcome class of a cell


@dataclass(frozen=True)
class Call:
    """One scored prediction as the oracle sees it."""

    regime: str  # the market's true regime at the decision (ground truth)
    bucket: str | None  # the trailing-move bucket the golem saw (None: no tape)
    swapped: bool  # after the planted regularity's swap
    observed: str  # what the feed did over the horizon: down, flat or up

    @property
    def cell(self) -> tuple[str, str | None, bool]:
        return self.regime, self.bucket, self.swapped


def true_regime(switches: Sequence[tuple[float, str]], at: float) -> str | None:
    """The market's regime at golem time ``at``: that of the last switch at or before it
    (the first record is the starting regime, so a time before it reads as that one);
    None without ground truth. ``switches``: (golem time, regime), oldest first."""
    if not switches:
        return None
    i = bisect.bisect_right([t for t, _ in switches], at) - 1
    return switches[max(0, i)][1]


def calls(situations: Sequence[tuple[float, str | None, str]],
          switches: Sequence[tuple[float, str]], swap_at: float | None) -> list[Call] | None:
    """The oracle's view of a life's scored predictions, given as (golem time of the
    decision, bucket seen, observed class): the true regime from ``switches`` and the
    side of the swap at golem time ``swap_at`` (None: the market has none). None
    without ground truth (a chain that is not simulated)."""
    if not switches:
        return None
    return [Call(str(true_regime(switches, at)), bucket,
                 swap_at is not None and at >= swap_at, observed)
            for at, bucket, observed in situations]


def oracle_outlooks(made: Sequence[Call], smoothing: float = SMOOTHING) -> list[Outlook]:
    """Each call's outlook: the smoothed frequencies of the outcome classes over every
    call in its cell (in-sample; module docstring)."""
    counts: dict[tuple[str, str | None, bool], Counter[str]] = {}
    for call in made:
        counts.setdefault(call.cell, Counter())[call.observed] += 1
    fitted: dict[tuple[str, str | None, bool], Outlook] = {}
    for cell, seen in counts.items():
        total = sum(seen.values()) + smoothing * len(CLASSES)
        down, flat, up = ((seen[c] + smoothing) / total for c in CLASSES)
        fitted[cell] = (down, flat, up)
    return [fitted[call.cell] for call in made]


def oracle_briers(made: Sequence[Call], smoothing: float = SMOOTHING) -> list[float]:
    """Each call's three-way Brier score under the oracle's outlook."""
    return [outlook_brier(o, c.observed)
            for o, c in zip(oracle_outlooks(made, smoothing), made, strict=True)]


def reference_briers(outlooks: Sequence[Outlook | None],
                     observed: Sequence[str]) -> list[float] | None:
    """The reference outlooks' (the no-change prior's) Brier scores, None unless every
    prediction has one: a mean over some of them would not be comparable with the
    golem's and the oracle's, which are over all."""
    if any(o is None for o in outlooks):
        return None
    return [outlook_brier(o, seen) for o, seen in zip(outlooks, observed, strict=True)
            if o is not None]

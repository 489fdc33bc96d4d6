"""Scoring a prediction once its horizon has passed (pure): Loop 1's decision quality.

A prediction says where a price goes (up, down or flat, by how much) with a
confidence. When its horizon passes, the price Gamma observed then is compared
with the one at prediction time. The direction is scored with the Brier rule
(a proper scoring rule: overconfident misses cost most), the magnitude by its
absolute error, and the seed's calibration delta (error / (confidence + 0.01))
is kept for the feedback loops. Quality = 1 - Brier, in [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

FLAT_BAND = 0.002  # moves smaller than 0.2% count as flat
TIE_BRIER = 1e-3  # Brier differences this small are ties (journalled outlooks are rounded)


@dataclass(frozen=True)
class PredictionScore:
    actual_move: float
    direction_hit: bool
    magnitude_error: float
    brier: float
    quality: float
    calibration_delta: float


def observed_direction(move: float, flat_band: float = FLAT_BAND) -> str:
    if abs(move) < flat_band:
        return "flat"
    return "up" if move > 0 else "down"


CLASSES = ("down", "flat", "up")  # the order of a three-way outlook
Outlook = tuple[float, float, float]  # probabilities of down, flat, up; they sum to 1


def stated_outlook(direction: str, confidence: float) -> Outlook:
    """The outlook a bare prediction states: its confidence on its direction, the rest
    split evenly over the other two classes (ValueError for an unknown direction)."""
    if direction not in CLASSES:
        raise ValueError(f"unknown direction {direction!r}")
    rest = (1.0 - confidence) / 2
    down, flat, up = (confidence if c == direction else rest for c in CLASSES)
    return down, flat, up


def outlook_brier(outlook: Outlook, observed: str) -> float:
    """The three-way Brier score of an outlook (down, flat, up) against the observed
    class: the sum of squared differences, 0 (certain and right) to 2 (certain and
    wrong). A proper scoring rule: only the true probabilities minimise its expectation,
    so no choice of class or confidence can game it."""
    return sum((p - (1.0 if c == observed else 0.0)) ** 2
               for p, c in zip(outlook, CLASSES, strict=True))


def beat_reference(outlook: Outlook, reference: Outlook,
                   observed: str) -> bool | None:
    """Whether a prediction's outlook scored a better (True) or worse (False) three-way
    Brier than the reference outlook on what the feed did; None when the two differ by
    at most TIE_BRIER: the prediction said what the reference said (up to the rounding
    of journalled outlooks), so it shows nothing about what the golem knows."""
    edge = outlook_brier(reference, observed) - outlook_brier(outlook, observed)
    return None if abs(edge) <= TIE_BRIER else edge > 0


def signed(direction: str, magnitude: float) -> float:
    return {"up": magnitude, "down": -magnitude}.get(direction, 0.0)


def score_prediction(direction: str, magnitude: float, confidence: float, baseline: float,
                     actual: float, *, flat_band: float = FLAT_BAND) -> PredictionScore:
    """Score a price prediction made at `baseline` against the price `actual` at its horizon."""
    if baseline <= 0 or actual <= 0:
        raise ValueError("prices must be positive")
    if not 0.0 <= confidence <= 1.0:
        raise ValueError("confidence must be in [0, 1]")
    move = actual / baseline - 1.0
    hit = observed_direction(move, flat_band) == direction
    error = abs(signed(direction, magnitude) - move)
    brier = (confidence - (1.0 if hit else 0.0)) ** 2
    return PredictionScore(move, hit, error, brier, 1.0 - brier, error / (confidence + 0.01))

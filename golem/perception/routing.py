"""EFE routing of triage events: escalate to Theta, update silently, or discard.

Seed 002 l.1483-1531 scores each routing action by expected free energy
``G = -(pragmatic + epistemic)`` (lower is better, l.1501):

- escalate: ``pragmatic = relevance``, ``epistemic = information_gain``;
- update silently: ``pragmatic = 0.3 relevance``, ``epistemic = 0.1 information_gain``;
- discard: both 0.

``information_gain = curiosity / (1 + precision / precision_unit)`` (l.1587-1595:
events from poorly modelled channels teach more; ``precision_unit = 1`` is the
seed's formula). Two additions, because with the seed's terms alone escalation
always wins (every value is >= 0 and discard is 0):

- each action carries a cost inside its pragmatic value (an escalation spends
  LLM budget and attention, a silent update a little work), so
  ``G = -(pragmatic + epistemic - cost)``;
- only events whose curiosity reaches the precision-modulated threshold are
  candidates for escalation ("a set of high-scoring triage events", l.1484);
  the others choose between a silent update and discard.

Ties go to the cheaper action. The decision keeps every score, so the "why" is
on record.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from golem.perception.beliefs import ChannelObservation
from golem.perception.curiosity import curiosity_score, precision_modulated_threshold

SILENT_PRAGMATIC_WEIGHT = 0.3  # seed l.1521
SILENT_EPISTEMIC_WEIGHT = 0.1  # seed l.1520


class RoutingAction(StrEnum):
    ESCALATE = "escalate"
    UPDATE_SILENTLY = "update_silently"
    DISCARD = "discard"


# Cheapest first: the order in which ties are broken.
_BY_COST = (RoutingAction.DISCARD, RoutingAction.UPDATE_SILENTLY, RoutingAction.ESCALATE)


@dataclass(frozen=True)
class RoutingConfig:
    base_threshold: float = 0.5
    max_precision: float = 100.0  # precision at which the threshold reaches 60% of base
    precision_unit: float = 1.0  # seed: uncertainty = 1 / (precision + 1)
    escalation_cost: float = 0.3  # about 0.6% of pure Gaussian noise escalates
    update_cost: float = 0.01


@dataclass(frozen=True)
class EfeScore:
    """One action's terms; ``efe`` is the quantity minimised (seed l.1488-1503)."""

    pragmatic: float
    epistemic: float
    cost: float

    @property
    def value(self) -> float:
        return self.pragmatic + self.epistemic - self.cost

    @property
    def efe(self) -> float:
        return -self.value


@dataclass(frozen=True)
class RoutingDecision:
    action: RoutingAction
    curiosity: float
    threshold: float
    information_gain: float
    relevance: float
    precision: float
    scores: Mapping[RoutingAction, EfeScore]
    reason: str


def information_gain(curiosity: float, precision: float, precision_unit: float = 1.0) -> float:
    """``curiosity * uncertainty`` with ``uncertainty = 1 / (1 + precision / unit)``."""
    return curiosity / (1.0 + max(0.0, precision) / precision_unit)


def _unit(x: float, name: str) -> float:
    if math.isnan(x):
        raise ValueError(f"{name} must not be NaN")
    return min(1.0, max(0.0, x))


def route(
    curiosity: float,
    precision: float,
    relevance: float,
    cfg: RoutingConfig | None = None,
) -> RoutingDecision:
    """Pick the action with the lowest EFE for one event.

    ``curiosity`` and ``relevance`` (to the golem's positions) are clamped to
    [0, 1]; ``precision`` is the channel's precision before the event.
    """
    cfg = cfg or RoutingConfig()
    curiosity = _unit(curiosity, "curiosity")
    relevance = _unit(relevance, "relevance")
    if math.isnan(precision):
        raise ValueError("precision must not be NaN")
    precision = max(0.0, precision)
    threshold = precision_modulated_threshold(cfg.base_threshold, precision, cfg.max_precision)
    gain = information_gain(curiosity, precision, cfg.precision_unit)
    scores = {
        RoutingAction.ESCALATE: EfeScore(relevance, gain, cfg.escalation_cost),
        RoutingAction.UPDATE_SILENTLY: EfeScore(
            SILENT_PRAGMATIC_WEIGHT * relevance, SILENT_EPISTEMIC_WEIGHT * gain, cfg.update_cost
        ),
        RoutingAction.DISCARD: EfeScore(0.0, 0.0, 0.0),
    }
    candidate = curiosity >= threshold
    best = RoutingAction.DISCARD
    for action in _BY_COST:
        if action is RoutingAction.ESCALATE and not candidate:
            continue
        if scores[action].efe < scores[best].efe:
            best = action
    gate = "reaches" if candidate else "is below"
    reason = (
        f"curiosity {curiosity:.3f} {gate} threshold {threshold:.3f}; "
        f"EFE escalate {scores[RoutingAction.ESCALATE].efe:.3f}, "
        f"update {scores[RoutingAction.UPDATE_SILENTLY].efe:.3f}, discard 0.000"
    )
    return RoutingDecision(
        action=best,
        curiosity=curiosity,
        threshold=threshold,
        information_gain=gain,
        relevance=relevance,
        precision=precision,
        scores=scores,
        reason=reason,
    )


def route_observation(
    obs: ChannelObservation, relevance: float, cfg: RoutingConfig | None = None
) -> RoutingDecision:
    """Curiosity from the observation's largest |z| and total surprise, then :func:`route`."""
    return route(curiosity_score(obs.max_abs_z, obs.surprise), obs.precision, relevance, cfg)

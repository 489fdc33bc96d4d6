"""EFE composite attention score (seed 002, "EFE Composite Attention Score").

    score = pragmatic + epistemic + affective + mortality_urgency

Each component lies in [0, 1] and they add with no tuned weights, so a score
lies in [0, 4]. The seed draws the components from a risk engine, an oracle
and ChainScope, which we do not have yet; we read them from what a recalled
memory or a live-state item carries (the seed's own formulas are kept where
their inputs exist):

- pragmatic: will attending to this improve the outcome? Relevance to the
  situation times how much the item matters (mean of importance and
  confidence), discounted by at most half for staleness, plus the risk
  engine's delta-CVaR when one is supplied; capped at 1 as in the seed.
- epistemic: how much would we learn? The curiosity score (precision-weighted
  error plus Bayesian surprise, perception/curiosity.py) plus 0.3 x the
  Hebbian interest (seed: ``pred_error * precision + surprise + 0.3 hebbian``),
  capped at 1.
- affective: ``|cos(PAD_now, PAD_item)|`` (see ``affective_bias``): both
  congruent and incongruent affect attract attention.
- mortality urgency: ``(1 - vitality) * survival_relevance``; near zero for a
  healthy golem, dominant for a dying one. Without an explicit relevance the
  category's default below is used.

Pure: no I/O, no clock. Age enters as ``recency`` in [0, 1], which the
Grimoire already computes as ``0.5 ** (age / half_life)``; live state is fresh.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from golem.governor.categories import Category

HEBBIAN_WEIGHT = 0.3  # seed: hebbian * 0.3 in the epistemic component
STALE_FLOOR = 0.5  # a fully stale item keeps half its pragmatic value

C = Category
# Ours, not the seed's: how much each category bears on survival, mirroring the
# seed's Declining/Terminal overrides (constraints and mortality up; dreams,
# contrarian evidence and affect down to zero).
SURVIVAL_RELEVANCE: Mapping[Category, float] = MappingProxyType({
    C.INVARIANTS: 1.0, C.MORTALITY: 1.0, C.DEFI_SNAPSHOT: 0.9, C.OWNER_CONTROL: 0.9,
    C.STRATEGY: 0.6, C.PLAYBOOK: 0.6, C.TOOL_STATE: 0.4, C.INSIGHTS: 0.4,
    C.CAUSAL_EDGES: 0.4, C.EPISODES: 0.3, C.AFFECT: 0.2, C.CONTRARIAN: 0.2,
    C.DREAM_HYPOTHESES: 0.1,
})

COMPONENTS = ("pragmatic", "epistemic", "affective", "mortality")


def _unit(value: float, name: str) -> float:
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"attention: {name} must be in [0, 1], got {value!r}")
    return value


@dataclass(frozen=True)
class AttentionInputs:
    """What one candidate brings to the score; every field is in [0, 1]."""

    category: Category
    relevance: float = 0.0  # similarity to the current situation
    importance: float = 0.5
    confidence: float = 1.0
    recency: float = 1.0  # 0.5 ** (age / half_life); 1 for live state
    curiosity: float = 0.0  # novelty: precision-weighted error + surprise, squashed
    interest: float = 0.0  # Hebbian interest of the item's addresses (ChainScope)
    affect: float = 0.0  # |cos(PAD now, PAD item)|, see affective_bias
    risk_reduction: float = 0.0  # delta-CVaR from a risk engine, when there is one
    survival_relevance: float | None = None  # None: the category's default

    def __post_init__(self) -> None:
        for name in ("relevance", "importance", "confidence", "recency", "curiosity",
                     "interest", "affect", "risk_reduction"):
            _unit(getattr(self, name), name)
        if self.survival_relevance is not None:
            _unit(self.survival_relevance, "survival_relevance")


@dataclass(frozen=True)
class AttentionScore:
    """The four components, kept apart so Loop 1 can learn which one dominated."""

    pragmatic: float
    epistemic: float
    affective: float
    mortality: float

    @property
    def total(self) -> float:
        return self.pragmatic + self.epistemic + self.affective + self.mortality

    @property
    def dominant(self) -> str:
        """The largest component's name (first in COMPONENTS order on ties)."""
        values = (self.pragmatic, self.epistemic, self.affective, self.mortality)
        return COMPONENTS[values.index(max(values))]


def pragmatic_value(item: AttentionInputs) -> float:
    worth = (item.importance + item.confidence) / 2.0
    freshness = STALE_FLOOR + (1.0 - STALE_FLOOR) * item.recency
    return min(1.0, item.relevance * worth * freshness + item.risk_reduction)


def epistemic_value(item: AttentionInputs) -> float:
    return min(1.0, item.curiosity + HEBBIAN_WEIGHT * item.interest)


def mortality_urgency(item: AttentionInputs, vitality: float) -> float:
    relevance = item.survival_relevance
    if relevance is None:
        relevance = SURVIVAL_RELEVANCE[item.category]
    return (1.0 - _unit(vitality, "vitality")) * relevance


def attention_score(item: AttentionInputs, vitality: float) -> AttentionScore:
    """Score one candidate given the golem's composite vitality in [0, 1]."""
    return AttentionScore(
        pragmatic=pragmatic_value(item),
        epistemic=epistemic_value(item),
        affective=item.affect,
        mortality=mortality_urgency(item, vitality),
    )


def affective_bias(
    current: tuple[float, float, float], item: tuple[float, float, float]
) -> float:
    """``|cos(PAD_now, PAD_item)|`` in [0, 1]; 0 when either vector carries no affect."""
    for v in (*current, *item):
        if not math.isfinite(v):
            raise ValueError(f"attention: PAD values must be finite, got {v!r}")
    na = math.sqrt(sum(x * x for x in current))
    nb = math.sqrt(sum(x * x for x in item))
    if na < 1e-12 or nb < 1e-12:
        return 0.0
    cos = sum(x * y for x, y in zip(current, item, strict=True)) / (na * nb)
    return min(1.0, abs(cos))

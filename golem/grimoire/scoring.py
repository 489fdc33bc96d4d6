"""Retrieval scoring: relevance first, the four factors, provenance tiers, importance, refusal.

Pure (seed 000 "Four-factor retrieval", "Knowledge weighting hierarchy"; seed 003
importance; seed 001 hard refusal): plain numbers in, plain numbers out. Times are
golem-time epoch seconds passed in by the caller; nothing here reads a clock.

Two separate quantities come out of provenance, and they are never multiplied
together twice:

- ``inherited_confidence`` is what an inherited entry's *confidence* is set to
  when it is imported (it feeds hard refusal and decay);
- ``provenance_weight`` is a *ranking* multiplier on the four-factor score
  (which uses importance, not confidence).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from golem.grimoire.errors import InvalidMemory
from golem.grimoire.records import Pad, Provenance, Source, finite_unit

if TYPE_CHECKING:
    from golem.config import GrimoireSection

# Confidence ceiling by source (seed 000 weighting hierarchy). Self-learned knowledge is
# "as produced": its tier is 1.0, so its own confidence and importance carry it.
PROVENANCE_CONFIDENCE: Mapping[Source, float] = MappingProxyType({
    Source.SELF: 1.0,
    Source.CLADE: 0.4,
    Source.SUCCESSOR: 0.4,
    Source.PREDECESSOR_ARCHIVE: 0.3,
    Source.QUERY: 0.25,
    Source.LETHE: 0.2,
    Source.MARKETPLACE: 0.2,
})
# Epigenetic erasure: x0.85 per generation crossed (seed 000).
GENERATIONAL_DECAY = 0.85
# Death-sourced knowledge is a costly signal: ranked 1.2x (seed 000).
BLOODSTAIN_BOOST = 1.2
MAX_PROVENANCE_WEIGHT = BLOODSTAIN_BOOST

REFUSAL_PHRASE = "The Archive contains no truth regarding this intent."


def _unit(value: float, name: str) -> float:
    try:
        return finite_unit(value, name)
    except ValueError as exc:
        raise InvalidMemory(str(exc)) from None


def _generation(generation: int) -> int:
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
        raise InvalidMemory(f"generation: must be an integer >= 0, got {generation!r}")
    return generation


def _finite(value: float, name: str) -> float:
    if value.__class__ is float and -math.inf < value < math.inf:  # the usual case, first
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidMemory(f"{name}: must be a finite number, got {value!r}")
    return float(value)


def provenance_weight(prov: Provenance) -> float:
    """Ranking multiplier: tier x 0.85^generation x (1.2 if bloodstain), in [0, 1.2].

    ``generation`` counts deaths crossed since the knowledge's origin and applies to
    every source, SELF included: an entry marked SELF with generation 2 came down our
    own lineage (e.g. re-imported from our archive) and is still erased at 0.85^2
    until this golem re-validates it (the curator then resets the generation to 0).
    Only the bloodstain boost can push the weight above 1: it is a multiplier on rank,
    never a confidence, so "1.2" never appears as a probability anywhere.
    """
    tier = PROVENANCE_CONFIDENCE[Source(prov.source)]
    weight = tier * GENERATIONAL_DECAY ** _generation(prov.generation)
    if prov.bloodstain:
        weight *= BLOODSTAIN_BOOST
    return min(max(weight, 0.0), MAX_PROVENANCE_WEIGHT)


def inherited_confidence(base_confidence: float, source: Source, generation: int) -> float:
    """Confidence an inherited entry starts with: min(base, tier) x 0.85^generation.

    Seed 000's worked example: an archive heuristic (tier 0.3) three generations on
    (generation 2) is seen at 0.3 x 0.85^2 = 0.2167. For SELF the tier is 1.0, so the
    produced confidence passes through, discounted only by generation.
    """
    base = _unit(base_confidence, "base_confidence")
    tier = PROVENANCE_CONFIDENCE[Source(source)]
    return min(base, tier) * GENERATIONAL_DECAY ** _generation(generation)


def last_touched(last_accessed: float | None, last_reinforced: float | None) -> float | None:
    """The later of access and reinforcement: what the temporal factor measures from."""
    times = [t for t in (last_accessed, last_reinforced) if t is not None]
    return max(times) if times else None


def temporal_factor(
    last_touched: float | None, created_at: float, now: float, half_life_s: float
) -> float:
    """Recency in [0, 1]: 0.5^(age / half_life), age measured from the last touch.

    The reference is the later of ``last_touched`` and ``created_at`` (creation when
    never touched). A reference in the future (clock skew, a restored simulation)
    counts as age 0, so the factor never exceeds 1.
    """
    half_life = _finite(half_life_s, "half_life_s")
    if half_life <= 0:
        raise InvalidMemory(f"half_life_s: must be > 0, got {half_life_s}")
    reference = _finite(created_at, "created_at")
    if last_touched is not None:
        reference = max(reference, _finite(last_touched, "last_touched"))
    age = max(_finite(now, "now") - reference, 0.0)
    return float(0.5 ** (age / half_life))


def emotional_congruence(entry_pad: Pad, current_pad: Pad) -> float:
    """Mood-congruent retrieval: PAD cosine mapped from [-1, 1] to [0, 1] as (cos+1)/2.

    A zero PAD vector carries no affect, so congruence is undefined; it gets the
    neutral 0.5, which neither helps nor hurts the entry against the others.
    """
    a = [_finite(v, "pad") for v in entry_pad.as_tuple()]
    b = [_finite(v, "pad") for v in current_pad.as_tuple()]
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    if na < 1e-12 or nb < 1e-12:
        return 0.5
    cos = sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)
    return min(max((cos + 1.0) / 2.0, 0.0), 1.0)


def semantic_factor(cosine: float) -> float:
    """Query similarity in [0, 1]: negative cosines are as irrelevant as orthogonal ones."""
    return min(max(_finite(cosine, "cosine"), 0.0), 1.0)


@dataclass(frozen=True)
class FourFactorWeights:
    """Weights of the four retrieval factors (seed 000); non-negative, summing to 1."""

    semantic: float = 0.40
    temporal: float = 0.20
    importance: float = 0.25
    emotional: float = 0.15

    def __post_init__(self) -> None:
        for name in ("semantic", "temporal", "importance", "emotional"):
            _unit(getattr(self, name), f"weights.{name}")
        total = self.semantic + self.temporal + self.importance + self.emotional
        if abs(total - 1.0) > 1e-6:
            raise InvalidMemory(f"weights: the four weights must sum to 1, got {total:.6g}")

    @classmethod
    def from_config(cls, section: GrimoireSection) -> FourFactorWeights:
        return cls(section.weight_semantic, section.weight_temporal,
                   section.weight_importance, section.weight_emotional)


# How far, at most, the non-relevance factors move a candidate: a quarter of the weight
# left after semantic (0.15 with the seed's default weights).
RERANK_SHARE = 0.25
# A cause reached through one causal link from a hit ranks with this share of that hit's
# relevance (and its own recency, importance and trust).
HOP_DISCOUNT = 0.8
# The share of its relevance a candidate keeps when the query names a time window
# ("yesterday", "in May 2023") and the candidate lies outside it.
OUT_OF_WINDOW = 0.5


def relevance_of(dense: float, lexical: float) -> float:
    """One relevance in [0, 1] from calibrated dense and lexical evidence (each in [0, 1],
    0 when the candidate was not in that list): their mean, so a candidate that both the
    vector and the full-text search rank near their best beats one that only one does."""
    return (_unit(dense, "dense evidence") + _unit(lexical, "lexical evidence")) / 2.0


def rerank_span(weights: FourFactorWeights) -> float:
    """The largest fraction of its relevance a candidate can lose to the other factors."""
    return RERANK_SHARE * (1.0 - weights.semantic)


def relevance_first(
    relevance: float,
    temporal: float,
    importance: float,
    emotional: float,
    weights: FourFactorWeights = FourFactorWeights(),
) -> float:
    """relevance x (1 - span + span x modifier), in [0, 1].

    ``modifier`` is the weighted mean of recency, importance and emotional congruence
    (their seed weights, renormalised; 0.5 when those weights are all 0) and ``span`` is
    rerank_span(weights). Relevance comes first: the other factors only reorder
    candidates whose relevance is within ``span`` of each other, and a candidate less
    relevant than another by more than that factor is never ranked above it. With
    semantic weight 1 the order is relevance alone.
    """
    rel = _unit(relevance, "relevance")
    rest = weights.temporal + weights.importance + weights.emotional
    modifier = 0.5 if rest <= 0 else (
        _unit(temporal, "temporal") * weights.temporal
        + _unit(importance, "importance") * weights.importance
        + _unit(emotional, "emotional") * weights.emotional) / rest
    span = rerank_span(weights)
    return min(max(rel * (1.0 - span + span * modifier), 0.0), 1.0)


@dataclass(frozen=True)
class ScoreBreakdown:
    """Why a candidate was recalled: each factor, the weighted base, provenance and final."""

    semantic: float  # the dense evidence: the query cosine, clipped to [0, 1]
    temporal: float
    importance: float
    emotional: float
    base: float  # relevance_first(relevance, temporal, importance, emotional)
    provenance_weight: float
    final: float
    confidence: float = 1.0  # the record's own confidence (1.0 for observed episodes)
    dense_rank: int | None = None  # 1-based rank in the vector list, if it was there
    lexical_rank: int | None = None  # 1-based rank in the full-text list, if it was there
    fused_rrf: float | None = None
    relevance: float = 0.0  # relevance_of(dense, lexical) x time_window: the order's basis
    lexical: float = 0.0  # the calibrated full-text evidence (0: not in that list)
    time_window: float = 1.0  # 1, or OUT_OF_WINDOW when the query names a window it misses
    hop_from: str | None = None  # reached through a causal link from this hit (why queries)
    # ranked first by the query's order or threshold ("latest", "more than 2%"): its words,
    # and the quantity read from the record for it (None for an order by time)
    ranked_by: str | None = None
    quantity: float | None = None

    def as_dict(self) -> dict[str, float | int | str | None]:
        return asdict(self)


def score_candidate(
    *,
    cosine: float,
    dense: float,
    lexical: float,
    last_touched: float | None,
    created_at: float,
    now: float,
    importance: float,
    entry_pad: Pad,
    current_pad: Pad,
    provenance: Provenance,
    temporal_half_life_s: float,
    weights: FourFactorWeights = FourFactorWeights(),
    dense_rank: int | None = None,
    lexical_rank: int | None = None,
    fused_rrf: float | None = None,
    confidence: float = 1.0,
    in_window: bool | None = None,
) -> ScoreBreakdown:
    """Score one candidate: final = relevance_first(...) x provenance_weight x confidence.

    ``dense`` and ``lexical`` are the candidate's calibrated evidence from the vector and
    full-text lists (the caller calibrates per list and query); ``cosine`` is the raw
    query similarity, kept in the breakdown. ``temporal_half_life_s`` is the recency
    half-life of the candidate's kind (per decay class for entries). Confidence scales
    the rank so a decayed or doubtful claim yields to a trusted one of equal relevance;
    episodes (observations, not claims) pass 1.0. ``in_window``: whether the candidate
    falls in the time window the query names (None: it names none); one outside keeps
    OUT_OF_WINDOW of its relevance, since the query's own words said when.
    """
    semantic = semantic_factor(cosine)
    window = OUT_OF_WINDOW if in_window is False else 1.0
    relevance = relevance_of(dense, lexical) * window
    temporal = temporal_factor(last_touched, created_at, now, temporal_half_life_s)
    imp = _unit(importance, "importance")
    emotional = emotional_congruence(entry_pad, current_pad)
    base = relevance_first(relevance, temporal, imp, emotional, weights)
    weight = provenance_weight(provenance)
    conf = _unit(confidence, "confidence")
    return ScoreBreakdown(
        semantic=semantic, temporal=temporal, importance=imp, emotional=emotional,
        base=base, provenance_weight=weight, final=base * weight * conf, confidence=conf,
        dense_rank=dense_rank, lexical_rank=lexical_rank, fused_rrf=fused_rrf,
        relevance=relevance, lexical=_unit(lexical, "lexical evidence"), time_window=window,
    )


def memory_importance(age_days: float, access_count: int, explicit: float) -> float:
    """Seed 003 composite: 0.3 e^(-age/30) + 0.3 min(access/10, 1) + 0.4 explicit, in [0, 1].

    Recency fades over 30 days, access saturates at 10 recalls, and the author's own
    importance keeps the largest share.
    """
    age = _finite(age_days, "age_days")
    if age < 0:
        raise InvalidMemory(f"age_days: must be >= 0, got {age_days}")
    if isinstance(access_count, bool) or not isinstance(access_count, int) or access_count < 0:
        raise InvalidMemory(f"access_count: must be an integer >= 0, got {access_count!r}")
    value = (0.3 * math.exp(-age / 30.0) + 0.3 * min(access_count / 10.0, 1.0)
             + 0.4 * _unit(explicit, "explicit importance"))
    return min(value, 1.0)


def refusal(best_confidence: float | None, threshold: float) -> str | None:
    """Hard refusal (seed 001): a reason when nothing may be answered, else None.

    Refuses when there is no candidate or the best one is below ``threshold``. A NaN
    best counts as below (refusing is the safe side). The facade turns the reason into
    the explicit refusal result that callers must handle.
    """
    limit = _unit(threshold, "refusal threshold")
    if best_confidence is None:
        return f"no candidate matched. {REFUSAL_PHRASE}"
    if isinstance(best_confidence, bool) or not isinstance(best_confidence, int | float):
        raise InvalidMemory(f"best_confidence: must be a number, got {best_confidence!r}")
    if math.isnan(best_confidence) or best_confidence < limit:
        return (f"best candidate confidence {best_confidence:.3f} is below the refusal "
                f"threshold {limit:.3f}. {REFUSAL_PHRASE}")
    return None

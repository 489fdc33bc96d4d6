"""Four-factor scoring, provenance tiers, importance and hard refusal (pure math)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.config import GrimoireSection
from golem.grimoire.errors import InvalidMemory
from golem.grimoire.records import Pad, Provenance, Source
from golem.grimoire.scoring import (
    BLOODSTAIN_BOOST,
    GENERATIONAL_DECAY,
    PROVENANCE_CONFIDENCE,
    FourFactorWeights,
    ScoreBreakdown,
    emotional_congruence,
    inherited_confidence,
    last_touched,
    memory_importance,
    provenance_weight,
    refusal,
    relevance_first,
    relevance_of,
    rerank_span,
    score_candidate,
    semantic_factor,
    temporal_factor,
)

DAY = 86400.0
unit = st.floats(min_value=0.0, max_value=1.0)
pad_value = st.floats(min_value=-1.0, max_value=1.0)
pads = st.builds(Pad, pad_value, pad_value, pad_value)
generations = st.integers(min_value=0, max_value=60)


# --- provenance -----------------------------------------------------------------------


def test_tiers_are_the_seed_hierarchy() -> None:
    assert dict(PROVENANCE_CONFIDENCE) == {
        Source.SELF: 1.0, Source.CLADE: 0.4, Source.SUCCESSOR: 0.4,
        Source.PREDECESSOR_ARCHIVE: 0.3, Source.QUERY: 0.25,
        Source.LETHE: 0.2, Source.MARKETPLACE: 0.2,
    }
    assert set(PROVENANCE_CONFIDENCE) == set(Source)
    assert GENERATIONAL_DECAY == 0.85
    assert BLOODSTAIN_BOOST == 1.2


def test_provenance_weight_hand_values() -> None:
    assert provenance_weight(Provenance()) == 1.0
    assert provenance_weight(Provenance(source=Source.CLADE)) == pytest.approx(0.4)
    assert provenance_weight(Provenance(source=Source.MARKETPLACE)) == pytest.approx(0.2)
    # a successor's bloodstain one generation on: 0.4 * 0.85 * 1.2 = 0.408
    assert provenance_weight(
        Provenance(source=Source.SUCCESSOR, generation=1, bloodstain=True)
    ) == pytest.approx(0.408)
    # self-learned bloodstain is the one case above 1: a rank multiplier, 1.2
    assert provenance_weight(Provenance(bloodstain=True)) == pytest.approx(1.2)


def test_self_with_generation_is_still_erased() -> None:
    # generation counts from the origin for every source, SELF included
    assert provenance_weight(Provenance(source=Source.SELF, generation=2)) == pytest.approx(
        0.7225)


def test_negative_generation_is_refused() -> None:
    with pytest.raises(InvalidMemory, match="generation"):
        provenance_weight(Provenance(generation=-1))
    with pytest.raises(InvalidMemory, match="generation"):
        inherited_confidence(0.5, Source.CLADE, -2)


@given(st.sampled_from(list(Source)), generations, st.booleans())
def test_provenance_weight_bounded_and_erased_by_generation(
    source: Source, generation: int, bloodstain: bool
) -> None:
    here = provenance_weight(Provenance(source=source, generation=generation,
                                        bloodstain=bloodstain))
    older = provenance_weight(Provenance(source=source, generation=generation + 1,
                                         bloodstain=bloodstain))
    assert 0.0 <= older <= here <= 1.2
    if not bloodstain:
        assert here <= 1.0
        assert here <= PROVENANCE_CONFIDENCE[source]


def test_inherited_confidence_seed_worked_example() -> None:
    # Seed 000: a great-grandparent's heuristic via the archive: 0.3 * 0.85^2 = 0.22
    value = inherited_confidence(0.9, Source.PREDECESSOR_ARCHIVE, 2)
    assert value == pytest.approx(0.21675)
    assert round(value, 2) == 0.22
    # Seed 000: at generation 5 an inherited heuristic keeps 44% of its confidence
    assert inherited_confidence(1.0, Source.SELF, 5) == pytest.approx(0.4437, abs=1e-4)
    # a low base stays below its tier
    assert inherited_confidence(0.1, Source.CLADE, 0) == pytest.approx(0.1)


@given(unit, st.sampled_from(list(Source)), generations)
def test_inherited_confidence_never_exceeds_base_or_tier(
    base: float, source: Source, generation: int
) -> None:
    value = inherited_confidence(base, source, generation)
    assert 0.0 <= value <= min(base, PROVENANCE_CONFIDENCE[source])


# --- temporal -------------------------------------------------------------------------


def test_last_touched_takes_the_later_time() -> None:
    assert last_touched(None, None) is None
    assert last_touched(5.0, None) == 5.0
    assert last_touched(None, 7.0) == 7.0
    assert last_touched(9.0, 7.0) == 9.0


def test_temporal_factor_half_lives() -> None:
    now = 100 * DAY
    assert temporal_factor(None, now, now, 7 * DAY) == 1.0
    assert temporal_factor(None, now - 7 * DAY, now, 7 * DAY) == pytest.approx(0.5)
    assert temporal_factor(None, now - 14 * DAY, now, 7 * DAY) == pytest.approx(0.25)
    # a touch resets the clock; creation is only the fallback
    assert temporal_factor(now - 7 * DAY, 0.0, now, 7 * DAY) == pytest.approx(0.5)
    # a reference in the future (clock skew) counts as age 0
    assert temporal_factor(now + DAY, 0.0, now, 7 * DAY) == 1.0


def test_temporal_factor_rejects_bad_inputs() -> None:
    with pytest.raises(InvalidMemory, match="half_life_s"):
        temporal_factor(None, 0.0, 1.0, 0.0)
    with pytest.raises(InvalidMemory, match="now"):
        temporal_factor(None, 0.0, math.nan, 1.0)


@given(st.floats(0, 1e9), st.floats(0, 1e9), st.floats(0, 1e9), st.floats(1.0, 1e8))
def test_temporal_factor_in_unit_and_falls_with_time(
    created: float, now: float, later: float, half_life: float
) -> None:
    a = temporal_factor(None, created, now, half_life)
    b = temporal_factor(None, created, now + later, half_life)
    assert 0.0 <= b <= a <= 1.0


# --- emotional and semantic -----------------------------------------------------------


def test_emotional_congruence_hand_values() -> None:
    calm = Pad(0.5, -0.2, 0.1)
    assert emotional_congruence(calm, calm) == pytest.approx(1.0)
    assert emotional_congruence(calm, Pad(-0.5, 0.2, -0.1)) == pytest.approx(0.0)
    assert emotional_congruence(Pad(1, 0, 0), Pad(0, 1, 0)) == pytest.approx(0.5)
    # no affect on either side: neutral
    assert emotional_congruence(Pad(), calm) == 0.5
    assert emotional_congruence(calm, Pad()) == 0.5


@given(pads, pads, st.floats(0.01, 1.0))
def test_emotional_congruence_bounded_symmetric_scale_free(a: Pad, b: Pad, s: float) -> None:
    value = emotional_congruence(a, b)
    assert 0.0 <= value <= 1.0
    assert value == pytest.approx(emotional_congruence(b, a))
    scaled = Pad(a.pleasure * s, a.arousal * s, a.dominance * s)
    if math.hypot(*scaled.as_tuple()) > 1e-9:
        assert emotional_congruence(scaled, b) == pytest.approx(value, abs=1e-9)


def test_semantic_factor_clamps() -> None:
    assert semantic_factor(-0.3) == 0.0
    assert semantic_factor(0.42) == 0.42
    assert semantic_factor(1.0000001) == 1.0
    with pytest.raises(InvalidMemory, match="cosine"):
        semantic_factor(math.nan)


# --- four factors ---------------------------------------------------------------------


def test_weights_default_to_the_seed_and_must_sum_to_one() -> None:
    w = FourFactorWeights()
    assert (w.semantic, w.temporal, w.importance, w.emotional) == (0.40, 0.20, 0.25, 0.15)
    assert FourFactorWeights.from_config(GrimoireSection()) == w
    with pytest.raises(InvalidMemory, match="sum to 1"):
        FourFactorWeights(0.5, 0.5, 0.5, 0.0)
    with pytest.raises(ValueError, match=r"weights\.temporal"):
        FourFactorWeights(0.9, -0.2, 0.3, 0.0)


def test_relevance_first_hand_value() -> None:
    # modifier = (0.5*0.20 + 0.6*0.25 + 1.0*0.15) / 0.60 = 0.40 / 0.60; span = 0.25 * 0.60
    span = 0.15
    modifier = 0.40 / 0.60
    assert rerank_span(FourFactorWeights()) == pytest.approx(span)
    assert relevance_first(0.9, 0.5, 0.6, 1.0) == pytest.approx(0.9 * (1 - span + span * modifier))
    assert relevance_first(1, 1, 1, 1) == pytest.approx(1.0)
    assert relevance_first(0, 1, 1, 1) == 0.0
    # semantic weight 1: the order is relevance alone
    only = FourFactorWeights(1.0, 0.0, 0.0, 0.0)
    assert relevance_first(0.7, 0.0, 0.0, 0.0, only) == pytest.approx(0.7)
    assert relevance_first(0.7, 1.0, 1.0, 1.0, only) == pytest.approx(0.7)
    with pytest.raises(ValueError, match="importance"):
        relevance_first(0.5, 0.5, 1.5, 0.5)


def test_relevance_is_the_mean_of_both_lists_evidence() -> None:
    assert relevance_of(1.0, 1.0) == 1.0
    assert relevance_of(1.0, 0.0) == 0.5  # only one list found it
    assert relevance_of(0.6, 0.8) == pytest.approx(0.7)
    with pytest.raises(InvalidMemory, match="lexical"):
        relevance_of(0.5, 1.2)


@given(unit, unit, unit, unit, st.integers(0, 3), unit)
def test_relevance_first_bounded_and_monotone(
    r: float, t: float, i: float, e: float, which: int, bump: float
) -> None:
    factors = [r, t, i, e]
    value = relevance_first(*factors)
    assert 0.0 <= value <= 1.0
    factors[which] = max(factors[which], bump)
    assert relevance_first(*factors) >= value - 1e-12


@given(unit, unit, unit, unit, unit, unit, unit, unit, st.sampled_from([
    FourFactorWeights(), FourFactorWeights(0.0, 0.5, 0.25, 0.25),
    FourFactorWeights(0.25, 0.25, 0.25, 0.25)]))
def test_the_other_factors_never_lift_a_clearly_less_relevant_candidate(
    r1: float, r2: float, t1: float, t2: float, i1: float, i2: float, e1: float, e2: float,
    weights: FourFactorWeights,
) -> None:
    """Whatever recency, importance and affect say, a candidate whose relevance is below
    (1 - span) of another's ranks below it."""
    span = rerank_span(weights)
    if r2 >= r1 * (1 - span) - 1e-9:
        return
    assert relevance_first(r1, t1, i1, e1, weights) >= relevance_first(r2, t2, i2, e2, weights)


def test_score_candidate_composes_every_factor() -> None:
    now = 50 * DAY
    breakdown = score_candidate(
        cosine=0.8, dense=1.0, lexical=0.6, last_touched=now - 7 * DAY, created_at=0.0,
        now=now, importance=0.6, entry_pad=Pad(1, 0, 0), current_pad=Pad(0, 1, 0),
        provenance=Provenance(source=Source.CLADE, generation=1),
        temporal_half_life_s=7 * DAY, dense_rank=2, lexical_rank=5, fused_rrf=0.016,
    )
    # relevance (1.0 + 0.6) / 2 = 0.8; modifier (0.5*0.20 + 0.6*0.25 + 0.5*0.15) / 0.60
    # = 0.325 / 0.60; base = 0.8 * (0.85 + 0.15 * 0.325 / 0.60) = 0.745
    assert breakdown.relevance == pytest.approx(0.8)
    assert breakdown.base == pytest.approx(0.745)
    assert breakdown.provenance_weight == pytest.approx(0.4 * 0.85)
    assert breakdown.final == pytest.approx(0.745 * 0.34)
    assert breakdown.as_dict() == {
        "semantic": 0.8, "temporal": pytest.approx(0.5), "importance": 0.6,
        "emotional": pytest.approx(0.5), "base": pytest.approx(0.745),
        "provenance_weight": pytest.approx(0.34), "final": pytest.approx(0.2533),
        "dense_rank": 2, "lexical_rank": 5, "fused_rrf": 0.016, "confidence": 1.0,
        "relevance": pytest.approx(0.8), "lexical": 0.6, "time_window": 1.0,
        "hop_from": None, "ranked_by": None, "quantity": None,
    }
    with pytest.raises(AttributeError):
        breakdown.final = 1.0  # type: ignore[misc]
    outside = score_candidate(
        cosine=0.8, dense=1.0, lexical=0.6, last_touched=now - 7 * DAY, created_at=0.0,
        now=now, importance=0.6, entry_pad=Pad(1, 0, 0), current_pad=Pad(0, 1, 0),
        provenance=Provenance(source=Source.CLADE, generation=1),
        temporal_half_life_s=7 * DAY, in_window=False)
    assert outside.time_window == 0.5 and outside.relevance == pytest.approx(0.4)


@given(st.floats(-1, 1), unit, pads, pads, st.sampled_from(list(Source)), generations,
       st.booleans())
def test_score_candidate_final_is_base_times_weight(
    cosine: float, importance: float, a: Pad, b: Pad, source: Source, generation: int,
    bloodstain: bool,
) -> None:
    prov = Provenance(source=source, generation=generation, bloodstain=bloodstain)
    result = score_candidate(cosine=cosine, dense=max(cosine, 0.0), lexical=importance,
                             last_touched=None, created_at=0.0, now=DAY,
                             importance=importance, entry_pad=a, current_pad=b,
                             provenance=prov, temporal_half_life_s=DAY)
    assert isinstance(result, ScoreBreakdown)
    assert result.final == pytest.approx(result.base * result.provenance_weight)
    assert 0.0 <= result.base <= 1.0
    assert 0.0 <= result.final <= 1.2


# --- importance -----------------------------------------------------------------------


def test_memory_importance_hand_values() -> None:
    assert memory_importance(0.0, 0, 0.0) == pytest.approx(0.3)
    assert memory_importance(0.0, 10, 1.0) == pytest.approx(1.0)
    # 0.3 e^-1 + 0.3 * 0.5 + 0.4 = 0.1104 + 0.15 + 0.4 = 0.6604
    assert memory_importance(30.0, 5, 1.0) == pytest.approx(0.6604, abs=1e-4)
    # access saturates at 10
    assert memory_importance(3.0, 10, 0.5) == memory_importance(3.0, 1000, 0.5)


@pytest.mark.parametrize(("age", "count", "explicit", "name"), [
    (math.nan, 0, 0.5, "age_days"),
    (-1.0, 0, 0.5, "age_days"),
    (1.0, -1, 0.5, "access_count"),
    (1.0, True, 0.5, "access_count"),
    (1.0, 0, math.nan, "explicit"),
    (1.0, 0, 1.5, "explicit"),
])
def test_memory_importance_rejects_bad_inputs(
    age: float, count: int, explicit: float, name: str
) -> None:
    with pytest.raises(ValueError, match=name):
        memory_importance(age, count, explicit)


@given(st.floats(0, 1e6), st.integers(0, 10**6), unit, st.floats(0, 1e3))
def test_memory_importance_bounded_and_fades_with_age(
    age: float, count: int, explicit: float, more: float
) -> None:
    value = memory_importance(age, count, explicit)
    assert 0.0 <= value <= 1.0
    assert memory_importance(age + more, count, explicit) <= value


# --- hard refusal ---------------------------------------------------------------------


def test_refusal_when_nothing_or_too_weak() -> None:
    assert refusal(None, 0.3) is not None
    assert "no candidate" in (refusal(None, 0.3) or "")
    reason = refusal(0.12, 0.3)
    assert reason is not None
    assert "0.120" in reason
    assert "0.300" in reason
    assert refusal(math.nan, 0.3) is not None
    assert refusal(0.3, 0.3) is None
    assert refusal(0.9, 0.3) is None
    with pytest.raises(ValueError, match="threshold"):
        refusal(0.5, 1.5)


@given(unit, unit)
def test_refusal_exactly_below_threshold(best: float, threshold: float) -> None:
    assert (refusal(best, threshold) is not None) == (best < threshold)


def test_confidence_scales_the_final_score_only() -> None:
    common = dict(cosine=0.8, dense=1.0, lexical=0.0, last_touched=None, created_at=0.0,
                  now=0.0, importance=0.5,
                  entry_pad=Pad(), current_pad=Pad(), provenance=Provenance(),
                  temporal_half_life_s=DAY)
    sure = score_candidate(**common, confidence=1.0)  # type: ignore[arg-type]
    doubtful = score_candidate(**common, confidence=0.25)  # type: ignore[arg-type]
    assert doubtful.base == sure.base
    assert doubtful.final == pytest.approx(sure.final * 0.25)
    with pytest.raises(InvalidMemory):
        score_candidate(**common, confidence=1.5)  # type: ignore[arg-type]



@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -0.01, 1.01, True, "0.5", None,
                                 np.float64("nan"), np.float64(1.5)])
def test_every_score_input_outside_its_range_is_refused(bad: object) -> None:
    """The plain-float shortcut in the validators must let nothing else through: a unit
    input (evidence, importance, confidence) outside [0, 1], or a time or cosine that is
    not a finite number, is refused."""
    args: dict[str, object] = {
        "cosine": 0.5, "dense": 0.5, "lexical": 0.5, "last_touched": 10.0, "created_at": 0.0,
        "now": 20.0, "importance": 0.5, "entry_pad": Pad(0.1, 0, 0),
        "current_pad": Pad(0.1, 0, 0), "provenance": Provenance(),
        "temporal_half_life_s": 100.0, "confidence": 0.5}
    assert score_candidate(**args).final > 0  # type: ignore[arg-type]
    for name in ("dense", "lexical", "importance", "confidence"):
        with pytest.raises(InvalidMemory):
            score_candidate(**{**args, name: bad})  # type: ignore[arg-type]
    finite = isinstance(bad, int | float) and not isinstance(bad, bool) and math.isfinite(bad)
    for name in ("cosine", "now", "created_at", "last_touched"):
        if not finite and not (name == "last_touched" and bad is None):  # None: never touched
            with pytest.raises(InvalidMemory):
                score_candidate(**{**args, name: bad})  # type: ignore[arg-type]

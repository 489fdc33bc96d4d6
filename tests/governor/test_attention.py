"""EFE composite attention score: bounds, monotonicity in every term, the seed's anchors."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.governor.attention import (
    SURVIVAL_RELEVANCE,
    AttentionInputs,
    affective_bias,
    attention_score,
)
from golem.governor.categories import Category

unit = st.floats(0.0, 1.0, allow_nan=False)
TERMS = ("relevance", "importance", "confidence", "recency", "curiosity", "interest",
         "affect", "risk_reduction", "survival_relevance")


@st.composite
def inputs(draw: st.DrawFn) -> AttentionInputs:
    return AttentionInputs(
        category=draw(st.sampled_from(list(Category))),
        relevance=draw(unit), importance=draw(unit), confidence=draw(unit),
        recency=draw(unit), curiosity=draw(unit), interest=draw(unit), affect=draw(unit),
        risk_reduction=draw(unit), survival_relevance=draw(st.none() | unit))


@given(inputs(), unit)
def test_components_in_unit_interval_and_total_in_0_4(item: AttentionInputs, v: float) -> None:
    s = attention_score(item, v)
    for part in (s.pragmatic, s.epistemic, s.affective, s.mortality):
        assert 0.0 <= part <= 1.0
    assert 0.0 <= s.total <= 4.0
    assert s.total == pytest.approx(s.pragmatic + s.epistemic + s.affective + s.mortality)


@given(inputs(), unit, st.sampled_from(TERMS), unit)
def test_monotone_non_decreasing_in_each_term(
    item: AttentionInputs, v: float, term: str, bump: float
) -> None:
    current = getattr(item, term)
    if current is None:  # survival relevance from the category default
        current = SURVIVAL_RELEVANCE[item.category]
    higher = dataclasses.replace(item, **{term: min(1.0, current + bump)})
    assert attention_score(higher, v).total >= attention_score(item, v).total - 1e-12


@given(inputs(), unit, unit)
def test_lower_vitality_never_lowers_the_score(item: AttentionInputs, v: float, d: float) -> None:
    lower = max(0.0, v - d)
    assert attention_score(item, lower).total >= attention_score(item, v).total - 1e-12


def test_each_term_moves_the_score_when_not_capped() -> None:
    base = AttentionInputs(Category.EPISODES, relevance=0.4, importance=0.4, confidence=0.4,
                           recency=0.4, curiosity=0.2, interest=0.2, affect=0.2,
                           risk_reduction=0.0, survival_relevance=0.4)
    for term in TERMS:
        change: dict[str, Any] = {term: 0.8}
        up = dataclasses.replace(base, **change)
        assert attention_score(up, 0.5).total > attention_score(base, 0.5).total, term
    assert attention_score(base, 0.2).total > attention_score(base, 0.5).total


def test_seed_anchors() -> None:
    item = AttentionInputs(Category.PLAYBOOK, relevance=1.0, importance=1.0, confidence=1.0,
                           recency=1.0, risk_reduction=0.5, curiosity=0.9, interest=1.0)
    s = attention_score(item, 1.0)
    assert s.pragmatic == 1.0  # seed: (delta_cvar + improvement).min(1.0)
    assert s.epistemic == 1.0  # 0.9 + 0.3 * 1.0 capped
    assert s.mortality == 0.0  # a healthy golem feels no urgency
    stale = dataclasses.replace(item, recency=0.0, risk_reduction=0.0)
    assert attention_score(stale, 1.0).pragmatic == pytest.approx(0.5)  # half for staleness
    assert attention_score(dataclasses.replace(item, curiosity=0.0, interest=0.5),
                           1.0).epistemic == pytest.approx(0.15)


def test_a_dying_golem_attends_to_survival() -> None:
    def urgency(cat: Category, vitality: float) -> float:
        return attention_score(AttentionInputs(cat), vitality).mortality

    assert urgency(Category.INVARIANTS, 0.05) == pytest.approx(0.95)
    assert urgency(Category.INVARIANTS, 0.05) > urgency(Category.DREAM_HYPOTHESES, 0.05)
    assert urgency(Category.DREAM_HYPOTHESES, 1.0) == 0.0
    explicit = AttentionInputs(Category.DREAM_HYPOTHESES, survival_relevance=1.0)
    assert attention_score(explicit, 0.0).mortality == 1.0
    assert set(SURVIVAL_RELEVANCE) == set(Category)


def test_dominant_component_is_reported() -> None:
    assert attention_score(AttentionInputs(Category.EPISODES, curiosity=0.9), 1.0
                           ).dominant == "epistemic"
    assert attention_score(AttentionInputs(Category.MORTALITY), 0.0).dominant == "mortality"
    assert attention_score(AttentionInputs(Category.EPISODES), 1.0).dominant == "pragmatic"


@pytest.mark.parametrize("field", ["relevance", "confidence", "affect", "survival_relevance"])
@pytest.mark.parametrize("bad", [-0.01, 1.01, math.nan, math.inf])
def test_out_of_range_inputs_are_rejected(field: str, bad: float) -> None:
    with pytest.raises(ValueError, match=field):
        AttentionInputs(Category.EPISODES, **{field: bad})


def test_vitality_out_of_range_is_rejected() -> None:
    with pytest.raises(ValueError, match="vitality"):
        attention_score(AttentionInputs(Category.EPISODES), 1.5)


pad = st.tuples(*[st.floats(-1.0, 1.0, allow_nan=False)] * 3)


@given(pad, pad, st.floats(1.0, 10.0))
def test_affective_bias_is_absolute_cosine(a: tuple[float, float, float],
                                           b: tuple[float, float, float], k: float) -> None:
    bias = affective_bias(a, b)
    assert 0.0 <= bias <= 1.0
    assert bias == pytest.approx(affective_bias(b, a))
    neg = (-b[0], -b[1], -b[2])
    assert affective_bias(a, neg) == pytest.approx(bias)  # fear of loss attracts too
    scaled = (b[0] * k, b[1] * k, b[2] * k)
    assert affective_bias(a, scaled) == pytest.approx(bias, abs=1e-9)


def test_affective_bias_anchors() -> None:
    assert affective_bias((0.5, 0.5, 0.0), (1.0, 1.0, 0.0)) == pytest.approx(1.0)
    assert affective_bias((0.5, -0.5, 0.0), (-1.0, 1.0, 0.0)) == pytest.approx(1.0)
    assert affective_bias((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)) == pytest.approx(0.0)
    assert affective_bias((0.0, 0.0, 0.0), (1.0, 0.0, 0.0)) == 0.0  # no affect, no bias
    with pytest.raises(ValueError):
        affective_bias((math.nan, 0.0, 0.0), (1.0, 0.0, 0.0))

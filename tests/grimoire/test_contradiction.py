"""The pure contradiction check: polarity, baselines, causal signs, and the quarantine bar."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem.grimoire import contradiction
from golem.grimoire.contradiction import (
    Conflict,
    contradicts,
    cosine,
    find_conflicts,
    negated,
    quarantine_decision,
)
from golem.grimoire.records import (
    EntryType,
    FactKind,
    MemoryMetadata,
    MemoryType,
    SemanticEntry,
)

DIM = 8


def entry(id_: str, text: str, *, confidence: float = 0.5, anchored: bool = False,
          fact_kind: FactKind | None = None, fact: dict[str, Any] | None = None) -> SemanticEntry:
    return SemanticEntry(id=id_, namespace="ns", text=text, entry_type=EntryType.INSIGHT,
                         memory_type=MemoryType.FACT, created_at=0.0, confidence=confidence,
                         anchored=anchored, fact_kind=fact_kind, fact=fact or {})


def unit(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = 1.0
    return v


def at_cosine(c: float) -> np.ndarray:
    """A unit vector whose cosine with unit(0) is exactly c."""
    return (c * unit(0) + np.sqrt(1 - c * c) * unit(1)).astype(np.float32)


@pytest.mark.parametrize(("text", "expected"), [
    ("Sells of 0xDEAD always revert", True),
    ("Sells of 0xDEAD always succeed", False),
    ("Don't rebalance when gas is above 80 gwei", True),
    ("Don\u2019t rebalance during spikes", True),
    ("Never route through pool X", True),
    ("Route through pool X is cheapest", False),
    ("Avoid JIT liquidity around oracle updates", True),
    ("Knowledge of notional value", False),  # 'not' inside a word is not a negation
])
def test_negation_markers(text: str, expected: bool) -> None:
    assert negated(text) is expected


def test_opposite_polarity_on_the_same_subject_contradicts() -> None:
    old = entry("a", "Sells of token 0xDEAD always succeed")
    new = entry("b", "Sells of token 0xDEAD always revert")
    reason = contradicts(new, at_cosine(0.9), old, unit(0), 0.75)
    assert reason is not None and "polarity" in reason


def test_below_the_similarity_threshold_nothing_contradicts() -> None:
    old = entry("a", "Sells of token 0xDEAD always succeed")
    new = entry("b", "Sells of token 0xDEAD always revert")
    assert contradicts(new, at_cosine(0.7), old, unit(0), 0.75) is None
    assert contradicts(new, np.zeros(DIM, np.float32), old, unit(0), 0.0) is None


def test_claims_about_different_identifiers_do_not_contradict() -> None:
    old = entry("a", "Sells of token 0xDEAD always revert")
    assert contradicts(entry("b", "Sells of token 0xBEEF always succeed"), at_cosine(0.9),
                       old, unit(0), 0.75) is None
    assert contradicts(entry("c", "Sells of token 0xdead always succeed"), at_cosine(0.9),
                       old, unit(0), 0.75) is not None  # same address, any case
    on_aave = replace(entry("d", "Liquidations never cluster"),
                      metadata=MemoryMetadata(protocols=("aave-v3",)))
    on_comp = replace(entry("e", "Liquidations cluster"),
                      metadata=MemoryMetadata(protocols=("compound",)))
    assert contradicts(on_comp, at_cosine(0.9), on_aave, unit(0), 0.75) is None
    unspecific = entry("f", "Liquidations cluster")
    assert contradicts(unspecific, at_cosine(0.9), on_aave, unit(0), 0.75) is not None


def test_same_polarity_does_not_contradict() -> None:
    old = entry("a", "Gas is cheap on Sunday mornings")
    new = entry("b", "Gas is cheapest on Sunday mornings")
    assert contradicts(new, at_cosine(0.95), old, unit(0), 0.75) is None


def baseline(id_: str, metric: str, mean: float, stddev: float) -> SemanticEntry:
    return entry(id_, f"{metric} is usually about {mean}", fact_kind=FactKind.BASELINE,
                 fact={"metric": metric, "mean": mean, "stddev": stddev})


def test_baselines_far_apart_on_the_same_metric_contradict() -> None:
    old, new = baseline("a", "gas_gwei", 20.0, 3.0), baseline("b", "gas_gwei", 40.0, 4.0)
    # combined stddev 5: a gap of 20 is 4 of them, more than k = 2
    reason = contradicts(new, at_cosine(0.9), old, unit(0), 0.75)
    assert reason is not None and "gas_gwei" in reason
    assert contradicts(new, at_cosine(0.9), old, unit(0), 0.75, baseline_k=5.0) is None


def test_baselines_within_the_spread_or_on_other_metrics_agree() -> None:
    old = baseline("a", "gas_gwei", 20.0, 3.0)
    assert contradicts(baseline("b", "gas_gwei", 27.0, 4.0), at_cosine(0.9), old, unit(0),
                       0.75) is None  # gap 7 < 2 * 5
    assert contradicts(baseline("c", "fee_bps", 90.0, 1.0), at_cosine(0.9), old, unit(0),
                       0.75) is None
    broken = replace(old, id="d", fact={"metric": "gas_gwei", "mean": "high"})
    assert contradicts(broken, at_cosine(0.9), old, unit(0), 0.75) is None


def causal(id_: str, cause: str, effect: str, sign: Any) -> SemanticEntry:
    return entry(id_, f"{cause} moves {effect}", fact_kind=FactKind.CAUSAL_RELATION,
                 fact={"cause": cause, "effect": effect, "lag_s": 30, "sign": sign})


def test_causal_relations_with_opposite_signs_contradict() -> None:
    old = causal("a", "large withdrawals", "price", "down")
    assert "opposite sign" in (contradicts(causal("b", "Large withdrawals", "price", "up"),
                                           at_cosine(0.9), old, unit(0), 0.75) or "")
    assert contradicts(causal("c", "large withdrawals", "price", -1), at_cosine(0.9), old,
                       unit(0), 0.75) is None
    assert contradicts(causal("d", "oracle update", "price", "up"), at_cosine(0.9), old,
                       unit(0), 0.75) is None


def test_quarantine_only_against_trusted_entries() -> None:
    new = entry("new", "x")
    weak = Conflict(entry("weak", "y", confidence=0.5), "r1")
    strong = Conflict(entry("strong", "y", confidence=0.9), "r2")
    anchor = Conflict(entry("anchor", "y", confidence=0.1, anchored=True), "r3")
    assert not quarantine_decision(new, [weak], 0.8).quarantined
    assert quarantine_decision(new, [weak], 0.8).conflicts == (("weak", "r1"),)
    report = quarantine_decision(new, [weak, strong, anchor], 0.8)
    assert report.quarantined
    assert report.against == ("strong", "anchor")
    assert report.reasons == ("r2", "r3")


def test_find_conflicts_skips_the_entry_itself() -> None:
    old = entry("a", "Sells always succeed")
    new = entry("a", "Sells always revert")  # same id: an update, not a contradiction
    assert find_conflicts(new, unit(0), [(old, unit(0))], 0.75) == []
    other = replace(old, id="b")
    assert [c.entry.id for c in find_conflicts(new, unit(0), [(other, unit(0))], 0.75)] == ["b"]


WORDS = ["gas", "sells", "never", "not", "revert", "pool", "fee", "always", "don't", "avoid",
         "route", "cheap", "0xdead", "succeed"]
kinds = st.sampled_from([None, *FactKind])
facts = st.fixed_dictionaries({}, optional={
    "metric": st.sampled_from(["gas", "fee"]), "mean": st.floats(-1e6, 1e6),
    "stddev": st.floats(0, 1e3), "cause": st.sampled_from(["a", "b"]),
    "effect": st.sampled_from(["p", "q"]), "sign": st.sampled_from(["up", "down", 1, -1, "?"]),
})


@settings(max_examples=300, deadline=None)
@given(words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=8), kind=kinds, fact=facts,
       vec=st.lists(st.floats(-1, 1), min_size=DIM, max_size=DIM),
       threshold=st.floats(0, 1))
def test_an_entry_never_contradicts_itself(words: list[str], kind: FactKind | None,
                                           fact: dict[str, Any], vec: list[float],
                                           threshold: float) -> None:
    e = replace(entry("e", " ".join(words)), fact_kind=kind, fact=fact)
    v = np.array(vec, dtype=np.float32)
    assert contradicts(e, v, replace(e, id="twin"), v, threshold) is None


@settings(max_examples=300, deadline=None)
@given(existing=st.lists(st.tuples(st.floats(0, 1), st.booleans()), max_size=6),
       bar=st.floats(0, 1))
def test_never_quarantined_against_an_untrusted_entry(existing: list[tuple[float, bool]],
                                                      bar: float) -> None:
    conflicts = [Conflict(entry(f"e{i}", "t", confidence=c, anchored=a), "r")
                 for i, (c, a) in enumerate(existing)]
    report = quarantine_decision(entry("new", "t"), conflicts, bar)
    trusted = {c.entry.id for c in conflicts if c.entry.anchored or c.entry.confidence >= bar}
    assert set(report.against) == trusted
    assert report.quarantined == bool(trusted)


def test_cosine_handles_degenerate_vectors() -> None:
    assert cosine(unit(0), unit(0)) == pytest.approx(1.0)
    assert cosine(unit(0), np.zeros(DIM, np.float32)) == 0.0
    assert cosine(unit(0), np.ones(3, np.float32)) == 0.0


def test_double_negatives_read_as_affirmative() -> None:
    assert contradiction.negated("Sells of token 0xDEAD always revert")
    assert not contradiction.negated("Sells of token 0xDEAD never revert")
    assert not contradiction.negated("Sells of 0xDEAD don't fail")
    assert contradiction.negated("Selling 0xDEAD does not work")

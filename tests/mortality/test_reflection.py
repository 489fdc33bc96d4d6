"""The death reflection: the offline synthesis from the record, the strict parser for
the model's untrusted reply, and the ~5 KB rendering."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.grimoire.records import (
    EntryType,
    FactKind,
    MemoryType,
    Provenance,
    SemanticEntry,
    Status,
)
from golem.mortality import reflection as rf
from golem.mortality.categories import REFLECTION_CATEGORIES

NOW = 1_767_225_600.0
KEYS = list(REFLECTION_CATEGORIES)


def entry(i: int, text: str, *, confidence: float = 0.8, status: Status = Status.ACTIVE,
          entry_type: EntryType = EntryType.INSIGHT, fact_kind: FactKind | None = None,
          process: str = "") -> SemanticEntry:
    return SemanticEntry(id=f"e{i}", namespace="g", text=text, entry_type=entry_type,
                         memory_type=MemoryType.FACT, created_at=NOW, confidence=confidence,
                         status=status, fact_kind=fact_kind,
                         provenance=Provenance(process=process))


ENTRIES = [
    entry(1, "low fact", confidence=0.55),
    entry(2, "high fact", confidence=0.95),
    entry(3, "ETH/USDC fee mean 0.3%", fact_kind=FactKind.BASELINE),
    entry(4, "never swap during oracle gaps", entry_type=EntryType.ANTI_KNOWLEDGE),
    entry(5, "maybe lending leads swaps", status=Status.STAGED, confidence=0.3),
    entry(6, "gas spikes cause cascades", status=Status.QUARANTINED),
    entry(7, "dream: ranges near ticks", status=Status.PRUNED, process="dream"),
    entry(8, "pruned ordinary fact", status=Status.PRUNED),
]
MUTATIONS = [("refuted", json.dumps({"name": "more-anti", "rationale": "add warnings"})),
             ("staged", json.dumps({"name": "less-noise", "rationale": "cut recall"})),
             ("validated", json.dumps({"name": "more-facts", "rationale": "facts help"})),
             ("staged", "not json")]
JOURNAL = {"tick": 40, "predictions": 30, "scored": 20, "hits": 12, "mean_quality": 0.61,
           "summary": "hold"}


def test_the_offline_synthesis_sorts_the_record_into_the_nine_categories() -> None:
    ev = rf.evidence_from("terminal: economic", ENTRIES, MUTATIONS, JOURNAL)
    cats = rf.offline_reflection(ev)
    assert list(cats) == KEYS
    assert cats["what_worked"][:2] == ["high fact (confidence 0.95)",
                                       "low fact (confidence 0.55)"]
    assert "Loop 3 mutation more-facts: facts help" in cats["what_worked"]
    assert cats["what_failed"] == ["never swap during oracle gaps (confidence 0.80)",
                                   "Loop 3 mutation more-anti: add warnings"]
    assert cats["suspected_unproven"] == ["maybe lending leads swaps (confidence 0.30)"]
    assert cats["what_confused_me"] == ["gas spikes cause cascades (confidence 0.80)"]
    assert cats["never_tested"] == ["dream: ranges near ticks (confidence 0.80)",
                                    "Loop 3 mutation less-noise: cut recall"]
    assert cats["market_beliefs"][0].startswith("ETH/USDC fee mean")
    assert "30 predictions made, 20 scored, 12 hit, mean quality 0.61" in cats["market_beliefs"][1]
    assert cats["warnings"][0] == "I died of: terminal: economic"
    assert all("pruned ordinary" not in x for v in cats.values() for x in v)


def test_an_empty_life_is_reported_honestly() -> None:
    cats = rf.offline_reflection(rf.evidence_from("young death", [], [], None))
    assert cats["what_worked"] == ["nothing recorded"]
    assert cats["would_do_differently"][-1].startswith("Spend more of the budget observing")


def test_a_well_formed_reply_parses_fenced_or_not() -> None:
    reply = {k: [f"{k} one", "  ", f"{k} two\x00"] for k in KEYS}
    for text in (json.dumps(reply), f"```json\n{json.dumps(reply)}\n```"):
        cats = rf.parse(text)
        assert cats["what_worked"] == ["what_worked one", "what_worked two"]


@pytest.mark.parametrize("text", [
    "", "[]", "null", "prose before {}", json.dumps({k: [] for k in KEYS[:-1]}),
    json.dumps({**{k: [] for k in KEYS}, "extra": []}),
    json.dumps({**{k: [] for k in KEYS}, "warnings": [1, 2]}),
    json.dumps({**{k: [] for k in KEYS}, "warnings": "one"}),
])
def test_anything_else_is_malformed(text: str) -> None:
    with pytest.raises(rf.MalformedReflection):
        rf.parse(text)


@given(st.text(max_size=300))
def test_the_parser_only_ever_raises_malformed(text: str) -> None:
    try:
        cats = rf.parse(text)
    except rf.MalformedReflection:
        return
    assert list(cats) == KEYS


@given(st.dictionaries(st.sampled_from(KEYS),
                       st.lists(st.text(min_size=1, max_size=rf.MAX_ITEM_CHARS), max_size=40)))
def test_the_rendering_stays_within_5kb_and_keeps_every_heading(
        cats: dict[str, list[str]]) -> None:
    text = rf.render(cats, header="# Death reflection")
    assert len(text.encode()) <= rf.MAX_TEXT_BYTES
    if sum(len(v[:1]) for v in cats.values()) * (rf.MAX_ITEM_CHARS * 4 + 8) < 3_000:
        assert all(f"## {h}" in text for h in REFLECTION_CATEGORIES.values())


def test_clean_strips_control_characters_and_truncates() -> None:
    assert rf.clean("a\x00b\n\tc") == "a b c"
    long = rf.clean("x" * 1000)
    assert len(long) == rf.MAX_ITEM_CHARS and long.endswith("\u2026")


def test_the_prompt_carries_the_evidence() -> None:
    ev = rf.evidence_from("terminal", ENTRIES, MUTATIONS, JOURNAL)
    text = rf.prompt(ev)
    assert "# Cause of death\n- terminal" in text and "never swap during oracle gaps" in text
    assert all(k in rf.SYSTEM for k in KEYS)

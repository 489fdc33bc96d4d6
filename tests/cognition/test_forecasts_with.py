"""Which facts found by key the offline tier forecasts with: its own active ones, and the
ones a parent's testament left while they are still staged; never its own staged,
archived, pruned or quarantined facts, nor entries that are not facts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from golem.cognition.theta import forecasts_with
from golem.grimoire.records import (
    EntryType,
    FactKind,
    MemoryType,
    Provenance,
    SemanticEntry,
    Source,
    Status,
)

OWN = SemanticEntry(
    id="fact-1", namespace="g", text="After the feed fell hard in regime crash ...",
    entry_type=EntryType.INSIGHT, memory_type=MemoryType.FACT, created_at=0.0,
    confidence=0.8, importance=0.6, fact_kind=FactKind.CONDITIONAL_OUTCOME,
    fact={"key": "outcome|0xfeed|crash|fell_hard|300"})
INHERITED = replace(OWN, id="inh-1", status=Status.STAGED,
                    provenance=Provenance(source=Source.SUCCESSOR, generation=1))


@pytest.mark.parametrize(("entry", "used"), [
    (OWN, True),
    (replace(OWN, status=Status.STAGED), False),
    (INHERITED, True),
    (replace(INHERITED, status=Status.ACTIVE), True),
    (replace(INHERITED, status=Status.QUARANTINED), False),
    (replace(OWN, status=Status.ARCHIVED), False),
    (replace(OWN, status=Status.PRUNED), False),
    (replace(INHERITED, fact_kind=None), False),
])
def test_forecasts_with(entry: SemanticEntry, used: bool) -> None:
    assert forecasts_with(entry) is used

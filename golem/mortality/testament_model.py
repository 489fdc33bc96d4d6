"""The testament's data model (format version 1): its entries, limits and errors (pure).

golem.mortality.testament is the public API (build, write, load, render) and
re-exports these names; the JSON format lives in golem.mortality.testament_format,
the distillation from the Grimoire in golem.mortality.testament_build.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from golem.errors import EXIT_CONFIG, GolemError

TESTAMENT_VERSION = 1
MAX_ENTRIES = 2048  # the genomic bottleneck
MAX_REFLECTION_BYTES = 5 * 1024  # the compressed reflection, UTF-8
MAX_ENTRY_CHARS = 2000
MAX_SNAPSHOT_CHARS = 64 * 1024  # PLAYBOOK.md and MEMORY.md each
MAX_FILE_BYTES = 8 * 1024 * 1024
PROVENANCE = "death_reflection"
TESTAMENT_FILE = "testament.json"


class TestamentError(GolemError):
    """A testament is unreadable or invalid; the message is one line naming the reason."""

    exit_code = EXIT_CONFIG


class EntryKind(StrEnum):
    FACT = "fact"
    EPISODE_SUMMARY = "episode_summary"
    ANTI_KNOWLEDGE = "anti_knowledge"
    CAUSAL_LINK = "causal_link"
    PROCEDURAL = "procedural"
    BLOODSTAIN = "bloodstain"


@dataclass(frozen=True)
class TestamentEntry:
    """One unit of inheritance. ``generation``: deaths crossed since it was learned
    (0: the dying golem's own knowledge)."""

    kind: EntryKind
    text: str
    confidence: float
    importance: float
    generation: int = 0
    entry_type: str | None = None  # golem.grimoire.records.EntryType value
    fact_kind: str | None = None  # FactKind value
    category: str | None = None  # InsightCategory value
    fact: dict[str, Any] = field(default_factory=dict)
    bloodstain: bool = False
    conditions: dict[str, Any] = field(default_factory=dict)  # when a bloodstain happened
    source_id: str = ""  # the entry or episode it came from, in the parent's stores


@dataclass(frozen=True)
class Testament:
    version: int
    testament_id: str
    golem_name: str
    namespace: str
    golem_id: str
    generation: int
    parent_testament_id: str | None
    died_at: float
    cause: str
    provenance: str
    reflection: dict[str, list[str]]
    reflection_text: str
    reflection_source: str  # "model:<name>" or "offline"
    entries: tuple[TestamentEntry, ...]
    max_entries: int
    playbook_md: str
    memory_md: str
    stats: dict[str, Any]

    def counts(self) -> dict[str, int]:
        out = {k.value: 0 for k in EntryKind}
        for e in self.entries:
            out[e.kind.value] += 1
        out["bloodstains"] = sum(1 for e in self.entries if e.bloodstain)
        return out

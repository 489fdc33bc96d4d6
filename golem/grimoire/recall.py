"""The one recall path: dense + lexical candidates, fused, scored, refused when weak.

Everything that reads memory (Theta's Context Governor, the model's
query_grimoire tool, the CLI, outside programs) comes through here, so every
caller gets the same guarantees: namespaces are enforced, anti-knowledge that
bears on the query is always surfaced, every hit says why it was recalled,
and when nothing in memory is close enough the answer is an explicit
refusal rather than a list of weak guesses.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from golem.grimoire.query_numbers import Intent
from golem.grimoire.query_words import TimeWindow
from golem.grimoire.records import (
    EntryType,
    Episode,
    MemoryType,
    Pad,
    Provenance,
    SemanticEntry,
    Status,
)
from golem.grimoire.scoring import ScoreBreakdown

if TYPE_CHECKING:
    from golem.grimoire.episodes_schema import Found

HitKind = Literal["episode", "entry"]


@dataclass(frozen=True)
class RecallFilters:
    """Optional narrowing; None means no constraint."""

    since: float | None = None
    until: float | None = None
    protocol: str | None = None
    category: str | None = None
    kinds: tuple[HitKind, ...] = ("episode", "entry")
    entry_types: tuple[EntryType, ...] | None = None
    memory_types: tuple[MemoryType, ...] | None = None
    statuses: tuple[Status, ...] = (Status.ACTIVE,)
    min_importance: float | None = None


@dataclass(frozen=True)
class Hit:
    """One recalled record, with the reasons it ranked where it did."""

    kind: HitKind
    id: str
    namespace: str
    text: str
    similarity: float
    score: ScoreBreakdown
    provenance: Provenance
    record: Episode | SemanticEntry

    @property
    def uri(self) -> str:
        """Citation source: grimoire://namespace/type/id."""
        kind = self.record.entry_type.value if isinstance(self.record, SemanticEntry) else "episode"
        return f"grimoire://{self.namespace}/{kind}/{self.id}"

    @property
    def is_anti_knowledge(self) -> bool:
        return (isinstance(self.record, SemanticEntry)
                and self.record.entry_type is EntryType.ANTI_KNOWLEDGE)


@dataclass(frozen=True)
class Recall:
    """Memory had something relevant: ranked hits plus any anti-knowledge that applies."""

    query: str
    namespaces: tuple[str, ...]
    hits: tuple[Hit, ...]
    anti_knowledge: tuple[Hit, ...]
    best_similarity: float
    refused: Literal[False] = False


@dataclass(frozen=True)
class Refusal:
    """Memory holds nothing close enough to answer; callers must not guess.

    Anti-knowledge relevant to the query is still attached: a warning is never
    withheld because the rest of memory was silent.
    """

    query: str
    namespaces: tuple[str, ...]
    reason: str
    best_similarity: float | None
    threshold: float
    anti_knowledge: tuple[Hit, ...] = field(default_factory=tuple)
    refused: Literal[True] = True


RecallResult = Recall | Refusal


@dataclass(frozen=True)
class RecallRequest:
    """One recall, as the facade validated it."""

    query: str
    vector: np.ndarray
    k: int
    namespaces: tuple[str, ...]
    filters: RecallFilters
    pad: Pad | None
    now: float
    # The episode full-text search, started before the query was embedded.
    episode_text: Future[list[Found]] | None = None
    # The calendar window the query names ("yesterday", "in May 2023"), if any.
    window: TimeWindow | None = None
    # The order, threshold and event anchor the query names ("the largest", "more than 2%").
    intent: Intent | None = None


@dataclass
class Candidate:
    """A record gathered from any candidate list, before scoring."""

    kind: HitKind
    id: str
    # None until fusion keeps the candidate: then an entry comes from the read, an episode
    # is decoded from the row its search brought.
    record: Episode | SemanticEntry | None = None
    similarity: float = 0.0
    dense_rank: int | None = None
    lexical_rank: int | None = None
    fused: float = 0.0
    # calibrated evidence, in [0, 1]: the list's score over the list's best score
    dense: float = 0.0
    lexical: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.id}"


def cosine(query: np.ndarray, vector: np.ndarray) -> float:
    """Vectors are L2-normalised by the embedder, so the dot product is the cosine."""
    return float(np.dot(query, vector))


def current_pad(pad: Pad | None) -> Pad:
    return pad if pad is not None else Pad()


def namespaces_tuple(namespaces: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(namespaces))

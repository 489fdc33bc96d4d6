"""The Grimoire's record types: plain, frozen data shared by stores, scoring and callers.

Times are golem time in epoch seconds (from the runtime clock), never read
here. Vectors live in the stores, next to the model signature that made them.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple


class MemoryType(StrEnum):
    """What a memory is about, as the memory service classifies it (seed 003)."""

    FACT = "fact"
    PREFERENCE = "preference"
    EPISODE = "episode"
    STRATEGY_OUTCOME = "strategy_outcome"
    CONSTRAINT = "constraint"


class EntryType(StrEnum):
    """Kinds of semantic knowledge (seed 000)."""

    INSIGHT = "insight"
    HEURISTIC = "heuristic"
    WARNING = "warning"
    CAUSAL_LINK = "causal_link"
    STRATEGY_FRAGMENT = "strategy_fragment"
    ANTI_KNOWLEDGE = "anti_knowledge"


class FactKind(StrEnum):
    """What a consolidated fact measures (seed 000 SemanticFactKind)."""

    BASELINE = "baseline"  # fact: {"metric", "mean", "stddev"}
    PROTOCOL_PATTERN = "protocol_pattern"  # fact: {"pattern"}
    CAUSAL_RELATION = "causal_relation"  # fact: {"cause", "effect", "lag_s"}
    ANTI_KNOWLEDGE = "anti_knowledge"  # fact: {"warning"}
    PROCEDURAL = "procedural"  # fact: {"strategy", "observation"}
    # fact: {"feed", "regime", "bucket", "horizon_s", "n", "mean", "stddev", "p_up"}
    CONDITIONAL_OUTCOME = "conditional_outcome"


class InsightCategory(StrEnum):
    """The 12 insight categories of the semantic store (seed 000)."""

    SLIPPAGE = "slippage"
    GAS_TIMING = "gas_timing"
    ROUTE_SELECTION = "route_selection"
    LIQUIDITY_CONDITIONS = "liquidity_conditions"
    REGIME_TRANSITIONS = "regime_transitions"
    RISK_EVENTS = "risk_events"
    REBALANCE_TIMING = "rebalance_timing"
    RANGE_SELECTION = "range_selection"
    FEE_OPTIMIZATION = "fee_optimization"
    JIT_DEFENSE = "jit_defense"
    TOOL_GUIDANCE = "tool_guidance"
    STRATEGIC_PATTERNS = "strategic_patterns"


class Status(StrEnum):
    """Lifecycle of a semantic entry; only ACTIVE entries are recalled by default."""

    STAGED = "staged"
    ACTIVE = "active"
    ARCHIVED = "archived"
    PRUNED = "pruned"
    QUARANTINED = "quarantined"


class DecayClass(StrEnum):
    """How fast an unreinforced entry fades (half-lives are in config)."""

    STRUCTURAL = "structural"  # protocol mechanics, fee structures: barely decays
    STRATEGIC = "strategic"  # regime-level patterns: months
    TACTICAL = "tactical"  # gas patterns, price levels: days
    EPHEMERAL = "ephemeral"  # hours


class Source(StrEnum):
    """Where knowledge came from; sets its provenance tier (seed 000 weighting hierarchy)."""

    SELF = "self"
    CLADE = "clade"
    SUCCESSOR = "successor"  # a direct predecessor's death testament
    PREDECESSOR_ARCHIVE = "predecessor_archive"
    QUERY = "query"
    LETHE = "lethe"
    MARKETPLACE = "marketplace"


@dataclass(frozen=True)
class Pad:
    """Pleasure, arousal, dominance, each in [-1, 1]."""

    pleasure: float = 0.0
    arousal: float = 0.0
    dominance: float = 0.0

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.pleasure, self.arousal, self.dominance)


@dataclass(frozen=True)
class Provenance:
    """Who wrote a record and how far it travelled to get here."""

    source: Source = Source.SELF
    generation: int = 0  # 0 = learned by this golem; N = inherited N generations back
    author: str = ""  # namespace (identity) of the golem that produced it
    process: str = ""  # calling subsystem: "gamma", "theta", "cli", "api", ...
    bloodstain: bool = False  # death-sourced knowledge
    verified: bool = False  # tool- or outcome-verified rather than a free-form claim


@dataclass(frozen=True)
class MemoryMetadata:
    """Filterable tags of a memory (seed 003)."""

    tokens: tuple[str, ...] = ()
    chains: tuple[int, ...] = ()
    protocols: tuple[str, ...] = ()
    strategy_id: str | None = None


@dataclass(frozen=True)
class Episode:
    """One faithfully captured chain event (seed 000 Episode)."""

    id: str
    namespace: str
    chain_id: int
    block_number: int
    block_hash: str
    log_index: int
    tx_hash: str
    tick: int
    observed_at: float
    category: str
    protocol: str | None
    text: str  # the rendering that is embedded, shown and lexically indexed
    payload: dict[str, Any] = field(default_factory=dict)  # decoded event, JSON-safe
    curiosity: float = 0.0
    importance: float | None = None
    quality_verified: bool = False
    replay_count: int = 0
    pad: Pad = field(default_factory=Pad)
    provenance: Provenance = field(default_factory=Provenance)
    # Exact identifiers (hex addresses, hashes) the text names by alias or name: the
    # full-text index sees them after the text, the embedder does not (search_text).
    identifiers: tuple[str, ...] = ()


def search_text(episode: Episode) -> str:
    """What the full-text index sees of an episode: its text, then its identifiers on one
    line (none: the text alone, as every episode written before identifiers existed)."""
    if not episode.identifiers:
        return episode.text
    return f"{episode.text}\n{' '.join(episode.identifiers)}"


def episode_id(chain_id: int, block_hash: str, log_index: int) -> str:
    """Stable id: the same chain event always maps to the same episode."""
    key = f"{chain_id}:{block_hash.lower()}:{log_index}".encode()
    return hashlib.sha256(key).hexdigest()[:32]


def tx_episode_id(chain_id: int, block_hash: str, tx_index: int) -> str:
    """Stable id of an episode about a whole transaction (a revert has no log); never
    equal to a log's episode_id."""
    key = f"{chain_id}:{block_hash.lower()}:tx{tx_index}".encode()
    return hashlib.sha256(key).hexdigest()[:32]


@dataclass(frozen=True)
class EpisodeRef:
    """What a store knows of an episode without reading its record: the columns a
    selection ranks by (EpisodeStore.since_refs)."""

    id: str
    observed_at: float
    importance: float | None
    replay_count: int


class EpisodeFacts(NamedTuple):
    """What retention weighs of an episode (EpisodeStore.facts): its columns and its
    curiosity, without building the whole Episode. A named tuple, cheap to build: a full
    retention pass builds one per stored episode."""

    id: str
    observed_at: float
    category: str
    curiosity: float
    importance: float | None
    quality_verified: bool
    replay_count: int


@dataclass(frozen=True)
class SemanticEntry:
    """A piece of derived or remembered knowledge in the semantic store."""

    id: str
    namespace: str
    text: str
    entry_type: EntryType
    memory_type: MemoryType
    created_at: float
    confidence: float = 0.5
    importance: float = 0.5  # explicit importance given at write time
    # Confidence as of last_reinforced: the fixed point decay is computed from, so decay
    # passes never compound (None: same as confidence).
    reinforced_confidence: float | None = None
    category: InsightCategory | None = None
    fact_kind: FactKind | None = None
    fact: dict[str, Any] = field(default_factory=dict)
    episode_count: int = 0
    observed_from: float | None = None
    observed_to: float | None = None
    last_reinforced: float | None = None
    last_accessed: float | None = None
    access_count: int = 0
    successful_recalls: int = 0
    source_episodes: tuple[str, ...] = ()
    status: Status = Status.ACTIVE
    decay_class: DecayClass = DecayClass.STRATEGIC
    anchored: bool = False
    pad: Pad = field(default_factory=Pad)
    metadata: MemoryMetadata = field(default_factory=MemoryMetadata)
    provenance: Provenance = field(default_factory=Provenance)

    @property
    def generation(self) -> int:
        return self.provenance.generation


# Default entry type for text remembered through the memory-service types.
ENTRY_TYPE_FOR_MEMORY: dict[MemoryType, EntryType] = {
    MemoryType.FACT: EntryType.INSIGHT,
    MemoryType.PREFERENCE: EntryType.HEURISTIC,
    MemoryType.EPISODE: EntryType.INSIGHT,
    MemoryType.STRATEGY_OUTCOME: EntryType.STRATEGY_FRAGMENT,
    MemoryType.CONSTRAINT: EntryType.WARNING,
}


@dataclass(frozen=True)
class CausalEdge:
    """cause -> effect between two semantic entries, with a measured lag."""

    namespace: str
    cause_id: str
    effect_id: str
    lag_s: float
    confidence: float


def finite_unit(value: float, name: str) -> float:
    """Validate a score in [0, 1]; raises ValueError naming the field."""
    if value.__class__ is float and 0.0 <= value <= 1.0:  # the usual case, checked first
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name}: must be a finite number in [0, 1], got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name}: must be in [0, 1], got {value}")
    return float(value)

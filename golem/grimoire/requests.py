"""Memory requests as ``golem memory`` and the HTTP API take them, and the JSON they answer.

Both front ends build the same request, ``check`` it before any store opens or any write
begins (InvalidMemory naming the field, exit 65 / HTTP 422), then ``run`` it on the
Grimoire, which enforces namespaces and read grants (NamespaceRefused, exit 77 / HTTP 403).
``to_jsonable`` gives both the same JSON, so a search through the API and through the CLI
print the same hits with the same score breakdown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from golem.grimoire import recall as rc
from golem.grimoire.errors import InvalidMemory
from golem.grimoire.records import DecayClass, InsightCategory, MemoryType
from golem.grimoire.validation import clean_text, enum_value, metadata_of, unit

if TYPE_CHECKING:
    from golem.grimoire.grimoire import Grimoire
    from golem.grimoire.records import SemanticEntry

MAX_K = 1000


@dataclass(frozen=True)
class AddRequest:
    """Remember one text memory in the golem's own namespace (``namespace`` may only
    name it)."""

    text: str
    type: str = "fact"
    importance: float = 0.5
    category: str | None = None
    decay_class: str = "strategic"
    anchored: bool = False
    metadata: Mapping[str, Any] | None = None
    namespace: str | None = None

    def check(self, max_text_chars: int) -> None:
        """Refuse bad input before anything is opened or written."""
        clean_text(self.text, max_text_chars)
        enum_value(MemoryType, self.type, "type")
        enum_value(DecayClass, self.decay_class, "decay_class")
        if self.category is not None:
            enum_value(InsightCategory, self.category, "category")
        if isinstance(self.importance, bool) or not isinstance(self.importance, int | float):
            raise InvalidMemory(f"importance: must be a number, got {self.importance!r}")
        unit(self.importance, "importance")
        if not isinstance(self.anchored, bool):
            raise InvalidMemory(f"anchored: must be true or false, got {self.anchored!r}")
        if self.metadata is not None and not isinstance(self.metadata, Mapping):
            raise InvalidMemory("metadata: must be an object")
        metadata_of(self.metadata)
        if self.namespace is not None and not isinstance(self.namespace, str):
            raise InvalidMemory("namespace: must be a string")

    async def run(self, g: Grimoire) -> SemanticEntry:
        return await g.remember(self.text, type=self.type, importance=self.importance,
                                category=self.category, decay_class=self.decay_class,
                                anchored=self.anchored, metadata=self.metadata,
                                namespace=self.namespace)


@dataclass(frozen=True)
class SearchRequest:
    """One recall through the golem's own path; ``namespaces`` empty means its own."""

    query: str
    k: int = 10
    namespaces: tuple[str, ...] = ()
    filters: rc.RecallFilters = field(default_factory=rc.RecallFilters)

    def check(self, max_text_chars: int) -> None:
        try:
            clean_text(self.query, max_text_chars)
        except InvalidMemory as exc:  # the same rules as a memory's text, named as the query
            raise InvalidMemory("query" + str(exc).removeprefix("text")) from None
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= MAX_K:
            raise InvalidMemory(f"k: must be an integer between 1 and {MAX_K}, got {self.k!r}")

    async def run(self, g: Grimoire) -> rc.RecallResult:
        return await g.recall(self.query, k=self.k, namespace=self.namespaces or None,
                              filters=self.filters)


def filters_from(data: Mapping[str, Any]) -> rc.RecallFilters:
    """RecallFilters from JSON-like data (since, until, protocol, category, kinds,
    min_importance); InvalidMemory naming ``filters.<key>`` for anything else."""
    allowed = {"since", "until", "protocol", "category", "kinds", "min_importance"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise InvalidMemory(f"filters.{unknown[0]}: unknown filter (expected one of: "
                            f"{', '.join(sorted(allowed))})")
    out: dict[str, Any] = {}
    for key in ("since", "until"):
        if data.get(key) is not None:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidMemory(f"filters.{key}: must be an epoch time in seconds")
            out[key] = float(value)
    for key in ("protocol", "category"):
        if data.get(key) is not None:
            if not isinstance(data[key], str):
                raise InvalidMemory(f"filters.{key}: must be a string")
            out[key] = data[key]
    if data.get("kinds") is not None:
        kinds = data["kinds"]
        if not isinstance(kinds, Sequence) or isinstance(kinds, str) or not kinds \
                or any(k not in ("episode", "entry") for k in kinds):
            raise InvalidMemory('filters.kinds: a non-empty list of "episode" and "entry"')
        out["kinds"] = tuple(dict.fromkeys(kinds))
    if data.get("min_importance") is not None:
        value = data["min_importance"]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidMemory("filters.min_importance: must be a number in [0, 1]")
        out["min_importance"] = unit(value, "filters.min_importance")
    return rc.RecallFilters(**out)


def to_jsonable(value: Any) -> Any:
    """Records, hits and results as plain JSON data (hits carry their ``uri``)."""
    if is_dataclass(value) and not isinstance(value, type):
        out = {f.name: to_jsonable(getattr(value, f.name)) for f in fields(value)}
        uri = getattr(value, "uri", None)  # recall hits carry their citation source
        if isinstance(uri, str):
            out["uri"] = uri
        return out
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value

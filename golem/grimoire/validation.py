"""Input checks for memories: each bad value gets an error naming the field."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from golem.grimoire.errors import InvalidMemory
from golem.grimoire.records import MemoryMetadata, finite_unit


def unit(value: float, name: str) -> float:
    """A finite number in [0, 1]."""
    try:
        return finite_unit(value, name)
    except ValueError as exc:
        raise InvalidMemory(str(exc)) from None


def enum_value(kind: type[Any], value: Any, name: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(m.value for m in kind)
        raise InvalidMemory(f"{name}: unknown value {value!r} (expected one of: {choices})") \
            from None


def epoch(timestamp: float) -> float:
    if isinstance(timestamp, bool) or not isinstance(timestamp, int | float) \
            or not math.isfinite(timestamp) or timestamp < 0:
        raise InvalidMemory(f"timestamp: must be a finite epoch time, got {timestamp!r}")
    return float(timestamp)


def clean_text(text: str, max_chars: int) -> str:
    """Stripped, non-empty text within the configured size."""
    if not isinstance(text, str):
        raise InvalidMemory(f"text: must be a string, got {type(text).__name__}")
    clean = text.strip()
    if not clean:
        raise InvalidMemory("text: must not be empty")
    if len(clean) > max_chars:
        raise InvalidMemory(f"text: {len(clean)} characters is over the limit of "
                            f"{max_chars} (grimoire.max_text_chars)")
    return clean


def metadata_of(value: MemoryMetadata | Mapping[str, Any] | None) -> MemoryMetadata:
    if value is None:
        return MemoryMetadata()
    if isinstance(value, MemoryMetadata):
        return value
    unknown = set(value) - {"tokens", "chains", "protocols", "strategy_id"}
    if unknown:
        raise InvalidMemory(f"metadata: unknown keys {sorted(unknown)} "
                            "(expected tokens, chains, protocols, strategy_id)")
    try:
        return MemoryMetadata(
            tokens=tuple(str(t) for t in value.get("tokens", ())),
            chains=tuple(int(c) for c in value.get("chains", ())),
            protocols=tuple(str(p) for p in value.get("protocols", ())),
            strategy_id=(str(value["strategy_id"]) if value.get("strategy_id") is not None
                         else None),
        )
    except (TypeError, ValueError) as exc:
        raise InvalidMemory(f"metadata: {exc}") from None

"""The ContextPolicy (seed 002 S2.3, S3.6-S3.7): how Theta's context budget is shared out.

Pure: a frozen value that Loop 2 replaces with a new revision. ``effective`` composes
base -> task -> phase -> regime overrides (later wins per category), applies the
small PAD affect shifts and normalises, so assembly only ever sees fractions summing to 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypeVar

from golem.governor.categories import (
    DEFAULT_ALLOCATIONS,
    DEFAULT_PHASE_OVERRIDES,
    DEFAULT_REGIME_OVERRIDES,
    Allocation,
    Category,
    MarketRegime,
    Phase,
    TaskType,
)
from golem.grimoire.records import Pad

SCHEMA = 1
# Seed S3.7: after the affect shifts no live category drops below this share.
AFFECT_FLOOR = 0.01

C = Category
K = TypeVar("K", bound=StrEnum)


class ModelPreference(StrEnum):
    CHEAP_FIRST = "cheap_first"
    BALANCED = "balanced"
    PARANOID = "paranoid"


@dataclass(frozen=True)
class RetrievalConfig:
    """What the Grimoire is asked for (seed 002 S2.3 defaults)."""

    similarity_threshold: float = 0.3
    max_episode_count: int = 10
    min_insight_confidence: float = 0.4
    max_causal_depth: int = 3
    full_episode_slots: int = 3
    summary_episode_slots: int = 7


@dataclass(frozen=True)
class CompressionConfig:
    """Entries longer than these token counts go in as summaries."""

    episode_summary_threshold: int = 200
    insight_summary_threshold: int = 150


def normalise(allocation: Mapping[Category, float]) -> dict[Category, float]:
    """Every category, negatives clamped to 0, summing to 1 (uniform if nothing is left)."""
    clamped = {c: max(0.0, float(allocation.get(c, 0.0))) for c in Category}
    total = math.fsum(clamped.values())
    if total <= 0.0:
        return {c: 1.0 / len(Category) for c in Category}
    return {c: v / total for c, v in clamped.items()}


def _frozen(allocation: Mapping[Category, float]) -> Allocation:
    return MappingProxyType({Category(c): float(v) for c, v in allocation.items()})


def _frozen_overrides(overrides: Mapping[K, Mapping[Category, float]]) -> Mapping[K, Allocation]:
    return MappingProxyType({k: _frozen(v) for k, v in overrides.items()})


def _check_shares(where: str, allocation: Mapping[Category, float]) -> None:
    for cat, value in allocation.items():
        if not isinstance(cat, Category):
            raise ValueError(f"{where}: unknown category {cat!r}")
        if not math.isfinite(value) or value < 0.0 or value > 1.0:
            raise ValueError(f"{where}: {cat.value} share {value!r} is not in [0, 1]")


@dataclass(frozen=True)
class ContextPolicy:
    """One revision of the learned policy; Loop 2 makes the next one."""

    revision: int = 0
    allocations: Allocation = field(default_factory=lambda: DEFAULT_ALLOCATIONS)
    task_overrides: Mapping[TaskType, Allocation] = field(
        default_factory=lambda: MappingProxyType({}))
    phase_overrides: Mapping[Phase, Allocation] = field(
        default_factory=lambda: DEFAULT_PHASE_OVERRIDES)
    regime_overrides: Mapping[MarketRegime, Allocation] = field(
        default_factory=lambda: DEFAULT_REGIME_OVERRIDES)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    compression: CompressionConfig = field(default_factory=CompressionConfig)
    model_preference: ModelPreference = ModelPreference.BALANCED

    def __post_init__(self) -> None:
        if self.revision < 0:
            raise ValueError(f"revision {self.revision} is negative")
        missing = set(Category) - set(self.allocations)
        if missing:
            raise ValueError(f"allocations lack {sorted(c.value for c in missing)}")
        _check_shares("allocations", self.allocations)
        if math.fsum(self.allocations.values()) <= 0.0:
            raise ValueError("allocations are all zero")
        for name, overrides in (("task", self.task_overrides), ("phase", self.phase_overrides),
                                ("regime", self.regime_overrides)):
            for key, allocation in overrides.items():
                _check_shares(f"{name} override {key}", allocation)
        # Freeze copies so a caller's dict cannot change a published revision.
        object.__setattr__(self, "allocations", _frozen(self.allocations))
        object.__setattr__(self, "task_overrides", _frozen_overrides(self.task_overrides))
        object.__setattr__(self, "phase_overrides", _frozen_overrides(self.phase_overrides))
        object.__setattr__(self, "regime_overrides", _frozen_overrides(self.regime_overrides))

    def composed(self, task: TaskType | None = None, phase: Phase | None = None,
                 regime: MarketRegime | None = None) -> dict[Category, float]:
        """Base, then task, phase and regime overrides; a later layer replaces a category."""
        shares = dict(self.allocations)
        for layer in (self.task_overrides.get(task) if task else None,
                      self.phase_overrides.get(phase) if phase else None,
                      self.regime_overrides.get(regime) if regime else None):
            if layer:
                shares.update(layer)
        return shares

    def effective(self, task: TaskType | None = None, phase: Phase | None = None,
                  regime: MarketRegime | None = None,
                  affect: Pad | None = None) -> dict[Category, float]:
        """The shares assembly uses this tick: composed, affect-shifted, summing to 1."""
        shares = self.composed(task, phase, regime)
        if affect is not None:
            shares = affect_shifted(shares, affect)
        return normalise(shares)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe; ``from_dict`` reads it back to an equal policy."""
        return {
            "schema": SCHEMA,
            "revision": self.revision,
            "allocations": _alloc_dict(self.allocations),
            "task_overrides": {k.value: _alloc_dict(v) for k, v in self.task_overrides.items()},
            "phase_overrides": {k.value: _alloc_dict(v) for k, v in self.phase_overrides.items()},
            "regime_overrides": {k.value: _alloc_dict(v)
                                 for k, v in self.regime_overrides.items()},
            "retrieval": {f.name: getattr(self.retrieval, f.name) for f in fields(RetrievalConfig)},
            "compression": {f.name: getattr(self.compression, f.name)
                            for f in fields(CompressionConfig)},
            "model_preference": self.model_preference.value,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContextPolicy:
        """Validating: unknown keys, categories or enum values raise ValueError."""
        if not isinstance(data, Mapping):
            raise ValueError("policy must be a JSON object")
        known = {"schema", "revision", "allocations", "task_overrides", "phase_overrides",
                 "regime_overrides", "retrieval", "compression", "model_preference"}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown policy keys {sorted(unknown)}")
        if data.get("schema", SCHEMA) != SCHEMA:
            raise ValueError(f"policy schema {data.get('schema')!r} is not {SCHEMA}")
        try:
            return cls(
                revision=_int(data.get("revision", 0), "revision"),
                allocations=_alloc_from(data.get("allocations"), "allocations"),
                task_overrides=_overrides_from(data.get("task_overrides", {}), TaskType),
                phase_overrides=_overrides_from(data.get("phase_overrides", {}), Phase),
                regime_overrides=_overrides_from(data.get("regime_overrides", {}), MarketRegime),
                retrieval=_config_from(RetrievalConfig, data.get("retrieval", {})),
                compression=_config_from(CompressionConfig, data.get("compression", {})),
                model_preference=ModelPreference(data.get("model_preference", "balanced")),
            )
        except (TypeError, KeyError) as exc:
            raise ValueError(f"malformed policy: {exc}") from None


def default_policy() -> ContextPolicy:
    """Revision 0: the seed's allocations and overrides."""
    return ContextPolicy()


def affect_shifted(shares: Mapping[Category, float], pad: Pad) -> dict[Category, float]:
    """Seed S3.7's small, zero-sum PAD shifts, before normalisation.

    Categories the overrides switched off (share 0) stay off; the rest keep a 0.01 floor.
    """
    out = {c: float(shares.get(c, 0.0)) for c in Category}
    live = {c for c, v in out.items() if v > 0.0}

    def shift(cat: Category, amount: float) -> None:
        if cat in live:
            out[cat] += amount

    if pad.pleasure < -0.3 and pad.arousal > 0.3:  # stressed: counter confirmation bias
        shift(C.CONTRARIAN, 0.02)
        shift(C.EPISODES, -0.01)
        shift(C.PLAYBOOK, -0.01)
    if pad.dominance < -0.2:  # uncertain: more decision scaffolding
        shift(C.PLAYBOOK, 0.02)
        shift(C.DREAM_HYPOTHESES, -0.01)
        shift(C.CONTRARIAN, -0.01)
    if pad.pleasure > 0.5 and pad.arousal < -0.2:  # complacent: more warnings
        shift(C.CONTRARIAN, 0.015)
        shift(C.AFFECT, -0.015)
    return {c: (max(v, min(AFFECT_FLOOR, shares.get(c, 0.0))) if c in live else 0.0)
            for c, v in out.items()}


def _alloc_dict(allocation: Mapping[Category, float]) -> dict[str, float]:
    return {c.value: float(allocation[c]) for c in Category if c in allocation}


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}: {value!r} is not an integer")
    return value


def _share(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: {value!r} is not a number")
    return float(value)


def _alloc_from(raw: Any, where: str) -> dict[Category, float]:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: expected an object of category shares")
    try:
        return {Category(k): _share(v, f"{where}.{k}") for k, v in raw.items()}
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _overrides_from(raw: Any, kind: type[K]) -> dict[K, dict[Category, float]]:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{kind.__name__} overrides: expected an object")
    return {kind(k): _alloc_from(v, f"{kind.__name__}.{k}") for k, v in raw.items()}


_Cfg = TypeVar("_Cfg", RetrievalConfig, CompressionConfig)


def _config_from(cls: type[_Cfg], raw: Any) -> _Cfg:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{cls.__name__}: expected an object")
    names = {f.name: f for f in fields(cls)}
    unknown = set(raw) - set(names)
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown keys {sorted(unknown)}")
    values: dict[str, Any] = {}
    for name, value in raw.items():
        if names[name].type == "int":
            values[name] = _int(value, f"{cls.__name__}.{name}")
        else:
            values[name] = _share(value, f"{cls.__name__}.{name}")
        if values[name] < 0:
            raise ValueError(f"{cls.__name__}.{name}: {value!r} is negative")
    return cls(**values)

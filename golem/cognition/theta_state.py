"""What Theta keeps in memory between ticks, carried across a clean restart.

The Governor's previous workspace (each assembly's delta is taken against it) and the
I-frame / P-frame bookkeeping (`Keyframes`) live in memory. At a clean stop wiring calls
`save` (data/cognition/theta_state.json, written atomically, with the tick of the last
journalled decision); the next start's first Theta tick calls `load`, which gives them
back only when the decision journal still ends at that tick (a later kill, or a journal
from elsewhere, leaves the file stale: it is ignored, as a first start would be). So a
golem stopped and started again assembles and frames its next tick as if it had not
stopped.

The file is JSON of the workspace's frozen dataclasses: each dataclass as its type name
and init fields, enums by type and value, mappings as key/value pairs, tuples marked
apart from lists (a knowledge fact's lists stay lists).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any

import structlog

from golem.cognition.frames import Keyframes
from golem.governor.categories import Category, MarketRegime, Phase
from golem.governor.workspace import (
    AssemblyReason,
    Block,
    Candidate,
    CognitiveWorkspace,
    Disclosure,
    Exclusion,
    FrameState,
    Knowledge,
    Placed,
    Why,
    WorkspaceDelta,
)
from golem.grimoire.memory_file import atomic_write

log = structlog.get_logger("golem.theta")

STATE_FILE = "theta_state.json"
_TYPES: dict[str, type[Any]] = {t.__name__: t for t in (
    Knowledge, Candidate, Placed, Block, AssemblyReason, Exclusion, WorkspaceDelta,
    CognitiveWorkspace, FrameState)}
_ENUMS: dict[str, type[Enum]] = {t.__name__: t for t in (
    Category, Disclosure, Why, Phase, MarketRegime)}


def save(folder: Path, tick: int, previous: CognitiveWorkspace | None,
         frames: Keyframes) -> None:
    """Write the state after decision `tick` (atomically)."""
    data = {"tick": tick, "previous": _encode(previous),
            "frames": {"state": _encode(frames.state), "keyframe": _encode(frames.keyframe),
                       "links": _encode(frames.links), "chain_tokens": frames.chain_tokens,
                       "sent_at": frames.sent_at}}
    atomic_write(folder / STATE_FILE, json.dumps(data).encode())


def load(folder: Path, tick: int) -> tuple[CognitiveWorkspace | None, Keyframes] | None:
    """The state saved after decision `tick`; None when there is none for that tick."""
    path = folder / STATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("tick") != tick:
            return None
        f = data["frames"]
        frames = Keyframes(state=_decode(f["state"]), keyframe=_decode(f["keyframe"]),
                           links=_decode(f["links"]), chain_tokens=int(f["chain_tokens"]),
                           sent_at=f["sent_at"])
        return _decode(data["previous"]), frames
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("Theta's saved state unreadable; starting without it", path=str(path),
                    error=str(exc))
        return None


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"__type": type(value).__name__,
                **{f.name: _encode(getattr(value, f.name))
                   for f in dataclasses.fields(value) if f.init}}
    if isinstance(value, Enum):
        return {"__enum": type(value).__name__, "value": value.value}
    if isinstance(value, Mapping):
        return {"__map": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"__tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__type" in value:
        fields = {k: _decode(v) for k, v in value.items() if k != "__type"}
        return _TYPES[value["__type"]](**fields)
    if "__enum" in value:
        return _ENUMS[value["__enum"]](value["value"])
    if "__map" in value:
        return {_decode(k): _decode(v) for k, v in value["__map"]}
    if "__tuple" in value:
        return tuple(_decode(v) for v in value["__tuple"])
    raise ValueError(f"unexpected object in Theta's state: {sorted(value)[:3]}")

"""The quality gate: an episode becomes quality_verified only by passing explicit checks.

Storing every experience unfiltered degrades an agent below its no-memory baseline
(seed 000, the self-degradation trap), so nothing is verified by default. Checks:

- the payload is a decoded event we know (a registered chain event, a revert, or a
  strategy outcome), with the arguments that event must carry;
- sizes are finite and non-negative where the ABI says unsigned; Sync reserves are
  positive; an oracle answer is positive; a strategy outcome has a known result and
  a finite P&L;
- when prediction outcomes from the decision journal cover the episode (same tick
  range and, when named, the same subject address), they are recorded in the reason
  as independent confirmation. A missed prediction does not reject an episode: the
  gate asks whether the record is sound, not whether the golem guessed right.

Pure: returns (verified, reason).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from golem.chain.decoding import KNOWN_EVENTS
from golem.grimoire.payloads import OUTCOME_CATEGORY, REVERT_CATEGORY, REVERT_EVENT
from golem.grimoire.records import Episode

# event name -> the ABIs registered under it ({arg name -> ABI type}); ERC20 and ERC721
# Transfer share a name and differ in argument names.
_ABI: dict[str, list[dict[str, str]]] = {}
for _spec in KNOWN_EVENTS:
    _ABI.setdefault(_spec.name, []).append({p.name: p.type for p in _spec.params})
_POSITIVE = {("Sync", "reserve0"), ("Sync", "reserve1"), ("AnswerUpdated", "current")}
RESULTS = ("ok", "reverted")


@dataclass(frozen=True)
class PredictionOutcome:
    """A scored prediction: it covered ticks [from_tick, to_tick] of ``subject``."""

    from_tick: int
    to_tick: int
    subject: str | None
    hit: bool


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _check_args(name: str, args: Mapping[str, Any]) -> str | None:
    shapes = _ABI.get(name)
    if shapes is None:
        return f"unknown event {name!r}"
    abi = next((a for a in shapes if set(a) == set(args)), None)
    if abi is None:
        return f"{name}: arguments {sorted(args)} do not match its ABI"
    for arg, abi_type in abi.items():
        if not abi_type.startswith(("uint", "int")):
            continue
        value = _number(args[arg])
        if value is None or not math.isfinite(value):
            return f"{name}.{arg} is not a finite number"
        if abi_type.startswith("uint") and value < 0:
            return f"{name}.{arg} is negative for an unsigned {abi_type}"
        if (name, arg) in _POSITIVE and value <= 0:
            return f"{name}.{arg} must be > 0, got {args[arg]}"
    return None


def _revert(p: Mapping[str, Any]) -> str | None:
    if p.get("event") != REVERT_EVENT or not p.get("address") or not p.get("function"):
        return "revert episode without event Reverted, address and function"
    return None


def _outcome(p: Mapping[str, Any]) -> str | None:
    pnl = _number(p.get("pnl_usd"))
    if not isinstance(p.get("action"), str) or p.get("result") not in RESULTS:
        return "strategy outcome without an action and a result of ok or reverted"
    if pnl is None or not math.isfinite(pnl):
        return "strategy outcome without a finite pnl_usd"
    return None


def consistency(episode: Episode) -> str | None:
    """Why the episode's payload is inconsistent, or None if it is sound."""
    p = episode.payload
    if episode.category == REVERT_CATEGORY:
        return _revert(p)
    if episode.category == OUTCOME_CATEGORY:
        return _outcome(p)
    return _event(p)


def _event(p: Mapping[str, Any]) -> str | None:
    name, args = p.get("event"), p.get("args")
    if not isinstance(name, str) or name == "unknown":
        return "not a decoded event"
    if not isinstance(args, Mapping):
        return f"{name}: no decoded arguments"
    if not isinstance(p.get("address"), str) or not p["address"]:
        return f"{name}: no emitting address"
    return _check_args(name, args)


def covering(episode: Episode, outcomes: Sequence[PredictionOutcome]) -> list[PredictionOutcome]:
    address = str(episode.payload.get("address") or "").lower()
    return [o for o in outcomes if o.from_tick <= episode.tick <= o.to_tick
            and (o.subject is None or o.subject.lower() == address)]


def verify(episode: Episode,
           outcomes: Sequence[PredictionOutcome] = ()) -> tuple[bool, str]:
    """(verified, reason): the gate for one episode."""
    problem = consistency(episode)
    if problem is not None:
        return False, problem
    covered = covering(episode, outcomes)
    if covered:
        hits = sum(o.hit for o in covered)
        return True, (f"consistent; covered by {len(covered)} scored predictions "
                      f"({hits} hit)")
    return True, "consistent"

"""What a Theta tick decided, parsed from the model's text against a fixed schema (pure).

The model is asked for one JSON object:

    {"analysis": str,
     "predictions": [{"subject": str, "quantity": "price_move", "direction": "up"|"down"|"flat",
                      "magnitude": float, "confidence": float, "horizon_ticks": int}],
     "actions": [{"kind": str, "contract": str, "asset_in": str, "asset_out": str,
                  "amount": float, "notional_usd": float, "reason": str}],
     "referenced": [str],          # grimoire:// sources the decision relied on
     "missing_context": [str]}     # what the model wished it had been shown

Output that does not fit is recorded as malformed with every problem named, and is
never acted on: a half-parsed decision is worse than none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from golem.actions.proposal import ACTION_KINDS, ProposedAction
from golem.cognition.predictions import Outlook

DIRECTIONS = ("up", "down", "flat")
MAX_ANALYSIS_CHARS = 4000
MAX_ITEMS = 20
# Decision fields outside the schema
OURS = ("attribution", "outlook", "skipped_knowledge", "outlooks")
_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


@dataclass(frozen=True)
class Prediction:
    subject: str  # what is predicted, e.g. a pool address or "ETH/USD"
    quantity: str
    direction: str
    magnitude: float  # fractional move, e.g. 0.02 for 2%
    confidence: float
    horizon_ticks: int


@dataclass(frozen=True)
class Decision:
    analysis: str
    predictions: tuple[Prediction, ...] = ()
    actions: tuple[ProposedAction, ...] = ()
    referenced: tuple[str, ...] = ()
    missing_context: tuple[str, ...] = ()
    # The fields below are ours, never the model's (decision_to_dict drops them).
    # (entry uri, how much it moved the predicted mean return), largest first: which
    # knowledge drove the prediction (empty when nothing learned did)
    attribution: tuple[tuple[str, float], ...] = ()
    # the offline tier's probabilities of down, flat and up over the horizon
    outlook: Outlook | None = None
    # consolidated facts in view that were malformed and so ignored
    skipped_knowledge: int = 0
    # the offline tier's two forecasters' outlooks (down, flat, up), (knowledge, prior),
    # whatever weight it gave them (golem.cognition.experts); None for a model's decision
    outlooks: tuple[Outlook, Outlook] | None = None


@dataclass(frozen=True)
class Malformed:
    """The model's output could not be read as a decision; `problems` say why."""

    problems: tuple[str, ...]
    raw: str = field(repr=False, default="")


def parse_decision(text: str) -> Decision | Malformed:
    """Read the decision object from model text (bare JSON or a ```json fence)."""
    raw = text[:MAX_ANALYSIS_CHARS * 4]
    candidate = _json_object(text)
    if candidate is None:
        return Malformed(("no JSON object found in the response",), raw)
    try:
        data = json.loads(candidate)
    except ValueError as exc:
        return Malformed((f"invalid JSON: {exc}",), raw)
    if not isinstance(data, dict):
        return Malformed(("the decision must be a JSON object",), raw)
    problems: list[str] = []
    analysis = data.get("analysis")
    if not isinstance(analysis, str) or not analysis.strip():
        problems.append("analysis: a non-empty string is required")
        analysis = ""
    predictions = _items(data, "predictions", _prediction, problems)
    actions = _items(data, "actions", _action, problems)
    referenced = _strings(data, "referenced", problems)
    missing = _strings(data, "missing_context", problems)
    unknown = sorted(set(data) - {"analysis", "predictions", "actions", "referenced",
                                  "missing_context"})
    if unknown:
        problems.append(f"unknown keys: {', '.join(unknown)}")
    if problems:
        return Malformed(tuple(problems), raw)
    return Decision(analysis[:MAX_ANALYSIS_CHARS], tuple(predictions), tuple(actions),
                    tuple(referenced), tuple(missing))


def decision_to_dict(decision: Decision) -> dict[str, Any]:
    """The decision in the model's schema (OURS: attribution, outlook, skipped knowledge
    and outlooks are ours, never the model's)."""
    data = asdict(decision)
    for ours in OURS:
        del data[ours]
    return data


def _json_object(text: str) -> str | None:
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    return text[start:end + 1] if 0 <= start < end else None


def _items(data: Mapping[str, Any], key: str, build: Any, problems: list[str]) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        problems.append(f"{key}: must be a list")
        return []
    if len(value) > MAX_ITEMS:
        problems.append(f"{key}: at most {MAX_ITEMS} items, got {len(value)}")
        return []
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            problems.append(f"{key}[{i}]: must be an object")
            continue
        try:
            out.append(build(item))
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"{key}[{i}]: {exc}")
    return out


def _strings(data: Mapping[str, Any], key: str, problems: list[str]) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"{key}: must be a list of strings")
        return []
    return [v[:500] for v in value[:MAX_ITEMS]]


def _num(item: Mapping[str, Any], key: str, lo: float, hi: float) -> float:
    value = item[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{key} must be a number")
    if not lo <= float(value) <= hi:
        raise ValueError(f"{key} must be in [{lo:g}, {hi:g}], got {value}")
    return float(value)


def _text(item: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = item.get(key, default)
    if not isinstance(value, str):
        raise TypeError(f"{key} must be a string")
    return value[:200]


def _prediction(item: Mapping[str, Any]) -> Prediction:
    direction = _text(item, "direction")
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}")
    horizon = item.get("horizon_ticks")
    if isinstance(horizon, bool) or not isinstance(horizon, int) or not 1 <= horizon <= 10_000:
        raise ValueError("horizon_ticks must be an integer in [1, 10000]")
    return Prediction(_text(item, "subject"), _text(item, "quantity", "price_move"), direction,
                      _num(item, "magnitude", 0.0, 10.0), _num(item, "confidence", 0.0, 1.0),
                      horizon)


def _action(item: Mapping[str, Any]) -> ProposedAction:
    kind = _text(item, "kind")
    if kind not in ACTION_KINDS:
        raise ValueError(f"kind must be one of {', '.join(ACTION_KINDS)}")
    return ProposedAction(kind, _text(item, "contract", ""), _text(item, "asset_in", ""),
                          _text(item, "asset_out", ""),
                          _num(item, "amount", 0.0, 1e30) if "amount" in item else 0.0,
                          _num(item, "notional_usd", 0.0, 1e15) if "notional_usd" in item
                          else 0.0,
                          _text(item, "reason", ""))

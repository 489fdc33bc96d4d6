"""Fact candidates: what extraction proposes, and how a repeat sighting reinforces it.

Every candidate carries a stable identity ``key`` (also stored as ``fact["key"]``), so a
later run recognises "the same fact" and reinforces it instead of writing a twin.

Anti-knowledge and procedural facts read the revert and action-outcome episodes
whose conventions golem.grimoire.payloads defines.

Pure: records in, records out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from golem.grimoire.payloads import OUTCOME_CATEGORY, REVERT_CATEGORY, REVERT_EVENT
from golem.grimoire.records import (
    DecayClass,
    EntryType,
    Episode,
    FactKind,
    InsightCategory,
    SemanticEntry,
)

MAX_SOURCES = 32  # source episode ids kept per fact (the newest)


@dataclass(frozen=True)
class FactCandidate:
    key: str
    text: str
    fact_kind: FactKind
    entry_type: EntryType
    category: InsightCategory
    decay_class: DecayClass
    confidence: float
    fact: dict[str, Any]  # includes "key"
    episodes: int  # supporting episodes this run
    observed_from: float
    observed_to: float
    source_episodes: tuple[str, ...] = ()
    protocols: tuple[str, ...] = ()
    tokens: tuple[str, ...] = ()
    importance: float = 0.5
    links: tuple[str, str] | None = field(default=None)  # (cause key, effect key)


def span(episodes: Sequence[Episode]) -> tuple[float, float]:
    times = [e.observed_at for e in episodes]
    return (min(times), max(times)) if times else (0.0, 0.0)


def sources(episodes: Sequence[Episode]) -> tuple[str, ...]:
    newest = sorted(episodes, key=lambda e: (e.observed_at, e.id))[-MAX_SOURCES:]
    return tuple(e.id for e in newest)


def _gerund(action: str) -> str:
    word = action.strip().lower() or "calling"
    if word.endswith("ing"):
        return word.capitalize()
    return (word[:-1] if word.endswith("e") else word).capitalize() + "ing"


def anti_knowledge(episodes: Sequence[Episode], min_reverts: int = 3,
                   min_share: float = 0.8) -> list[FactCandidate]:
    """Repeated reverts of one (address, function): never try it again. Attempts are the
    reverts plus successful strategy outcomes naming the same address and function."""
    reverts: dict[tuple[str, str], list[Episode]] = {}
    successes: dict[tuple[str, str], int] = {}
    for e in episodes:
        p = e.payload
        addr, fn = str(p.get("address") or "").lower(), str(p.get("function") or "")
        if e.category == REVERT_CATEGORY and p.get("event") == REVERT_EVENT and addr:
            reverts.setdefault((addr, fn), []).append(e)
        elif e.category == OUTCOME_CATEGORY and p.get("result") == "ok" and addr:
            successes[(addr, fn)] = successes.get((addr, fn), 0) + 1
    out = []
    for (addr, fn), eps in sorted(reverts.items()):
        k, n = len(eps), len(eps) + successes.get((addr, fn), 0)
        if k < min_reverts or k / n < min_share:
            continue
        last = max(eps, key=lambda e: (e.observed_at, e.id)).payload
        token = last.get("token")
        action = str(last.get("action") or "calling")
        what = f"{_gerund(action)} {token}" if token else _gerund(action)
        text = (f"{what} through {fn or 'a call'} at {addr} reverts: {k} of {n} attempts "
                "failed. Do not retry it.")
        key = f"anti|{addr}|{fn}"
        lo, hi = span(eps)
        out.append(FactCandidate(
            key=key, text=text, fact_kind=FactKind.ANTI_KNOWLEDGE,
            entry_type=EntryType.ANTI_KNOWLEDGE, category=InsightCategory.RISK_EVENTS,
            decay_class=DecayClass.STRATEGIC, confidence=min(0.75, 0.5 + 0.05 * k),
            fact={"key": key, "warning": text, "address": addr, "function": fn,
                  "token": token, "action": action, "reverts": k, "attempts": n},
            episodes=k, observed_from=lo, observed_to=hi, source_episodes=sources(eps),
            tokens=(str(token),) if token else (), importance=0.9))
    return out


def procedural(episodes: Sequence[Episode], min_outcomes: int = 3) -> list[FactCandidate]:
    """Success rate and mean P&L per action, from strategy_outcome episodes."""
    by_action: dict[str, list[Episode]] = {}
    for e in episodes:
        if e.category == OUTCOME_CATEGORY and isinstance(e.payload.get("action"), str):
            by_action.setdefault(e.payload["action"], []).append(e)
    out = []
    for action, eps in sorted(by_action.items()):
        if len(eps) < min_outcomes:
            continue
        ok = sum(1 for e in eps if e.payload.get("result") == "ok")
        pnls = [float(p) for e in eps if isinstance(p := e.payload.get("pnl_usd"), int | float)
                and not isinstance(p, bool) and math.isfinite(p)]
        mean = sum(pnls) / len(pnls) if pnls else 0.0
        key = f"procedural|{action}"
        fact: dict[str, Any] = {"key": key, "strategy": action, "attempts": len(eps),
                                "succeeded": ok, "pnl_n": len(pnls), "pnl_mean_usd": mean}
        text = procedural_text(fact)
        fact["observation"] = text
        lo, hi = span(eps)
        out.append(FactCandidate(
            key=key, text=text, fact_kind=FactKind.PROCEDURAL,
            entry_type=EntryType.STRATEGY_FRAGMENT, category=InsightCategory.STRATEGIC_PATTERNS,
            decay_class=DecayClass.STRATEGIC, confidence=min(0.7, 0.4 + 0.03 * len(eps)),
            fact=fact, episodes=len(eps), observed_from=lo, observed_to=hi,
            source_episodes=sources(eps), importance=0.7))
    return out


def procedural_text(fact: dict[str, Any]) -> str:
    n, ok = int(fact["attempts"]), int(fact["succeeded"])
    return (f"Action '{fact['strategy']}' succeeded {ok} of {n} times "
            f"({ok / n:.0%}); mean P&L {fact['pnl_mean_usd']:+.2f} USD per attempt.")


def reinforce_step(confidence: float, step: float) -> float:
    """A repeat sighting moves confidence a step towards 1 (never past 0.95)."""
    return min(0.95, max(confidence, confidence + (1.0 - confidence) * step))


def merge(existing: SemanticEntry, cand: FactCandidate, *, now: float, step: float,
          merged_fact: dict[str, Any], text: str) -> SemanticEntry:
    """The reinforced entry: counts, observed range, confidence, decay reference."""
    confidence = reinforce_step(existing.confidence, step)
    lo = cand.observed_from if existing.observed_from is None else \
        min(existing.observed_from, cand.observed_from)
    hi = cand.observed_to if existing.observed_to is None else \
        max(existing.observed_to, cand.observed_to)
    kept = tuple(dict.fromkeys((*existing.source_episodes, *cand.source_episodes)))
    return replace(existing, text=text, fact=merged_fact, confidence=confidence,
                   reinforced_confidence=confidence, last_reinforced=now,
                   episode_count=existing.episode_count + cand.episodes,
                   observed_from=lo, observed_to=hi, source_episodes=kept[-MAX_SOURCES:])

"""The death reflection (Thanatopsis Phase II): nine categories, from the Grimoire's own
record (offline) or by the strongest model over that same evidence.

Gathering reads the stores; everything else here is pure. The model's reply is
untrusted text: it must be one JSON object with exactly the nine keys, each a list of
short strings, or it is rejected whole and the offline synthesis stands (and says so).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from golem.cognition.journal import latest as journal_latest
from golem.consolidation.curator_signals import is_dream
from golem.consolidation.mutations import read_mutation_rows
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import EntryType, FactKind, SemanticEntry, Status
from golem.mortality.categories import REFLECTION_CATEGORIES

MAX_ITEMS = 8  # per category
MAX_ITEM_CHARS = 280
MAX_TEXT_BYTES = 5_000
OFFLINE = "offline"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

Categories = dict[str, list[str]]


@dataclass(frozen=True)
class Evidence:
    """What the golem knows about its own life, already reduced to short lines."""

    cause: str
    facts: tuple[str, ...] = ()  # active knowledge, most confident first
    anti: tuple[str, ...] = ()  # anti-knowledge and warnings
    refuted: tuple[str, ...] = ()  # Loop 3 mutations refuted, entries quarantined as wrong
    staged: tuple[str, ...] = ()  # hypotheses still awaiting evidence
    confused: tuple[str, ...] = ()  # quarantined / contradicted entries
    never_tested: tuple[str, ...] = ()  # dreams expired unconfirmed, mutations never trialled
    validated: tuple[str, ...] = ()  # Loop 3 mutations that survived their trial
    market: tuple[str, ...] = ()  # baselines and decision-journal statistics


def _line(e: SemanticEntry) -> str:
    return clean(f"{e.text} (confidence {e.confidence:.2f})")


def clean(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    text = " ".join(_CONTROL.sub(" ", text).split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


async def gather(grimoire: Grimoire, data_dir: Path, cause: str, *, limit: int = 12) -> Evidence:
    """Read the Grimoire, Loop 3's mutations and the decision journal (read-only)."""
    own = await grimoire.entries()
    mutations = read_mutation_rows(data_dir)
    return evidence_from(cause, own, mutations, journal_latest(data_dir), limit=limit)


def evidence_from(cause: str, entries: Sequence[SemanticEntry],
                  mutations: Sequence[tuple[Any, ...]], journal: Mapping[str, Any] | None,
                  *, limit: int = 12) -> Evidence:
    """Pure: sort the record into evidence lines (deterministic order)."""
    def top(items: list[SemanticEntry]) -> tuple[str, ...]:
        items.sort(key=lambda e: (-e.confidence, e.id))
        return tuple(_line(e) for e in items[:limit])

    anti_kinds = (EntryType.ANTI_KNOWLEDGE, EntryType.WARNING)
    live = [e for e in entries if e.status in (Status.ACTIVE, Status.ARCHIVED)]
    facts = top([e for e in live if e.entry_type not in anti_kinds
                 and e.fact_kind is not FactKind.BASELINE])
    anti = top([e for e in entries if e.status is not Status.PRUNED
                and (e.entry_type in anti_kinds or e.fact_kind is FactKind.ANTI_KNOWLEDGE)])
    staged = top([e for e in entries if e.status is Status.STAGED])
    confused = top([e for e in entries if e.status is Status.QUARANTINED])
    expired = top([e for e in entries if e.status is Status.PRUNED and is_dream(e)])
    baselines = top([e for e in live if e.fact_kind is FactKind.BASELINE])
    by_status: dict[str, list[str]] = {}
    for status, body in mutations:
        try:
            m = json.loads(body)
            text = f"Loop 3 mutation {m.get('name', '?')}: {m.get('rationale', '')}"
        except (TypeError, ValueError):
            continue
        by_status.setdefault(str(status), []).append(clean(text))
    market = list(baselines)
    if journal:
        quality = journal.get("mean_quality")
        market.append(clean(
            f"{journal.get('predictions', 0)} predictions made, {journal.get('scored', 0)} "
            f"scored, {journal.get('hits', 0)} hit"
            + (f", mean quality {quality:.2f}" if isinstance(quality, float) else "")
            + f"; last decision at tick {journal.get('tick')}: {journal.get('summary', '')}"))
    return Evidence(
        cause=clean(cause), facts=facts, anti=anti, staged=staged, confused=confused,
        refuted=tuple(by_status.get("refuted", [])[:limit]),
        never_tested=expired + tuple(by_status.get("staged", [])[:limit]),
        validated=tuple(by_status.get("validated", [])[:limit]), market=tuple(market[:limit]))


def offline_reflection(ev: Evidence) -> Categories:
    """The structured synthesis when no model may speak: the record, sorted and labelled."""
    honest = "nothing recorded"
    cats: Categories = {
        "what_worked": [*ev.facts, *ev.validated],
        "what_failed": [*ev.anti, *ev.refuted],
        "suspected_unproven": list(ev.staged),
        "what_confused_me": list(ev.confused),
        "never_tested": list(ev.never_tested),
        "market_beliefs": list(ev.market),
        "warnings": [f"I died of: {ev.cause}", *ev.anti],
        "would_do_differently": _differently(ev),
        "open_questions": [f"Is it true that {s}?" for s in ev.staged[:4]]
        + [f"Would it have worked: {s}" for s in ev.never_tested[:3]],
    }
    return {k: [clean(x) for x in v[:MAX_ITEMS]] or [honest] for k, v in cats.items()}


def _differently(ev: Evidence) -> list[str]:
    out = [f"Act earlier on what killed me ({ev.cause})."]
    if ev.never_tested:
        out.append(f"Test hypotheses sooner: {len(ev.never_tested)} were never tried.")
    if ev.refuted or ev.anti:
        out.append("Check the warnings I learnt before acting; they were paid for.")
    if not ev.facts:
        out.append("Spend more of the budget observing before trusting any belief.")
    return out


def render(cats: Mapping[str, Sequence[str]], *, header: str,
           max_bytes: int = MAX_TEXT_BYTES) -> str:
    """Markdown, at most ``max_bytes`` UTF-8 bytes: items are dropped from the longest
    category first, so every category keeps at least its first line."""
    lists = {k: list(cats.get(k, ())) for k in REFLECTION_CATEGORIES}

    def text() -> str:
        parts = [header]
        for key, heading in REFLECTION_CATEGORIES.items():
            parts.append(f"\n## {heading}")
            parts.extend(f"- {item}" for item in lists[key])
        return "\n".join(parts) + "\n"

    out = text()
    while len(out.encode()) > max_bytes:
        key = max(lists, key=lambda k: (len(lists[k]), k))
        if len(lists[key]) <= 1:
            return out.encode()[:max_bytes].decode(errors="ignore")
        lists[key].pop()
        out = text()
    return out


SYSTEM = ("You are a dying autonomous DeFi agent writing your death reflection for your "
          "successor. Answer with ONE JSON object and nothing else. Its keys are exactly: "
          + ", ".join(REFLECTION_CATEGORIES) + f". Each value is a list of at most {MAX_ITEMS}"
          f" plain strings of at most {MAX_ITEM_CHARS} characters. Be specific and honest; "
          "claim nothing the evidence does not support; put unproven ideas under "
          "suspected_unproven.")


def prompt(ev: Evidence) -> str:
    sections = {"Cause of death": [ev.cause], "Knowledge I hold": ev.facts,
                "Anti-knowledge and warnings": ev.anti, "Refuted ideas": ev.refuted,
                "Hypotheses awaiting evidence": ev.staged, "Quarantined beliefs": ev.confused,
                "Never tested": ev.never_tested, "Validated changes": ev.validated,
                "Market record": ev.market}
    return "\n\n".join(f"# {title}\n" + "\n".join(f"- {x}" for x in items or ["(none)"])
                       for title, items in sections.items())


class MalformedReflection(ValueError):
    """The model's reply is not the reflection we asked for."""


def parse(text: str) -> Categories:
    """Strict: one JSON object (optionally fenced), exactly the nine keys, lists of strings."""
    body = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.DOTALL)
    if fenced:
        body = fenced.group(1)
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise MalformedReflection(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise MalformedReflection("not a JSON object")
    keys = set(data)
    if keys != set(REFLECTION_CATEGORIES):
        missing, extra = set(REFLECTION_CATEGORIES) - keys, keys - set(REFLECTION_CATEGORIES)
        raise MalformedReflection(f"keys wrong: missing {sorted(missing)}, extra {sorted(extra)}")
    out: Categories = {}
    for key in REFLECTION_CATEGORIES:
        value = data[key]
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise MalformedReflection(f"{key}: not a list of strings")
        items = [clean(x) for x in value[:MAX_ITEMS] if x.strip()]
        out[key] = items or ["nothing recorded"]
    return out

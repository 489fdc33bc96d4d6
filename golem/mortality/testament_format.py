"""The testament's JSON form: encoding, strict decoding, and the Weismann barrier.

Decoding checks every field a successor relies on (version, categories, sizes, the
bottleneck) and refuses fact fields that carry exact strategy parameters, so a
hand-edited or foreign file cannot smuggle them across a death either.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict
from typing import Any

from golem.grimoire.records import EntryType, FactKind, InsightCategory
from golem.mortality import testament_model as tm
from golem.mortality.categories import REFLECTION_CATEGORIES
from golem.mortality.testament_model import Testament, TestamentEntry


class FormatProblem(ValueError):
    """One reason a testament is invalid (the caller prefixes where)."""


# Fact fields that hold strategy parameters, money or caches: they never cross.
_FORBIDDEN_KEY = re.compile(
    r"pnl|usd|size|amount|notional|position|cage|policy|revision|cache|balance|param"
    r"|price_limit|slippage_bps|wallet|key$|secret", re.IGNORECASE)
_ALLOWED_KEYS = frozenset({"key"})  # a fact's identity, not a parameter
# Money figures in free text ("+12.50 USD", "$3,100", "-0.4 usd").
_MONEY = re.compile(r"[+-]?\$\s?\d[\d,]*(?:\.\d+)?|[+-]?\d[\d,]*(?:\.\d+)?\s?(?:USD|usd)\b")


def forbidden_keys(fact: dict[str, Any]) -> list[str]:
    """The fact's keys (at any depth) the Weismann barrier stops."""
    found: list[str] = []
    for k, v in fact.items():
        if k not in _ALLOWED_KEYS and _FORBIDDEN_KEY.search(k):
            found.append(k)
        elif isinstance(v, dict):
            found.extend(f"{k}.{sub}" for sub in forbidden_keys(v))
    return found


def barrier_fact(fact: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``fact`` without forbidden keys (nested dicts cleaned too)."""
    out: dict[str, Any] = {}
    for k, v in fact.items():
        if k not in _ALLOWED_KEYS and _FORBIDDEN_KEY.search(k):
            continue
        out[k] = barrier_fact(v) if isinstance(v, dict) else v
    return out


def barrier_text(text: str) -> str:
    """Money figures masked: the lesson crosses, the exact amount does not."""
    return _MONEY.sub("<amount>", text)


# Standalone numbers (not inside hex addresses or identifiers).
_NUMBER = re.compile(r"(?<![\w.])[+-]?\d[\d,]*(?:\.\d+)?(?!\w|\.\d)")


def mask_numbers(text: str) -> str:
    """An episode's exact figures masked: its shape crosses, its payload does not."""
    return _NUMBER.sub("#", text)


def has_money(text: str) -> bool:
    return _MONEY.search(text) is not None


# -- encode ------------------------------------------------------------------------------

def entry_json(e: TestamentEntry) -> dict[str, Any]:
    raw = asdict(e)
    raw["kind"] = e.kind.value
    return raw


def testament_json(t: Testament) -> dict[str, Any]:
    raw = {k: v for k, v in asdict(t).items() if k != "entries"}
    raw["entries"] = [entry_json(e) for e in t.entries]
    return raw


# -- decode ------------------------------------------------------------------------------

def testament_from_json(raw: Any) -> Testament:

    if not isinstance(raw, dict):
        raise FormatProblem("not a JSON object")
    version = raw.get("version")
    if version != tm.TESTAMENT_VERSION:
        raise FormatProblem(f"unsupported testament version {version!r} "
                            f"(this build reads version {tm.TESTAMENT_VERSION})")
    if raw.get("provenance") != tm.PROVENANCE:
        raise FormatProblem(f"provenance must be {tm.PROVENANCE!r}")
    max_entries = _int(raw, "max_entries", 1, tm.MAX_ENTRIES)
    entries = raw.get("entries")
    if not isinstance(entries, list):
        raise FormatProblem("entries: must be a list")
    if len(entries) > max_entries:
        raise FormatProblem(f"entries: {len(entries)} over the bottleneck of {max_entries}")
    reflection_text = _str(raw, "reflection_text", None)
    if len(reflection_text.encode()) > tm.MAX_REFLECTION_BYTES:
        raise FormatProblem(f"reflection_text: {len(reflection_text.encode())} bytes, over "
                            f"{tm.MAX_REFLECTION_BYTES}")
    parent = raw.get("parent_testament_id")
    if parent is not None and not isinstance(parent, str):
        raise FormatProblem("parent_testament_id: must be a string or null")
    stats = raw.get("stats", {})
    if not isinstance(stats, dict):
        raise FormatProblem("stats: must be an object")
    return tm.Testament(
        version=tm.TESTAMENT_VERSION, testament_id=_str(raw, "testament_id", 128, empty=False),
        golem_name=_str(raw, "golem_name", 64, empty=False),
        namespace=_str(raw, "namespace", 64, empty=False),
        golem_id=_str(raw, "golem_id", 128, empty=False),
        generation=_int(raw, "generation", 0, 1_000_000), parent_testament_id=parent,
        died_at=_float(raw, "died_at"), cause=_str(raw, "cause", 1000),
        provenance=tm.PROVENANCE, reflection=_reflection(raw.get("reflection")),
        reflection_text=reflection_text,
        reflection_source=_str(raw, "reflection_source", 200, empty=False),
        entries=tuple(_entry(e, i) for i, e in enumerate(entries)), max_entries=max_entries,
        playbook_md=_str(raw, "playbook_md", tm.MAX_SNAPSHOT_CHARS),
        memory_md=_str(raw, "memory_md", tm.MAX_SNAPSHOT_CHARS), stats=stats)


def _reflection(raw: Any) -> dict[str, list[str]]:
    if not isinstance(raw, dict):
        raise FormatProblem("reflection: must be an object")
    unknown = sorted(set(raw) - set(REFLECTION_CATEGORIES))
    missing = sorted(set(REFLECTION_CATEGORIES) - set(raw))
    if unknown or missing:
        raise FormatProblem(f"reflection: categories differ (unknown {unknown}, "
                            f"missing {missing})")
    out: dict[str, list[str]] = {}
    for key in REFLECTION_CATEGORIES:
        items = raw[key]
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise FormatProblem(f"reflection.{key}: must be a list of strings")
        out[key] = list(items)
    return out


def _entry(raw: Any, i: int) -> TestamentEntry:

    where = f"entries[{i}]"
    if not isinstance(raw, dict):
        raise FormatProblem(f"{where}: must be an object")
    try:
        kind = tm.EntryKind(str(raw.get("kind")))
    except ValueError:
        raise FormatProblem(f"{where}.kind: unknown kind {raw.get('kind')!r}") from None
    fact = raw.get("fact", {})
    conditions = raw.get("conditions", {})
    if not isinstance(fact, dict) or not isinstance(conditions, dict):
        raise FormatProblem(f"{where}: fact and conditions must be objects")
    leaked = forbidden_keys(fact) + forbidden_keys(conditions)
    if leaked:
        raise FormatProblem(f"{where}: carries strategy parameters ({', '.join(leaked)}); "
                            "the Weismann barrier forbids them")
    bloodstain = raw.get("bloodstain", False)
    if not isinstance(bloodstain, bool):
        raise FormatProblem(f"{where}.bloodstain: must be true or false")
    return tm.TestamentEntry(
        kind=kind, text=_str(raw, "text", tm.MAX_ENTRY_CHARS, empty=False, where=where),
        confidence=_unit(raw, "confidence", where), importance=_unit(raw, "importance", where),
        generation=_int(raw, "generation", 0, 1_000_000, where),
        entry_type=_enum(raw, "entry_type", EntryType, where),
        fact_kind=_enum(raw, "fact_kind", FactKind, where),
        category=_enum(raw, "category", InsightCategory, where), fact=fact,
        bloodstain=bloodstain, conditions=conditions,
        source_id=_str(raw, "source_id", 200, where=where))


def _str(raw: dict[str, Any], key: str, limit: int | None, *, empty: bool = True,
         where: str = "") -> str:
    value = raw.get(key)
    name = f"{where}.{key}" if where else key
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise FormatProblem(f"{name}: must be a{'' if empty else ' non-empty'} string")
    if limit is not None and len(value) > limit:
        raise FormatProblem(f"{name}: {len(value)} characters, over {limit}")
    return value


def _int(raw: dict[str, Any], key: str, lo: int, hi: int, where: str = "") -> int:
    value = raw.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise FormatProblem(f"{where + '.' if where else ''}{key}: must be an integer in "
                            f"[{lo}, {hi}], got {value!r}")
    return value


def _float(raw: dict[str, Any], key: str, where: str = "") -> float:
    value = raw.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise FormatProblem(f"{where + '.' if where else ''}{key}: must be a finite number")
    return float(value)


def _unit(raw: dict[str, Any], key: str, where: str) -> float:
    value = _float(raw, key, where)
    if not 0.0 <= value <= 1.0:
        raise FormatProblem(f"{where}.{key}: must be in [0, 1], got {value}")
    return value


def _enum(raw: dict[str, Any], key: str, enum: type[Any], where: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    try:
        return str(enum(value).value)
    except ValueError:
        raise FormatProblem(f"{where}.{key}: unknown value {value!r}") from None

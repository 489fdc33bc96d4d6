"""Contradiction checks for new semantic claims (seed 001: the curator's consistency check).

A new claim that conflicts with a trusted entry (anchored, or at least
``quarantine_confidence``) is quarantined for the curator to adjudicate: it is
never merged into, and never overwrites, what the golem already trusts.

Two entries contradict when they talk about the same subject (their embeddings
are at least ``threshold`` similar, and they do not name disjoint identifiers:
contract addresses in the text, or metadata protocols, tokens or chains) and one
of these holds:

- opposite polarity: exactly one of the two texts carries a negation marker
  (``no``, ``not``, ``never``, ``avoid``, ``fails``, ``reverts``, any ``n't``, ...).
  Deliberately simple: it is a tripwire for the curator, not a parser;
- two BASELINE facts on the same metric whose means differ by more than
  ``baseline_k`` combined standard deviations (sqrt(s1^2 + s2^2));
- two CAUSAL_RELATION facts with the same cause and effect whose encoded sign
  (``fact["sign"]`` or ``fact["direction"]``: +1/-1, "up"/"down",
  "increase"/"decrease", "positive"/"negative") is opposite.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from golem.grimoire.records import FactKind, SemanticEntry

Vector = npt.NDArray[np.float32]

DEFAULT_SIMILARITY = 0.75
DEFAULT_BASELINE_K = 2.0

NEGATIONS = frozenset({
    "no", "not", "never", "none", "nothing", "neither", "nor", "cannot", "without",
    "avoid", "avoids", "avoided", "avoiding",
    "fail", "fails", "failed", "failing",
    "revert", "reverts", "reverted", "reverting",
    "dont", "doesnt", "didnt", "wont", "cant", "isnt", "arent", "wasnt", "shouldnt",
})
_WORD = re.compile(r"[a-z0-9']+")
_ADDRESS = re.compile(r"\b0x[0-9a-f]{4,}\b")
_SIGNS = {
    "+": 1, "+1": 1, "1": 1, "up": 1, "increase": 1, "increases": 1, "positive": 1,
    "-": -1, "-1": -1, "down": -1, "decrease": -1, "decreases": -1, "negative": -1,
}


@dataclass(frozen=True)
class Conflict:
    """An existing entry the new claim contradicts, and why."""

    entry: SemanticEntry
    reason: str


@dataclass(frozen=True)
class ContradictionReport:
    """What the check found. ``against``/``reasons`` are the trusted conflicts only."""

    quarantined: bool
    against: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    conflicts: tuple[tuple[str, str], ...] = ()  # every (entry id, reason), trusted or not


def cosine(a: Vector, b: Vector) -> float:
    """Cosine similarity; 0 when either vector has no direction."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0 or a.shape != b.shape:
        return 0.0
    return float(np.dot(a, b)) / (na * nb)


def negated(text: str) -> bool:
    """True when the text carries an odd number of negation markers (see NEGATIONS).

    Parity, so a double negative reads as affirmative: "sells never revert" is the
    opposite of "sells always revert", and "is not a honeypot, sells don't fail"
    affirms what "sells fail" denies.
    """
    count = 0
    for word in _WORD.findall(text.lower().replace("\u2019", "'")):
        token = word.strip("'")
        if token.endswith("n't") or token.replace("'", "") in NEGATIONS:
            count += 1
    return count % 2 == 1


def different_subjects(a: SemanticEntry, b: SemanticEntry) -> bool:
    """Both name explicit identifiers of one kind and share none: "0xDEAD" vs "0xBEEF"."""
    def kinds(e: SemanticEntry) -> tuple[set[str], ...]:
        meta = e.metadata
        return (set(_ADDRESS.findall(e.text.lower())), {p.lower() for p in meta.protocols},
                {t.lower() for t in meta.tokens}, {str(c) for c in meta.chains})

    return any(x and y and not x & y for x, y in zip(kinds(a), kinds(b), strict=True))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _baseline_conflict(new: dict[str, Any], old: dict[str, Any], k: float) -> str | None:
    metric_new, metric_old = str(new.get("metric", "")).strip(), str(old.get("metric", ""))
    if not metric_new or metric_new.lower() != metric_old.strip().lower():
        return None
    values = [_number(f.get(key)) for f in (new, old) for key in ("mean", "stddev")]
    if any(v is None for v in values):
        return None
    mean_new, sd_new, mean_old, sd_old = (v or 0.0 for v in values)
    spread = math.hypot(abs(sd_new), abs(sd_old))
    gap = abs(mean_new - mean_old)
    if gap > k * spread:
        return (f"baseline {metric_new!r}: mean {mean_new:g} vs {mean_old:g} differs by "
                f"more than {k:g} combined stddevs ({spread:g})")
    return None


def _sign(fact: dict[str, Any]) -> int | None:
    for key in ("sign", "direction"):
        value = fact.get(key)
        if value is not None and not isinstance(value, bool):
            return _SIGNS.get(str(value).strip().lower())
    return None


def _causal_conflict(new: dict[str, Any], old: dict[str, Any]) -> str | None:
    def norm(fact: dict[str, Any], key: str) -> str:
        return str(fact.get(key, "")).strip().lower()

    if not norm(new, "cause") or (norm(new, "cause"), norm(new, "effect")) != (
            norm(old, "cause"), norm(old, "effect")):
        return None
    sign_new, sign_old = _sign(new), _sign(old)
    if sign_new is not None and sign_old is not None and sign_new != sign_old:
        return f"causal {norm(new, 'cause')!r} -> {norm(new, 'effect')!r}: opposite sign"
    return None


def contradicts(
    new: SemanticEntry,
    new_vec: Vector,
    existing: SemanticEntry,
    existing_vec: Vector,
    threshold: float = DEFAULT_SIMILARITY,
    *,
    baseline_k: float = DEFAULT_BASELINE_K,
) -> str | None:
    """The reason the two entries make incompatible claims, or None."""
    similarity = cosine(new_vec, existing_vec)
    if similarity <= 0.0 or similarity < threshold or different_subjects(new, existing):
        return None
    kinds = (new.fact_kind, existing.fact_kind)
    reason: str | None = None
    if kinds == (FactKind.BASELINE, FactKind.BASELINE):
        reason = _baseline_conflict(new.fact, existing.fact, baseline_k)
    elif kinds == (FactKind.CAUSAL_RELATION, FactKind.CAUSAL_RELATION):
        reason = _causal_conflict(new.fact, existing.fact)
    if reason is None and negated(new.text) != negated(existing.text):
        reason = "opposite polarity (one claim is negated, the other affirmative)"
    return None if reason is None else f"{reason}; similarity {similarity:.2f}"


def find_conflicts(
    new: SemanticEntry,
    new_vec: Vector,
    candidates: Iterable[tuple[SemanticEntry, Vector]],
    threshold: float = DEFAULT_SIMILARITY,
    baseline_k: float = DEFAULT_BASELINE_K,
) -> list[Conflict]:
    """Every candidate (other than the entry itself) the new claim contradicts."""
    found = []
    for entry, vec in candidates:
        if entry.id == new.id:
            continue
        reason = contradicts(new, new_vec, entry, vec, threshold, baseline_k=baseline_k)
        if reason is not None:
            found.append(Conflict(entry, reason))
    return found


def trusted(entry: SemanticEntry, quarantine_confidence: float) -> bool:
    """Anchored or confident enough that a contradiction must not pass silently."""
    return entry.anchored or entry.confidence >= quarantine_confidence


def quarantine_decision(
    new: SemanticEntry, conflicts: Sequence[Conflict], quarantine_confidence: float
) -> ContradictionReport:
    """Quarantine when the claim contradicts an anchored or trusted entry; else let it in."""
    relevant = [c for c in conflicts if c.entry.id != new.id]
    hits = [c for c in relevant if trusted(c.entry, quarantine_confidence)]
    return ContradictionReport(
        quarantined=bool(hits),
        against=tuple(c.entry.id for c in hits),
        reasons=tuple(c.reason for c in hits),
        conflicts=tuple((c.entry.id, c.reason) for c in relevant),
    )

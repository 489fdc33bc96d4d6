"""Fill per-category budgets from scored candidates into a CognitiveWorkspace (seed 002 S3).

Steps, all deterministic for the same input:
1. Budgets: allocation fractions (normalised to sum 1) x the total soft budget.
2. Per category, rank by score and disclose progressively (S3.2): full text while
   the category stays under 70% of its budget, one-line summaries up to 95%,
   excluded beyond. Episodes are also observation-masked: the top 3 may be full,
   the next 7 summaries only, the rest excluded (Lindenbauer et al. 2025).
   Hard items (HARD categories, or flagged) always go in full, first, and may
   exceed their category's share.
3. Above 80% total pressure (S3.5), compact soft context only: episodes re-masked
   with 2 + 5 slots, then the lowest-scored soft items are summarised, then
   dropped, until pressure is back under the threshold.
4. Order (lost in the middle, Liu et al. 2024): invariants first, the other
   blocks in a U-curve by importance (best at the edges), and a summary echo of
   the invariants last, so safety constraints sit at both ends.
Every candidate ends up placed or with an Exclusion saying why.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from golem.governor.categories import HARD, Category
from golem.governor.workspace import (
    AssemblyReason,
    Block,
    Candidate,
    CognitiveWorkspace,
    Disclosure,
    Exclusion,
    Placed,
    Why,
    workspace_delta,
)

T = TypeVar("T")
ORDER = {c: i for i, c in enumerate(Category)}


class EpisodeSlots(Protocol):
    """What assembly reads from the policy's RetrievalConfig."""

    @property
    def full_episode_slots(self) -> int: ...
    @property
    def summary_episode_slots(self) -> int: ...


@dataclass(frozen=True)
class AssemblySettings:
    """Slots and thresholds; defaults are the seed's (RetrievalConfig, S3.2, S3.5)."""

    full_episode_slots: int = 3
    summary_episode_slots: int = 7
    full_under: float = 0.70
    summary_under: float = 0.95
    compact_above: float = 0.80
    compact_full_slots: int = 2
    compact_summary_slots: int = 5

    def __post_init__(self) -> None:
        for name in ("full_episode_slots", "summary_episode_slots",
                     "compact_full_slots", "compact_summary_slots"):
            if getattr(self, name) < 0:
                raise ValueError(f"assembly: {name} must be >= 0")
        if not 0.0 < self.full_under <= self.summary_under <= 1.0:
            raise ValueError("assembly: need 0 < full_under <= summary_under <= 1")
        if not self.compact_above > 0.0:
            raise ValueError("assembly: compact_above must be > 0")

    @classmethod
    def from_retrieval(cls, retrieval: EpisodeSlots) -> AssemblySettings:
        return cls(full_episode_slots=retrieval.full_episode_slots,
                   summary_episode_slots=retrieval.summary_episode_slots)


def normalise(allocations: Mapping[Category, float]) -> dict[Category, float]:
    """Fractions summing to 1 over all categories (missing ones get 0)."""
    for cat, frac in allocations.items():
        if not math.isfinite(frac) or frac < 0.0:
            raise ValueError(f"assembly: allocation for {cat} must be >= 0, got {frac!r}")
    total = sum(allocations.values())
    if total <= 0.0:
        raise ValueError("assembly: allocations must not all be zero")
    return {c: allocations.get(c, 0.0) / total for c in Category}


def u_curve(ranked: Sequence[T]) -> list[T]:
    """Best-first items reordered so the best sit at both edges: r1, r3, r5, ..., r4, r2."""
    return [*ranked[0::2], *reversed(ranked[1::2])]


def _rank_key(c: Candidate) -> tuple[float, str, str, str]:
    return (-c.score, c.id, c.source, c.text)


def _group(candidates: Iterable[Candidate]) -> tuple[dict[Category, list[Candidate]],
                                                      list[Exclusion]]:
    """Candidates per category, best first; of two with one id a hard one wins."""
    groups: dict[Category, list[Candidate]] = {c: [] for c in Category}
    seen: set[tuple[Category, str]] = set()
    dupes: list[Exclusion] = []
    for cand in sorted(candidates, key=lambda c: (not c.is_hard, *_rank_key(c))):
        key = (cand.category, cand.id)
        if key in seen:
            dupes.append(Exclusion(cand.id, cand.category, Why.DUPLICATE))
        else:
            seen.add(key)
            groups[cand.category].append(cand)
    for bucket in groups.values():
        bucket.sort(key=_rank_key)
    return groups, dupes


def _fill(
    ranked: list[Candidate], budget: int, s: AssemblySettings, slots: tuple[int, int] | None
) -> tuple[list[Placed], list[Exclusion]]:
    """Progressive disclosure within one category; hard items first and always full."""
    placed = [Placed(c, Disclosure.FULL) for c in ranked if c.is_hard]
    excluded: list[Exclusion] = []
    used = sum(p.tokens for p in placed)
    for rank, c in enumerate(x for x in ranked if not x.is_hard):
        may_be_full = slots is None or rank < slots[0]
        if budget <= 0:
            excluded.append(Exclusion(c.id, c.category, Why.NO_BUDGET))
        elif slots is not None and rank >= slots[0] + slots[1]:
            excluded.append(Exclusion(c.id, c.category, Why.MASKED))
        elif may_be_full and used + c.text_tokens <= s.full_under * budget:
            placed.append(Placed(c, Disclosure.FULL))
            used += c.text_tokens
        elif used + c.summary_tokens <= s.summary_under * budget:
            placed.append(Placed(c, Disclosure.SUMMARY))
            used += c.summary_tokens
        else:
            excluded.append(Exclusion(c.id, c.category, Why.OVER_BUDGET))
    order = {c.id: i for i, c in enumerate(ranked)}
    placed.sort(key=lambda p: order[p.candidate.id])
    return placed, excluded


def _compact(
    chosen: dict[Category, list[Placed]], target: float, hard_echo: int
) -> tuple[dict[Category, int], list[Exclusion]]:
    """Summarise, then drop, the lowest-scored soft items until used <= target.

    Returns how many items each category had summarised, and the drops."""
    used = hard_echo + sum(p.tokens for ps in chosen.values() for p in ps)
    soft = sorted(((p.candidate.score, ORDER[cat], p.candidate.id, cat)
                   for cat, ps in chosen.items() for p in ps if not p.candidate.is_hard))
    summarised: dict[Category, int] = {}
    dropped: list[Exclusion] = []
    for mode in (Disclosure.SUMMARY, None):
        for _, _, cid, cat in soft:
            if used <= target:
                return summarised, dropped
            ps = chosen[cat]
            i = next((k for k, p in enumerate(ps) if p.candidate.id == cid), None)
            if i is None:
                continue
            p = ps[i]
            if mode is Disclosure.SUMMARY:
                if p.disclosure is Disclosure.FULL and p.candidate.summary_tokens < p.tokens:
                    ps[i] = Placed(p.candidate, Disclosure.SUMMARY)
                    used -= p.tokens - ps[i].tokens
                    summarised[cat] = summarised.get(cat, 0) + 1
            else:
                del ps[i]
                used -= p.tokens
                dropped.append(Exclusion(cid, cat, Why.COMPACTED))
    return summarised, dropped


def _why(placed: list[Placed], excluded: list[Exclusion], budget: int, hard: bool) -> str:
    if not placed and not excluded:
        return "no candidates"
    used = sum(p.tokens for p in placed)
    parts = [f"{sum(p.disclosure is Disclosure.FULL for p in placed)} full, "
             f"{sum(p.disclosure is Disclosure.SUMMARY for p in placed)} summarised"]
    for why in Why:
        n = sum(e.why is why for e in excluded)
        if n:
            parts.append(f"{n} {why.value}")
    if hard and used > budget:
        parts.append(f"hard context over its share by {used - budget} tokens")
    return "; ".join(parts)


def assemble(
    candidates: Iterable[Candidate],
    allocations: Mapping[Category, float],
    total_budget: int,
    settings: AssemblySettings = AssemblySettings(),
    previous: CognitiveWorkspace | None = None,
) -> CognitiveWorkspace:
    """Build the workspace for one Theta tick from scored candidates."""
    if total_budget <= 0:
        raise ValueError(f"assembly: total_budget must be > 0, got {total_budget}")
    s = settings
    fractions = normalise(allocations)
    budgets = {c: math.floor(fractions[c] * total_budget) for c in Category}
    groups, excluded = _group(candidates)
    episode_slots = (s.full_episode_slots, s.summary_episode_slots)
    chosen: dict[Category, list[Placed]] = {}
    dropped: dict[Category, list[Exclusion]] = {}
    for cat in Category:
        slots = episode_slots if cat is Category.EPISODES else None
        chosen[cat], dropped[cat] = _fill(groups[cat], budgets[cat], s, slots)

    def echo_of(items: list[Placed]) -> tuple[Placed, ...]:
        return tuple(Placed(p.candidate, Disclosure.SUMMARY) for p in items)

    echo_tokens = sum(p.tokens for p in echo_of(chosen[Category.INVARIANTS]))
    used = echo_tokens + sum(p.tokens for ps in chosen.values() for p in ps)
    target = s.compact_above * total_budget
    compacted = used > target
    notes: dict[Category, str] = {}
    if compacted:
        slots = (s.compact_full_slots, s.compact_summary_slots)
        ep = Category.EPISODES
        chosen[ep], dropped[ep] = _fill(groups[ep], budgets[ep], s, slots)
        summarised, more = _compact(chosen, target, echo_tokens)
        for e in more:
            dropped[e.category].append(e)
        notes = {c: f"compacted above {s.compact_above:.0%} pressure ({n} summarised)"
                 for c, n in summarised.items()}
        if groups[ep]:
            notes[ep] = notes.get(ep, f"compacted above {s.compact_above:.0%} pressure") + (
                f", episodes masked to {slots[0]} full + {slots[1]} summaries")
        used = echo_tokens + sum(p.tokens for ps in chosen.values() for p in ps)

    for ps in dropped.values():
        excluded.extend(ps)
    reasons = {}
    for cat in Category:
        cat_used = sum(p.tokens for p in chosen[cat])
        if cat is Category.INVARIANTS:
            cat_used += echo_tokens
        why = _why(chosen[cat], [e for e in excluded if e.category is cat], budgets[cat],
                   cat in HARD)
        if cat in notes:
            why = f"{why}; {notes[cat]}"
        reasons[cat] = AssemblyReason(
            category=cat, allocated=budgets[cat], used=cat_used,
            full=sum(p.disclosure is Disclosure.FULL for p in chosen[cat]),
            summarized=sum(p.disclosure is Disclosure.SUMMARY for p in chosen[cat]),
            excluded=sum(e.category is cat for e in excluded), why=why)

    middle = [Block(c, tuple(chosen[c])) for c in Category
              if c is not Category.INVARIANTS and chosen[c]]
    middle.sort(key=lambda b: (b.category not in HARD,
                               -max(p.candidate.score for p in b.items), ORDER[b.category]))
    blocks = u_curve(middle)
    invariants = chosen[Category.INVARIANTS]
    if invariants:
        blocks = [Block(Category.INVARIANTS, tuple(invariants)), *blocks,
                  Block(Category.INVARIANTS, echo_of(invariants), echo=True)]
    final = tuple(blocks)
    delta = None if previous is None else workspace_delta(previous, final, total_budget)
    return CognitiveWorkspace(
        blocks=final, total_budget=total_budget, used=used, reasons=reasons,
        exclusions=tuple(sorted(excluded, key=lambda e: (ORDER[e.category], e.id))),
        compacted=compacted, delta=delta)

"""Ebbinghaus decay and forgetting (seed 000 "Avoiding catastrophic forgetting").

Pure: numbers and records in, numbers and a plan out; the caller supplies ``now``.

Model. Retention is R = e^(-t / (S * tau)) where t is the time since the last
reinforcement, S = max(ln(episode_count), 1) is stability (more supporting episodes,
slower fading: the spacing effect) and tau = half_life / ln 2 comes from the entry's
decay class, so an entry with stability 1 keeps exactly half its confidence after one
half-life. Confidence decays as c(t) = c_ref * R(t).

Idempotency. Decay is a function of a fixed reference point, never of the previous
decayed value: (c_ref = confidence at the last reinforcement, t = now - last_reinforced,
falling back to created_at). Applying it twice at the same ``now`` gives the same
number, and applying it at any cadence gives the closed form, so the store and curator
can run it whenever they like. Reinforcement (the testing effect) is the only thing
that moves the reference: it sets the new confidence and ``last_reinforced = now``.
See ``plan_decay`` for how this maps onto today's SemanticEntry.

Invariants (property-tested): decay never raises confidence; anchored entries never
decay; anti-knowledge never decays below the floor (an entry that already starts below
the floor is held where it is: lifting it would make an untrusted warning look surer).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from golem.grimoire.errors import InvalidMemory
from golem.grimoire.records import (
    DecayClass,
    EntryType,
    FactKind,
    SemanticEntry,
    Status,
    finite_unit,
)

if TYPE_CHECKING:
    from golem.config import GrimoireSection

ANTI_KNOWLEDGE_FLOOR = 0.3
DAY_S = 86400.0


def _unit(value: float, name: str) -> float:
    try:
        return finite_unit(value, name)
    except ValueError as exc:
        raise InvalidMemory(str(exc)) from None


def _count(episode_count: int) -> int:
    if isinstance(episode_count, bool) or not isinstance(episode_count, int) or episode_count < 0:
        raise InvalidMemory(f"episode_count: must be an integer >= 0, got {episode_count!r}")
    return episode_count


def _finite(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidMemory(f"{name}: must be a finite number, got {value!r}")
    return float(value)


def _half_life(half_life_s: float) -> float:
    value = _finite(half_life_s, "half_life_s")
    if value <= 0:
        raise InvalidMemory(f"half_life_s: must be > 0, got {half_life_s}")
    return value


def stability(episode_count: int) -> float:
    """S = max(ln(episode_count), 1): 0-2 episodes give 1, 20 give ln 20 = 2.996."""
    count = _count(episode_count)
    return max(math.log(count), 1.0) if count > 0 else 1.0


def retention(elapsed_s: float, half_life_s: float, episode_count: int) -> float:
    """R = e^(-t / (S * half_life / ln 2)), in (0, 1].

    A negative elapsed time (clock skew, a restored simulation) counts as 0: decay
    never runs backwards into a gain.
    """
    tau = _half_life(half_life_s) / math.log(2.0)
    elapsed = max(_finite(elapsed_s, "elapsed_s"), 0.0)
    return math.exp(-elapsed / (stability(episode_count) * tau))


def decayed_confidence(
    reference_confidence: float,
    elapsed_s: float,
    half_life_s: float,
    episode_count: int,
    *,
    is_anti_knowledge: bool = False,
    anchored: bool = False,
    floor: float = ANTI_KNOWLEDGE_FLOOR,
) -> float:
    """Confidence ``elapsed_s`` after the reference point (the last reinforcement).

    Anchored entries keep ``reference_confidence``. Anti-knowledge is held at
    max(decayed, min(reference, floor)). The result is never above the reference.
    """
    ref = _unit(reference_confidence, "reference_confidence")
    low = _unit(floor, "floor")
    decayed = ref * retention(elapsed_s, half_life_s, episode_count)
    if anchored:
        return ref
    if is_anti_knowledge:
        decayed = max(decayed, min(ref, low))
    return decayed  # <= ref: retention <= 1 and min(ref, low) <= ref


def is_anti_knowledge(entry: SemanticEntry) -> bool:
    """Anti-knowledge by entry type or by fact kind: both mean "never do this again"."""
    return (entry.entry_type == EntryType.ANTI_KNOWLEDGE
            or entry.fact_kind == FactKind.ANTI_KNOWLEDGE)


def reference_time(entry: SemanticEntry) -> float:
    """When decay starts counting: the last reinforcement, else creation."""
    return entry.last_reinforced if entry.last_reinforced is not None else entry.created_at


def half_lives_from_config(section: GrimoireSection) -> dict[DecayClass, float]:
    return {
        DecayClass.STRUCTURAL: section.half_life_structural_s,
        DecayClass.STRATEGIC: section.half_life_strategic_s,
        DecayClass.TACTICAL: section.half_life_tactical_s,
        DecayClass.EPHEMERAL: section.half_life_ephemeral_s,
    }


@dataclass(frozen=True)
class DecayPlan:
    """What a decay pass would change; the store applies it and logs ``reasons``.

    ``updates`` holds only entries whose confidence drops; ``evict`` lists forgetting
    candidates (never anchored, never anti-knowledge); every id in either has a reason.
    """

    updates: dict[str, float] = field(default_factory=dict)
    evict: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)


def plan_decay(
    entries: Sequence[SemanticEntry],
    now: float,
    half_lives: Mapping[DecayClass, float],
    floor: float = ANTI_KNOWLEDGE_FLOOR,
    eviction_threshold: float = 0.10,
    *,
    reference_confidence: Mapping[str, float] | None = None,
) -> DecayPlan:
    """Plan one decay pass over ``entries`` at golem time ``now``.

    Reference point per entry: the confidence at the last reinforcement is
    ``reference_confidence[id]`` when given, else ``entry.confidence``; its time is
    ``last_reinforced`` (else ``created_at``). With today's SemanticEntry (one
    confidence field) that means: a store that writes ``updates`` back into
    ``confidence`` must keep the reinforced value elsewhere and pass it here, or the
    next pass compounds. The planned value is also capped at ``entry.confidence``,
    so a plan never raises what is stored. Pruned entries are skipped.
    """
    at = _finite(now, "now")
    low = _unit(floor, "floor")
    threshold = _unit(eviction_threshold, "eviction_threshold")
    refs = reference_confidence or {}
    plan = DecayPlan()
    for entry in entries:
        if entry.status == Status.PRUNED:
            continue
        if entry.decay_class not in half_lives:
            raise InvalidMemory(f"half_lives: no half-life for decay class {entry.decay_class!s}")
        half_life = half_lives[entry.decay_class]
        anti = is_anti_knowledge(entry)
        elapsed = at - reference_time(entry)
        stored_ref = (entry.reinforced_confidence if entry.reinforced_confidence is not None
                      else entry.confidence)
        ref = refs.get(entry.id, stored_ref)
        new = min(
            decayed_confidence(ref, elapsed, half_life, entry.episode_count,
                               is_anti_knowledge=anti, anchored=entry.anchored, floor=low),
            _unit(entry.confidence, "confidence"),
        )
        held = anti and not entry.anchored and ref * retention(
            elapsed, half_life, entry.episode_count) < min(ref, low)
        why: list[str] = []
        if new < entry.confidence:
            plan.updates[entry.id] = new
            why.append(
                f"decayed {entry.confidence:.3f} -> {new:.3f} ({entry.decay_class!s}, "
                f"half-life {half_life / DAY_S:.3g}d, stability "
                f"{stability(entry.episode_count):.3f}, {max(elapsed, 0.0) / DAY_S:.3g}d "
                f"since reinforcement{', held at the anti-knowledge floor' if held else ''})"
            )
        if new < threshold and not entry.anchored and not anti:
            plan.evict.append(entry.id)
            why.append(f"below eviction threshold {threshold:.3f} at {new:.3f}")
        if why:
            plan.reasons[entry.id] = "; ".join(why)
    return plan


# Random forgetting (the lab's random-eviction arm): given the ids that may be forgotten
# and how many a forgetting pass chose, the ids to forget instead.
Pick = Callable[[Sequence[str], int], list[str]]


def seeded_pick(seed: str) -> Pick:
    """A Pick drawing uniformly without replacement from a generator seeded by ``seed``
    (same seed, same pool, same draws)."""
    rng = random.Random(seed)  # noqa: S311 - an experiment's control, not a secret

    def pick(pool: Sequence[str], count: int) -> list[str]:
        return rng.sample(sorted(pool), min(count, len(pool)))

    return pick


@dataclass(frozen=True)
class DecayReport:
    decayed: int
    forgotten: int
    forgotten_ids: tuple[str, ...] = ()


class DecayTarget(Protocol):
    """The slice of the semantic store a decay pass needs."""

    def iter_all(self) -> Iterator[SemanticEntry]: ...
    def update_confidence(self, updates: Mapping[str, float], now: float) -> int: ...
    def forget(self, ids: Sequence[str], reason: str, now: float,
               hard: bool = False) -> int: ...


def plan_and_apply_decay(store: DecayTarget, section: GrimoireSection, namespace: str,
                         now: float, pick: Pick | None = None) -> DecayReport:
    """Run one pass on a store: plan (pure) then write confidences and forget the evicted.
    ``pick``: as many entries as decay would evict are forgotten, drawn by ``pick`` from
    every entry of the pass that is not anchored (random forgetting)."""
    entries = [e for e in store.iter_all() if e.namespace == namespace
               and e.status in (Status.ACTIVE, Status.STAGED, Status.ARCHIVED)]
    plan = plan_decay(entries, now, half_lives_from_config(section),
                      section.anti_knowledge_floor, section.eviction_threshold)
    if plan.updates:
        store.update_confidence(plan.updates, now)
    if pick is not None and plan.evict:
        faded = len(plan.evict)
        plan.evict[:] = pick([e.id for e in entries if not e.anchored], faded)
        for entry_id in plan.evict:
            plan.reasons[entry_id] = f"at random, in place of {faded} faded (random forgetting)"
    for entry_id in plan.evict:
        store.forget([entry_id], f"decay: {plan.reasons[entry_id]}", now)
    return DecayReport(decayed=len(plan.updates), forgotten=len(plan.evict),
                       forgotten_ids=tuple(plan.evict))

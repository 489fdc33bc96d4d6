"""The curator's verdicts: promote / keep / archive / prune (seed 001 curator loop, seed 000).

Pure: entries and a view of the cycle (its time, the golem's namespace, the
quarantine log) in, one Decision with its reason per entry out. Forgetting is
the feature: an entry keeps its place only while its signals earn it (recency,
reinforcement, useful recalls, decayed confidence, provenance, contradictions,
relevance to this golem's scope). Anchored entries are never archived or pruned.

Promotion means "becomes ACTIVE": the only way a STAGED entry (dream hypothesis,
inherited knowledge, model-extracted candidate) reaches recall, a QUARANTINED
claim is released, or an ARCHIVED entry that is being used again warms back up.
An ACTIVE entry is kept, archived or pruned; it is never "promoted" again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum

from golem.consolidation.curator_signals import (
    DAY_S,
    Scope,
    days,
    effective_confidence,
    is_dream,
    is_inherited,
    is_model_candidate,
    last_used,
    out_of_scope,
)
from golem.grimoire import contradiction
from golem.grimoire.decay import is_anti_knowledge, stability
from golem.grimoire.records import DecayClass, SemanticEntry, Status


class Action(StrEnum):
    PROMOTE = "promote"
    KEEP = "keep"
    ARCHIVE = "archive"
    PRUNE = "prune"


TARGET: dict[Action, Status | None] = {
    Action.PROMOTE: Status.ACTIVE, Action.KEEP: None,
    Action.ARCHIVE: Status.ARCHIVED, Action.PRUNE: Status.PRUNED,
}


@dataclass(frozen=True)
class CuratorParams:
    """Thresholds of the curator (config: [delta.curator]); times in golem seconds."""

    recent_s: float = DAY_S  # used this recently counts as "in use again"
    archive_after_s: float = 14 * DAY_S  # ACTIVE, unused this long (x stability): archive
    prune_after_s: float = 30 * DAY_S  # ACTIVE, unused this long and below prune_confidence
    prune_confidence: float = 0.20
    archived_prune_after_s: float = 60 * DAY_S  # ARCHIVED, unused this long and below:
    archived_prune_confidence: float = 0.35
    min_importance: float = 0.15  # below it, never accessed, idle >= recent_s: archive
    out_of_scope_archive_s: float = 3 * DAY_S  # outside the golem's chains/protocols
    staged_min_confidence: float = 0.30  # a staged entry needs at least this to go ACTIVE
    inherited_min_recalls: int = 2  # inherited knowledge is tested through use first
    candidate_min_episodes: int = 2  # a candidate supported by this many episodes
    staged_max_age_s: float = 14 * DAY_S  # unvalidated staged entries are pruned after
    dream_confirm_window_s: float = 3 * DAY_S  # when a dream entry carries no window
    promote_staged_anti_knowledge: bool = True  # a missed warning costs more (seed 000)
    quarantine_confidence: float = 0.80  # an opponent this confident (or anchored) holds
    quarantine_grace_s: float = 7 * DAY_S  # unsupported contradicted claims pruned after
    duplicate_cosine: float = 0.95  # near-duplicates: same kind, vectors this close
    max_related: int = 8  # cross-references kept per entry
    playbook_min_recalls: int = 3  # a heuristic validated over this many useful recalls
    playbook_min_confidence: float = 0.70  # and this (decayed) confidence (seed 000)
    max_proposals: int = 10  # heuristics proposed per cycle
    anti_knowledge_floor: float = 0.30
    forget: bool = True  # False: no entry is ever archived or pruned (consolidation.forgetting)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool):
                continue
            if not isinstance(value, int | float) or value < 0 or math.isnan(value):
                raise ValueError(f"curator.{f.name}: must be a number >= 0, got {value!r}")
            if (f.name.endswith(("confidence", "cosine", "importance", "floor"))
                    and value > 1):
                raise ValueError(f"curator.{f.name}: must be in [0, 1], got {value}")
        if self.recent_s >= min(self.archive_after_s, self.out_of_scope_archive_s):
            raise ValueError("curator.recent_s must be shorter than the archive delays, or an "
                             "archived entry would warm up again at once")


@dataclass(frozen=True)
class Quarantine:
    """A quarantine decision from the store's log: whom the claim contradicted, and when."""

    against: tuple[str, ...]
    at: float


@dataclass(frozen=True)
class CycleView:
    """Everything a verdict may look at besides the entry itself."""

    now: float
    namespace: str
    entries: Mapping[str, SemanticEntry] = field(default_factory=dict)  # by id
    quarantine: Mapping[str, Quarantine] = field(default_factory=dict)  # latest, by entry id
    half_lives: Mapping[DecayClass, float] | None = None  # None: stored confidence as is
    scope: Scope = field(default_factory=Scope)
    merged_into: Mapping[str, str] = field(default_factory=dict)  # absorbed id -> keeper


@dataclass(frozen=True)
class Decision:
    entry_id: str
    action: Action
    rule: str  # short code, stable for grouping and tests
    reason: str  # what the logs keep

    @property
    def target(self) -> Status | None:
        return TARGET[self.action]


def classify(entry: SemanticEntry, view: CycleView, params: CuratorParams) -> Decision | None:
    """The verdict on one entry; None for another namespace's entries and pruned ones."""
    if entry.namespace != view.namespace or entry.status == Status.PRUNED:
        return None
    rules = {Status.STAGED: _staged, Status.QUARANTINED: _quarantined,
             Status.ARCHIVED: _archived, Status.ACTIVE: _active}
    action, rule, reason = rules[entry.status](entry, view, params)
    if entry.anchored and action in (Action.ARCHIVE, Action.PRUNE):
        action, rule, reason = (Action.KEEP, "anchored",
                                f"anchored: exempt from decay and pruning (else {reason})")
    elif not params.forget and action in (Action.ARCHIVE, Action.PRUNE):
        action, rule, reason = (Action.KEEP, "no-forgetting",
                                f"forgetting is off (else {reason})")
    return Decision(entry.id, action, rule, reason)


def classify_all(entries: Iterable[SemanticEntry], view: CycleView,
                 params: CuratorParams) -> list[Decision]:
    return [d for d in (classify(e, view, params) for e in entries) if d is not None]


Verdict = tuple[Action, str, str]


def _conf(e: SemanticEntry, view: CycleView, p: CuratorParams) -> float:
    return effective_confidence(e, view.now, view.half_lives, p.anti_knowledge_floor)


def _staged(e: SemanticEntry, view: CycleView, p: CuratorParams) -> Verdict:
    """The gate: staged entries become ACTIVE only on evidence."""
    conf = _conf(e, view, p)
    if is_dream(e):
        return _dream(e, view, p)
    anti = is_anti_knowledge(e)
    if anti and p.promote_staged_anti_knowledge:
        return (Action.PROMOTE, "warning",
                "anti-knowledge skips the wait: a missed warning costs more than a false one")
    if is_inherited(e, view.namespace):
        if e.successful_recalls >= p.inherited_min_recalls and conf >= p.staged_min_confidence:
            return (Action.PROMOTE, "validated_locally",
                    f"inherited ({e.provenance.source}, generation {e.generation}) and "
                    f"validated here: {e.successful_recalls} useful recalls, "
                    f"confidence {conf:.2f}")
        wants = f"{p.inherited_min_recalls} useful recalls"
    else:
        # A model's summary already counts its cluster's episodes at creation: that is
        # the claim, not support for it; it needs support that came later.
        model_made = is_model_candidate(e)
        support = [s for s, ok in (
            ("verified", e.provenance.verified),
            (f"{e.successful_recalls} useful recalls", e.successful_recalls > 0),
            ("reinforced after creation", (e.last_reinforced or 0.0) > e.created_at),
            (f"{e.episode_count} episodes",
             not model_made and e.episode_count >= p.candidate_min_episodes),
        ) if ok]
        if support and conf >= p.staged_min_confidence:
            return (Action.PROMOTE, "candidate_supported",
                    f"candidate supported ({', '.join(support)}), confidence {conf:.2f}")
        wants = "support (verified, recalled, reinforced or repeated)"
    if conf < p.staged_min_confidence:
        wants += f" and confidence {p.staged_min_confidence:.2f} (has {conf:.2f})"
    age = view.now - e.created_at
    if age >= p.staged_max_age_s and not anti:
        return (Action.PRUNE, "stage_expired",
                f"staged {days(age)} without {wants} (limit {days(p.staged_max_age_s)})")
    return Action.KEEP, "staged_pending", f"staged, awaiting {wants}"


def _dream(e: SemanticEntry, view: CycleView, p: CuratorParams) -> Verdict:
    """A dream hypothesis is promoted only if waking life confirms it inside its window."""
    window = _number(e.fact.get("confirm_window_s")) or p.dream_confirm_window_s
    expires = _number(e.fact.get("expires_at")) or e.created_at + window
    # Growth in episodes counts only against a count recorded at staging.
    baseline = _number(e.fact.get("episode_count_at_stage"))
    in_window = e.last_reinforced is not None and e.created_at < e.last_reinforced <= expires
    how = ["reinforced"] if in_window else []
    if view.now <= expires:  # counters carry no time; before expiry they are in the window
        how += [f"{e.successful_recalls} useful recalls"] if e.successful_recalls else []
        how += ([f"episode count {baseline:g} -> {e.episode_count}"]
                if baseline is not None and e.episode_count > baseline else [])
    if how:
        return (Action.PROMOTE, "dream_confirmed",
                f"dream hypothesis confirmed inside its window ({', '.join(how)})")
    if view.now > expires:
        return (Action.PRUNE, "dream_expired",
                f"dream hypothesis expired unconfirmed ({days(window)} window ended "
                f"{days(view.now - expires)} ago)")
    return (Action.KEEP, "dream_pending",
            f"dream hypothesis awaiting confirmation ({days(expires - view.now)} left)")


def _number(value: object) -> float | None:
    """A finite number from a fact (written by other code: anything else is absent)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _quarantined(e: SemanticEntry, view: CycleView, p: CuratorParams) -> Verdict:
    """Adjudicate a contradiction: the trusted side holds until the claim earns support."""
    q = view.quarantine.get(e.id, Quarantine((), e.created_at))
    opponents = [view.entries[i] for i in q.against if i in view.entries]
    holding = sorted(o.id for o in opponents if o.status == Status.ACTIVE and (
        contradiction.trusted(o, p.quarantine_confidence)))
    supported = (e.last_reinforced or 0.0) > q.at or e.provenance.verified
    waited = view.now - q.at
    if holding:
        if waited >= p.quarantine_grace_s and not supported:
            return (Action.PRUNE, "contradicted",
                    f"contradicts trusted {', '.join(holding)} and gained no support in "
                    f"{days(waited)}")
        return (Action.KEEP, "quarantine_pending",
                f"contradicts trusted {', '.join(holding)}; awaiting adjudication")
    if supported:
        return (Action.PROMOTE, "contradiction_resolved",
                "the entries it contradicted are no longer trusted and it gained support")
    if waited >= p.quarantine_grace_s:
        return (Action.PRUNE, "quarantine_unsupported",
                f"quarantined {days(waited)} and never supported")
    return Action.KEEP, "quarantine_pending", "opponents gone; awaiting support"


def _active(e: SemanticEntry, view: CycleView, p: CuratorParams) -> Verdict:
    conf = _conf(e, view, p)
    idle = view.now - last_used(e)
    if is_anti_knowledge(e):
        return (Action.KEEP, "anti_knowledge",
                "anti-knowledge is kept while unused: a warning that never fires did its job")
    if conf < p.prune_confidence and idle >= p.prune_after_s:
        why = (f"confidence {conf:.2f} below {p.prune_confidence:.2f} and unused for "
               f"{days(idle)}")
        if e.provenance.verified:
            return Action.ARCHIVE, "verified_cold", f"{why}; verified, so archived, not pruned"
        return Action.PRUNE, "stale", why
    return _cold(e, view, p, idle) or (
        Action.KEEP, "in_use",
        f"confidence {conf:.2f}, {e.access_count} accesses, {e.successful_recalls} useful "
        f"recalls, {e.episode_count} episodes, last used {days(idle)} ago")


def _cold(e: SemanticEntry, view: CycleView, p: CuratorParams, idle: float) -> Verdict | None:
    """The ways an ACTIVE entry cools into the archive: disuse (longer for entries many
    episodes support: the spacing effect), scope, low importance (seed 003)."""
    hold = p.archive_after_s * stability(e.episode_count)
    if idle >= hold:
        return (Action.ARCHIVE, "cold",
                f"unused for {days(idle)} (limit {days(hold)} with stability "
                f"{stability(e.episode_count):.2f} from {e.episode_count} episodes)")
    if idle >= p.out_of_scope_archive_s and out_of_scope(e, view.scope):
        return (Action.ARCHIVE, "out_of_scope",
                f"about chains/protocols this golem does not watch; unused for {days(idle)}")
    if e.importance < p.min_importance and e.access_count == 0 and idle >= p.recent_s:
        return (Action.ARCHIVE, "unimportant",
                f"importance {e.importance:.2f} below {p.min_importance:.2f}, never accessed")
    return None


def _archived(e: SemanticEntry, view: CycleView, p: CuratorParams) -> Verdict:
    keeper = view.merged_into.get(e.id)
    idle = view.now - last_used(e)
    if keeper is None and idle < p.recent_s and last_used(e) > e.created_at:
        return Action.PROMOTE, "warm_again", f"archived but used again {days(idle)} ago"
    if is_anti_knowledge(e):
        return Action.KEEP, "anti_knowledge", "archived anti-knowledge is never pruned"
    conf = _conf(e, view, p)
    what = f"folded into {keeper} as a near-duplicate" if keeper else "archived"
    if (idle >= p.archived_prune_after_s and conf < p.archived_prune_confidence
            and not e.provenance.verified):
        return (Action.PRUNE, "archived_stale",
                f"{what}, unused for {days(idle)} at confidence {conf:.2f}")
    return (Action.KEEP, "merged" if keeper else "archived",
            f"{what}, unused for {days(idle)}")

"""Which episodes may be forgotten: episode retention (seed 000, forgetting is the feature).

Episodes are raw material: once consolidation has learned from them, keeping every
one forever only slows recall and fills the disk. An episode may go when it is

- consolidated: quality-verified and replayed at least once, or observed before the
  consolidation cursor (a run has read it: learned from it, or rejected it);
- older than ``horizon_s``;
- not protected. Protected are the evidence of a live fact (its bounded
  ``source_episodes``), and for longer horizons the failures (reverts and strategy
  outcomes: bloodstain-like, ``failure_horizon_s``) and the salient episodes (high
  importance or curiosity, or cited by a decision: ``salient_horizon_s``).

Past ``max_episodes`` in all, consolidated episodes go even inside the horizon, down to
``low_water`` of the cap so the full scan the cap needs is not repeated every run:

1. first the protected ones past ``protected_share`` of the cap (failures, salient and
   cited ones; never a live fact's evidence), lowest utility first. Protection by age
   alone does not bound them: whenever more of them arrive within their horizon than
   the cap holds, they would fill the store and leave no room for anything else;
2. then the unprotected ones, lowest Mattar-Daw utility first (gain x need, as replay
   ranks them: what replay could still teach, times recency).

So the store stays at the cap, plus the live facts' evidence and what is not yet
consolidated. At most ``max_per_run`` go per run; the rest wait for the next. Pure:
plain records in, a plan out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from golem.consolidation import replay
from golem.grimoire.payloads import OUTCOME_CATEGORY, REVERT_CATEGORY
from golem.grimoire.records import EpisodeFacts

DAY_S = 86400.0
FAILURE_CATEGORIES = frozenset({REVERT_CATEGORY, OUTCOME_CATEGORY})


@dataclass(frozen=True)
class RetentionParams:
    horizon_s: float = 14 * DAY_S
    failure_horizon_s: float = 60 * DAY_S  # reverts and strategy outcomes
    salient_horizon_s: float = 90 * DAY_S  # high importance/curiosity, cited by a decision
    salient_importance: float = 0.8  # importance at least this is salient
    salient_curiosity: float = 0.9  # curiosity at least this is salient
    max_episodes: int = 100_000  # the cap on the store (this namespace)
    low_water: float = 0.9  # past the cap, evict down to this share of it (fewer full scans)
    protected_share: float = 0.5  # past the cap, protection holds for this share of it
    max_per_run: int = 20_000  # deletions per run at most (above the low-water gap)
    surprise_weight: float = 0.6  # utility: as replay.ReplayParams
    need_half_life_s: float = 7 * DAY_S

    def __post_init__(self) -> None:
        for name in ("horizon_s", "failure_horizon_s", "salient_horizon_s",
                     "need_half_life_s"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name}: must be >= 0, got {getattr(self, name)}")
        if self.max_episodes < 0 or self.max_per_run < 0:
            raise ValueError("max_episodes and max_per_run must be >= 0")
        for name in ("low_water", "protected_share"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name}: must be in [0, 1], got {getattr(self, name)}")

    @property
    def min_horizon_s(self) -> float:
        """Nothing younger than this goes by age (only past the cap)."""
        return min(self.horizon_s, self.failure_horizon_s, self.salient_horizon_s)


@dataclass(frozen=True)
class Keep:
    """What protects episodes beyond their own fields, and the consolidation cursor."""

    cursor: float | None = None  # observed_at consolidated up to; None before any run
    cited: frozenset[str] = frozenset()  # cited by a decision
    fact_sources: frozenset[str] = frozenset()  # source_episodes of live facts


@dataclass(frozen=True)
class Forget:
    id: str
    reason: str


@dataclass(frozen=True)
class RetentionPlan:
    forget: list[Forget]  # in deletion order, at most max_per_run
    expired: int  # chosen past the horizon (before the per-run bound)
    evicted: int  # chosen over the cap (before the per-run bound), unprotected or surplus
    surplus: int  # of those, protected ones past protected_share of the cap
    deferred: int  # chosen but left for the next run (per-run bound)
    protected: int  # seen, consolidated and past the horizon, but protected
    unconsolidated: int  # seen but not yet consolidated (never chosen)


def consolidated(e: EpisodeFacts, cursor: float | None) -> bool:
    return (e.quality_verified and e.replay_count >= 1) or (
        cursor is not None and e.observed_at <= cursor)


def salient(e: EpisodeFacts, p: RetentionParams) -> bool:
    importance = replay.DEFAULT_IMPORTANCE if e.importance is None else e.importance
    return importance >= p.salient_importance or e.curiosity >= p.salient_curiosity


def protection(e: EpisodeFacts, now: float, p: RetentionParams, keep: Keep) -> str | None:
    """Why ``e`` must be kept now (None: nothing protects it)."""
    age = now - e.observed_at
    if e.id in keep.fact_sources:
        return "evidence of a live fact"
    if e.category in FAILURE_CATEGORIES and age < p.failure_horizon_s:
        return "failure (revert or strategy outcome)"
    if age < p.salient_horizon_s:
        if e.id in keep.cited:
            return "cited by a decision"
        if salient(e, p):
            return "salient (importance or curiosity)"
    return None


def utility(e: EpisodeFacts, now: float, p: RetentionParams) -> float:
    """Mattar-Daw gain x need (replay.utility), with need from recency alone (no live
    context here)."""
    return (replay.gain_of(e.curiosity, e.importance, e.replay_count, p.surprise_weight)
            * replay.need_of(e.observed_at, now, p.need_half_life_s, 0.0))


def by_utility(episodes: Iterable[EpisodeFacts], now: float,
               p: RetentionParams) -> list[EpisodeFacts]:
    """Lowest utility first; ties: oldest first, then by id. The utilities are
    ``utility``'s, computed over arrays (replay.gains_over, replay.recency_needs)."""
    items = list(episodes)
    if not items:
        return []
    at = np.array([e.observed_at for e in items], dtype=np.float64)
    gains = replay.gains_over(items, p.surprise_weight)
    utilities = gains * replay.recency_needs(at, now, p.need_half_life_s)
    order = np.lexsort((np.array([e.id for e in items]), at, utilities))
    return [items[i] for i in order.tolist()]


def plan(episodes: Iterable[EpisodeFacts], now: float, params: RetentionParams,
         keep: Keep, total: int | None = None) -> RetentionPlan:
    """The episodes to forget now. ``total``: episodes in the store (default: those given;
    pass the store's count when only the old ones were read - the cap then only sees
    those)."""
    seen = list({e.id: e for e in episodes}.values())
    total = len(seen) if total is None else max(total, len(seen))
    eligible: list[EpisodeFacts] = []
    bounded: list[EpisodeFacts] = []  # protected, but not as a live fact's evidence
    protected = unconsolidated = 0
    for e in seen:
        if not consolidated(e, keep.cursor):
            unconsolidated += 1
        elif protection(e, now, params, keep) is not None:
            protected += now - e.observed_at >= params.horizon_s
            if e.id not in keep.fact_sources:
                bounded.append(e)
        else:
            eligible.append(e)
    expired = sorted((e for e in eligible if now - e.observed_at >= params.horizon_s),
                     key=lambda e: (e.observed_at, e.id))
    gone = {e.id for e in expired}
    over = total - len(expired) - params.max_episodes
    surplus: list[EpisodeFacts] = []
    evicted: list[EpisodeFacts] = []
    if over > 0:
        over = total - len(expired) - int(params.max_episodes * params.low_water)
        share = int(params.max_episodes * params.protected_share)
        if len(bounded) > share:
            surplus = by_utility(bounded, now, params)[:min(over, len(bounded) - share)]
        rest = by_utility([e for e in eligible if e.id not in gone], now, params)
        evicted = rest[:over - len(surplus)]
    days = params.horizon_s / DAY_S
    chosen = ([Forget(e.id, f"consolidated and past the {days:g}-day retention horizon")
               for e in expired]
              + [Forget(e.id, f"over the cap of {params.max_episodes} episodes, protected "
                              f"past {params.protected_share:g} of it, lowest utility")
                 for e in surplus]
              + [Forget(e.id, f"over the cap of {params.max_episodes} episodes, lowest "
                              "utility") for e in evicted])
    kept = chosen[:params.max_per_run]
    return RetentionPlan(forget=kept, expired=len(expired),
                         evicted=len(surplus) + len(evicted), surplus=len(surplus),
                         deferred=len(chosen) - len(kept), protected=protected,
                         unconsolidated=unconsolidated)


def by_reason(forget: Sequence[Forget]) -> dict[str, list[str]]:
    """Ids grouped by reason, in plan order (one logged batch per reason)."""
    out: dict[str, list[str]] = {}
    for f in forget:
        out.setdefault(f.reason, []).append(f.id)
    return out

"""Which episodes a consolidation run replays, and in what order (seed 000).

Recent episodes (captured since the last run) are ranked by priority: surprise
(the curiosity Gamma scored at capture) and importance, mixed by
``surprise_weight``. Older episodes compete on Mattar-Daw utility, gain x need:
gain is what replaying could still teach (priority, discounted by how often the
episode was already replayed), need is how relevant it is to the present
(recency, and whether its context - pool and regime - is live in the recent
window). A fraction of the batch (default 0.7) goes to recent episodes, the
rest to old ones, and the two are interleaved evenly so consolidation never
learns from recent data alone (catastrophic forgetting).

Pure: records in, ids out; the only randomness is a seeded weighted draw of the
old episodes, so the same seed gives the same replay.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

DEFAULT_IMPORTANCE = 0.5


@dataclass(frozen=True)
class ReplayCandidate:
    """What replay needs to know about one quality-verified episode."""

    id: str
    observed_at: float
    curiosity: float
    importance: float | None
    replay_count: int
    recent: bool  # captured since the last consolidation run
    context: str = ""  # e.g. "pool|regime": need rises when the context is live now


@dataclass(frozen=True)
class ReplayParams:
    batch_size: int = 10_000
    recent_fraction: float = 0.7
    surprise_weight: float = 0.6
    min_curiosity: float = 0.0
    need_half_life_s: float = 7 * 86400.0


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0) if math.isfinite(value) else 0.0


def priority(curiosity: float, importance: float | None, surprise_weight: float) -> float:
    """surprise_weight * curiosity + (1 - surprise_weight) * importance, in [0, 1]."""
    imp = DEFAULT_IMPORTANCE if importance is None else importance
    w = _unit(surprise_weight)
    return w * _unit(curiosity) + (1.0 - w) * _unit(imp)


def gain(c: ReplayCandidate, surprise_weight: float) -> float:
    """What replay could still teach: priority, halved by each earlier replay's worth."""
    return gain_of(c.curiosity, c.importance, c.replay_count, surprise_weight)


def gain_of(curiosity: float, importance: float | None, replay_count: int,
            surprise_weight: float) -> float:
    """gain() of an episode's numbers (no candidate built: retention ranks ~100k)."""
    return priority(curiosity, importance, surprise_weight) / (1.0 + max(replay_count, 0))


def need(c: ReplayCandidate, now: float, half_life_s: float,
         live_share: dict[str, float]) -> float:
    """Relevance now: half recency (exponential, half-life), half how much of the
    recent window shares this episode's context."""
    return need_of(c.observed_at, now, half_life_s, live_share.get(c.context, 0.0))


def need_of(observed_at: float, now: float, half_life_s: float, context_share: float) -> float:
    """need() of an episode observed at ``observed_at`` whose context has
    ``context_share`` of the recent window."""
    age = max(now - observed_at, 0.0)
    recency = 0.5 ** (age / half_life_s) if half_life_s > 0 else 0.0
    return 0.5 * recency + 0.5 * context_share


def gains_of(curiosity: np.ndarray, importance: np.ndarray, replay_count: np.ndarray,
             surprise_weight: float) -> np.ndarray:
    """gain_of over arrays, element by element the same floats (``importance`` holds
    DEFAULT_IMPORTANCE where an episode has none): what retention ranks ~100k by."""
    w = _unit(surprise_weight)
    mixed = w * _units(curiosity) + (1.0 - w) * _units(importance)
    return np.asarray(mixed / (1.0 + np.maximum(replay_count, 0)), dtype=np.float64)


class Weighed(Protocol):
    """What gains_over reads of an episode (a ReplayCandidate, retention's EpisodeFacts)."""

    @property
    def curiosity(self) -> float: ...
    @property
    def importance(self) -> float | None: ...
    @property
    def replay_count(self) -> int: ...


def gains_over(items: Sequence[Weighed], surprise_weight: float) -> np.ndarray:
    """gain_of of each item, in order (gains_of over their numbers)."""
    return gains_of(
        np.array([e.curiosity for e in items], dtype=np.float64),
        np.array([DEFAULT_IMPORTANCE if e.importance is None else e.importance
                  for e in items], dtype=np.float64),
        np.array([e.replay_count for e in items], dtype=np.float64), surprise_weight)


def recency_needs(observed_at: np.ndarray, now: float, half_life_s: float) -> np.ndarray:
    """need_of with no context share, over arrays: the same floats (the powers are
    Python's, one per element: numpy's may round differently where it has SIMD ones)."""
    if half_life_s <= 0:
        return np.zeros(len(observed_at))
    exponents = (np.maximum(now - np.asarray(observed_at, dtype=np.float64), 0.0)
                 / half_life_s).tolist()
    return 0.5 * np.array([0.5 ** x for x in exponents], dtype=np.float64)


def _units(values: np.ndarray) -> np.ndarray:
    """_unit element by element."""
    v = np.asarray(values, dtype=np.float64)
    return np.where(np.isfinite(v), np.minimum(np.maximum(v, 0.0), 1.0), 0.0)


def utility(c: ReplayCandidate, now: float, params: ReplayParams,
            live_share: dict[str, float]) -> float:
    """Mattar-Daw: gain x need."""
    return gain(c, params.surprise_weight) * need(c, now, params.need_half_life_s, live_share)


def utilities(candidates: Sequence[ReplayCandidate], now: float, params: ReplayParams,
              live_share: dict[str, float]) -> list[float]:
    """utility() of each candidate, in order, over arrays (gains_of, recency_needs): the
    same floats, without a Python call chain per candidate."""
    if not candidates:
        return []
    gains = gains_over(candidates, params.surprise_weight)
    shares = np.array([live_share.get(c.context, 0.0) for c in candidates], dtype=np.float64)
    needs = recency_needs(np.array([c.observed_at for c in candidates], dtype=np.float64),
                          now, params.need_half_life_s) + 0.5 * shares
    return list(map(float, gains * needs))


def split(batch_size: int, recent_fraction: float, n_recent: int, n_old: int) -> tuple[int, int]:
    """How many recent and old episodes to take; a short side gives its slots to the other."""
    batch = max(batch_size, 0)
    want_recent = round(batch * _unit(recent_fraction))
    take_recent = min(want_recent, n_recent)
    take_old = min(batch - take_recent, n_old)
    take_recent = min(batch - take_old, n_recent)
    return take_recent, take_old


def interleave(recent: Sequence[str], old: Sequence[str]) -> list[str]:
    """Spread the old ids evenly among the recent ones, keeping each side's order."""
    total = len(recent) + len(old)
    out: list[str] = []
    r = o = 0
    for i in range(total):
        # Place an old id whenever the old share so far falls behind its target share.
        if o < len(old) and (r >= len(recent) or (o + 1) * total <= (i + 1) * len(old)):
            out.append(old[o])
            o += 1
        else:
            out.append(recent[r])
            r += 1
    return out


def select(candidates: Sequence[ReplayCandidate], now: float, params: ReplayParams,
           seed: int) -> list[str]:
    """The replay batch, in replay order. Recent: highest priority first (ties by id).
    Old: a seeded draw without replacement weighted by utility (Efraimidis-Spirakis)."""
    curiosity = _units(np.array([c.curiosity for c in candidates], dtype=np.float64))
    eligible = [c for c, u in zip(candidates, curiosity.tolist(), strict=True)
                if u >= params.min_curiosity]
    recent = [c for c in eligible if c.recent]
    old = [c for c in eligible if not c.recent]
    take_recent, take_old = split(params.batch_size, params.recent_fraction,
                                  len(recent), len(old))
    recent.sort(key=lambda c: (-priority(c.curiosity, c.importance, params.surprise_weight),
                               c.id))
    live = Counter(c.context for c in recent)
    live_share = {k: n / len(recent) for k, n in live.items()} if recent else {}
    rng = random.Random(seed)  # noqa: S311 - a reproducible draw, not a secret
    old.sort(key=lambda c: c.id)
    keyed = []
    for c, w in zip(old, utilities(old, now, params, live_share), strict=True):
        u = rng.random()
        # key = u^(1/w): larger for larger weights; zero-utility episodes come last.
        key = math.log(u) / w if w > 0 and u > 0 else -math.inf
        keyed.append((key, c.id))
    keyed.sort(key=lambda kv: (-kv[0], kv[1]))
    chosen_old = [i for _, i in keyed[:take_old]]
    return interleave([c.id for c in recent[:take_recent]], chosen_old)

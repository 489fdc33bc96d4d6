"""NREM dreaming, the pure part: replay episodes against the semantic model, keep surprises.

Replay is utility-weighted (importance, curiosity, recency) and sampled, so quiet old
episodes still get an occasional turn. Each replayed episode is measured against the
BASELINE fact of its pool (and regime when one exists); a large z-score is a prediction
residual: the semantic model did not expect it. Residuals group into dream hypotheses by
(baseline, direction, confirm window) with a content-derived id, so dreaming twice over
the same episodes and facts proposes the same hypotheses, never new copies.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from golem.consolidation.baselines import ALL_REGIMES, metrics_of

# Hypotheses are speculation: they enter staged, in this low confidence band, and must
# earn more through evidence.
MIN_CONFIDENCE, MAX_CONFIDENCE = 0.2, 0.3


@dataclass(frozen=True)
class ReplayWeights:
    """Utility = w_i * importance + w_c * curiosity + w_r * recency (+ floor, so none is 0)."""

    importance: float = 0.4
    curiosity: float = 0.4
    recency: float = 0.2
    half_life_s: float = 86_400.0
    floor: float = 0.05


def replay_utility(importance: float, curiosity: float, age_s: float,
                   w: ReplayWeights = ReplayWeights()) -> float:
    """A sampling weight in (0, 1 + floor]: recency halves every ``half_life_s``."""
    recency = 0.5 ** (max(0.0, age_s) / w.half_life_s) if w.half_life_s > 0 else 0.0
    total = w.importance + w.curiosity + w.recency
    score = (w.importance * _unit(importance) + w.curiosity * _unit(curiosity)
             + w.recency * recency) / total if total > 0 else 0.0
    return w.floor + score


def sample_replay(utilities: Mapping[str, float], k: int, seed: int) -> list[str]:
    """``k`` ids drawn without replacement with probability ~ utility (Efraimidis-Spirakis
    keys u^(1/w)); deterministic for a seed, highest key first."""
    rng = random.Random(seed)  # noqa: S311 - sampling, not security
    keyed = []
    for eid in sorted(utilities):
        weight = utilities[eid]
        u = rng.random()
        keyed.append((u ** (1.0 / weight) if weight > 0 else 0.0, eid))
    keyed.sort(key=lambda x: (-x[0], x[1]))
    return [eid for _, eid in keyed[:max(0, k)]]


@dataclass(frozen=True)
class Baseline:
    """A BASELINE fact as consolidation writes it: what is normal for a metric in a pool."""

    entry_id: str
    key: str
    metric: str
    pool: str
    mean: float
    stddev: float
    regime: str | None = None


def baseline_of(entry_id: str, fact: Mapping[str, Any]) -> Baseline | None:
    """A size baseline as consolidation writes it (baselines.py: metric "<name>@<pool>/<regime>",
    regime "*" for all regimes); None for rate baselines (no per-episode value) and for
    facts lacking what a residual needs (no pool, no spread, not finite)."""
    try:
        metric, pool = str(fact["metric"]).split("@", 1)[0], str(fact["pool"]).lower()
        mean, stddev = float(fact["mean"]), float(fact["stddev"])
    except (KeyError, TypeError, ValueError):
        return None
    if fact.get("unit") == "per_hour" or not pool:
        return None
    if not (math.isfinite(mean) and math.isfinite(stddev)) or stddev <= 0.0:
        return None
    regime = fact.get("regime")
    return Baseline(entry_id, str(fact.get("key", entry_id)), metric, pool, mean, stddev,
                    str(regime) if regime and regime != ALL_REGIMES else None)


def episode_metrics(payload: Mapping[str, Any]) -> dict[str, float]:
    """The sizes an episode carries, named as consolidation's baselines name them."""
    return dict(metrics_of(payload))


@dataclass(frozen=True)
class ReplayedEpisode:
    id: str
    pool: str
    regime: str | None
    observed_at: float
    metrics: Mapping[str, float]


@dataclass(frozen=True)
class Residual:
    episode_id: str
    baseline: Baseline
    value: float
    z: float
    observed_at: float


def match_baseline(episode: ReplayedEpisode, baselines: Sequence[Baseline]) -> list[Baseline]:
    """Per metric the episode has, its pool's baseline: the regime's own when one exists,
    else the regime-less one."""
    out = []
    for metric in sorted(episode.metrics):
        mine = [b for b in baselines if b.pool == episode.pool and b.metric == metric]
        regimed = [b for b in mine if b.regime is not None and b.regime == episode.regime]
        plain = [b for b in mine if b.regime is None]
        chosen = regimed or plain
        if chosen:
            out.append(min(chosen, key=lambda b: b.key))
    return out


def residuals(episodes: Iterable[ReplayedEpisode], baselines: Sequence[Baseline],
              threshold_z: float) -> tuple[int, list[Residual]]:
    """(how many episodes had a baseline to compare with, the residuals |z| >= threshold)."""
    compared, found = 0, []
    for ep in episodes:
        matched = match_baseline(ep, baselines)
        compared += bool(matched)
        for b in matched:
            value = ep.metrics[b.metric]
            z = (value - b.mean) / b.stddev
            if math.isfinite(z) and abs(z) >= threshold_z:
                found.append(Residual(ep.id, b, value, z, ep.observed_at))
    return compared, found


@dataclass(frozen=True)
class Hypothesis:
    id: str
    key: str
    text: str
    baseline: Baseline
    direction: str  # "above" | "below"
    episode_ids: tuple[str, ...]
    max_abs_z: float
    confidence: float
    window_start: float


def hypothesis_id(namespace: str, baseline_key: str, direction: str, bucket: int) -> str:
    raw = f"{namespace}|{baseline_key}|{direction}|{bucket}".encode()
    return "dream-" + hashlib.sha256(raw).hexdigest()[:26]


def confidence_for(max_abs_z: float, threshold_z: float, n: int) -> float:
    """0.2 at the threshold, rising with how far and how often the model was wrong; <= 0.3."""
    excess = max(0.0, max_abs_z - threshold_z) / max(threshold_z, 1e-9)
    support = 1.0 - 1.0 / (1.0 + max(0, n - 1))
    lift = 0.5 * min(1.0, excess) + 0.5 * support
    return round(MIN_CONFIDENCE + (MAX_CONFIDENCE - MIN_CONFIDENCE) * lift, 4)


def hypotheses(namespace: str, found: Iterable[Residual], threshold_z: float,
               window_s: float) -> list[Hypothesis]:
    """One hypothesis per (baseline, direction, confirm window the episodes fell in)."""
    groups: dict[tuple[str, str, int], list[Residual]] = {}
    for r in found:
        direction = "above" if r.z > 0 else "below"
        bucket = math.floor(r.observed_at / window_s) if window_s > 0 else 0
        groups.setdefault((r.baseline.key, direction, bucket), []).append(r)
    out = []
    for (key, direction, bucket), rs in sorted(groups.items()):
        rs.sort(key=lambda r: (-abs(r.z), r.episode_id))
        b = rs[0].baseline
        ids = tuple(sorted({r.episode_id for r in rs}))
        worst = abs(rs[0].z)
        regime = f" in {b.regime} markets" if b.regime else ""
        text = (f"Dream hypothesis: {b.metric} at pool {b.pool}{regime} ran {direction} its "
                f"baseline (mean {b.mean:.4g}, stddev {b.stddev:.4g}): {len(ids)} replayed "
                f"episode(s), worst {rs[0].z:+.1f} sigma at {rs[0].value:.4g}. The baseline "
                f"may be shifting; unconfirmed.")
        out.append(Hypothesis(
            id=hypothesis_id(namespace, key, direction, bucket),
            key=f"dream/{key}/{direction}/{bucket}", text=text, baseline=b,
            direction=direction, episode_ids=ids, max_abs_z=worst,
            confidence=confidence_for(worst, threshold_z, len(ids)),
            window_start=bucket * window_s))
    return out


def hypothesis_fact(h: Hypothesis, now: float, window_s: float) -> dict[str, Any]:
    """The fact a staged dream entry carries; the curator reads confirm_window_s/expires_at."""
    return {"key": h.key, "hypothesis": h.text, "about": h.baseline.key,
            "about_entry": h.baseline.entry_id, "metric": h.baseline.metric,
            "pool": h.baseline.pool, "regime": h.baseline.regime, "direction": h.direction,
            "max_abs_z": round(h.max_abs_z, 4), "confirm_window_s": window_s,
            "expires_at": now + window_s}


def _unit(x: float) -> float:
    return min(1.0, max(0.0, float(x))) if math.isfinite(x) else 0.0


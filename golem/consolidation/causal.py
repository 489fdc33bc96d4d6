"""Causal relations with a measured lag, and protocol patterns (seed 000 fact kinds).

Causal relations. Each pool's events in the recent window become a count series in
fixed bins. For every ordered pair (A, B) and lag L in 1..max_lag bins, the Pearson
correlation of A[t] with B[t + L]; the pair's peak is the lag with the highest
correlation. Chance is measured, not assumed: every series is circularly shifted by
an independent seeded random offset (which keeps each series' own rhythm and
autocorrelation but breaks any relation between pools), the same scan is run, and the
largest correlation over all pairs and lags is kept; repeated ``surrogates`` times,
the (1 - alpha) quantile of those maxima is a family-wise threshold. A relation is
reported only when its peak beats that threshold and ``min_corr``. Lag 0 (same bin)
is never reported: it says nothing about direction.

Protocol patterns. The share of follower events (default LiquidationCall) within W
seconds after a trigger event (default AnswerUpdated) against the base rate: the
fraction of the window covered by [trigger, trigger + W). Under independence the
share is binomial around the base rate; a pattern needs a z-score of at least
``min_z`` and ``min_events`` followers.

Pure: numpy in, candidates out; the only randomness is seeded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from golem.consolidation.baselines import ALL_REGIMES, pool_of, short
from golem.consolidation.facts import FactCandidate, sources, span
from golem.grimoire.records import DecayClass, EntryType, Episode, FactKind, InsightCategory

Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True)
class CausalParams:
    bin_s: float = 60.0
    max_lag_bins: int = 10
    min_events: int = 10
    min_corr: float = 0.2
    surrogates: int = 100
    alpha: float = 0.05


@dataclass(frozen=True)
class Relation:
    cause: str
    effect: str
    lag_bins: int
    corr: float
    threshold: float


def _standardise(series: Matrix) -> Matrix:
    centred = series - series.mean(axis=1, keepdims=True)
    sd = centred.std(axis=1, keepdims=True)
    return np.asarray(centred / np.where(sd > 0, sd, 1.0), dtype=np.float64)


def lagged_corr(z: Matrix, max_lag: int) -> Matrix:
    """(lags, P, P): [L-1, a, b] = correlation of a[t] with b[t + L] (standardised rows)."""
    n = z.shape[1]
    out = np.empty((max_lag, z.shape[0], z.shape[0]))
    for lag in range(1, max_lag + 1):
        out[lag - 1] = z[:, : n - lag] @ z[:, lag:].T / (n - lag)
    return out


# Surrogates whose shifted series are correlated in one batch of matrix products (bounds
# the batch's memory: 20 x P x T floats).
SURROGATE_BATCH = 20


def surrogate_peaks(z: Matrix, shifts: npt.NDArray[np.int64], max_lag: int) -> Matrix:
    """For each row of ``shifts`` (one circular shift per series of ``z``, as np.roll
    shifts): the largest lagged correlation (lags 1..max_lag) between two different
    series of the shifted ``z``. A pool against itself is autocorrelation, not cause."""
    p, t = z.shape
    rows = np.arange(p)[None, :, None]
    other = ~np.eye(p, dtype=bool)
    peaks = []
    for start in range(0, len(shifts), SURROGATE_BATCH):
        block = shifts[start:start + SURROGATE_BATCH]
        shifted = z[rows, (np.arange(t)[None, None, :] - block[:, :, None]) % t]
        peak = np.full(len(block), -np.inf)
        for lag in range(1, max_lag + 1):
            corr = shifted[:, :, : t - lag] @ shifted[:, :, lag:].transpose(0, 2, 1) / (t - lag)
            peak = np.maximum(peak, corr[:, other].max(axis=1))
        peaks.append(peak)
    return np.concatenate(peaks) if peaks else np.zeros(0)


def find_relations(series: Matrix, names: Sequence[str], params: CausalParams,
                   seed: int) -> list[Relation]:
    """Relations between rows of ``series`` (P pools x T bins) that beat chance."""
    p, t = series.shape
    max_lag = min(params.max_lag_bins, t // 4)
    if p < 2 or max_lag < 1:
        return []
    z = _standardise(np.asarray(series, dtype=np.float64))
    observed = lagged_corr(z, max_lag)
    rng = np.random.default_rng(seed)
    # one draw of p shifts a surrogate, in turn (the seeded stream as it always was)
    shifts = np.array([rng.integers(max_lag + 1, max(t - max_lag, max_lag + 2), size=p)
                       for _ in range(params.surrogates)], dtype=np.int64).reshape(-1, p)
    maxima = surrogate_peaks(z, shifts, max_lag)
    threshold = max(float(np.quantile(maxima, 1.0 - params.alpha)), params.min_corr)
    out = []
    for a in range(p):
        for b in range(p):
            if a == b:
                continue
            lag = int(np.argmax(observed[:, a, b]))
            r = float(observed[lag, a, b])
            if r > threshold:
                out.append(Relation(names[a], names[b], lag + 1, r, threshold))
    return out


def rate_series(episodes: Sequence[Episode], start: float, end: float, bin_s: float,
                min_events: int) -> tuple[list[str], Matrix, dict[str, list[Episode]]]:
    """Per-pool event counts in bins over [start, end]; pools with too few events dropped."""
    nbins = math.ceil((end - start) / bin_s) if end > start else 0
    by_pool: dict[str, list[Episode]] = {}
    if nbins < 1:
        return [], np.zeros((0, 0)), by_pool
    for e in episodes:
        pool = pool_of(e)
        if pool and start <= e.observed_at <= end:
            by_pool.setdefault(pool, []).append(e)
    names = sorted(p for p, eps in by_pool.items() if len(eps) >= min_events)
    series = np.zeros((len(names), nbins))
    for row, pool in enumerate(names):
        for e in by_pool[pool]:
            series[row, min(int((e.observed_at - start) // bin_s), nbins - 1)] += 1
    return names, series, by_pool


def rate_key(pool: str) -> str:
    """The key of a pool's cross-regime event-rate baseline (the causal edge's ends)."""
    return f"baseline|event_rate|{pool}|{ALL_REGIMES}"


def causal_relations(episodes: Sequence[Episode], start: float, end: float,
                     params: CausalParams, seed: int) -> list[FactCandidate]:
    names, series, by_pool = rate_series(episodes, start, end, params.bin_s, params.min_events)
    out = []
    for rel in find_relations(series, names, params, seed):
        lag_s = rel.lag_bins * params.bin_s
        key = f"causal|event_rate|{rel.cause}|{rel.effect}"
        text = (f"Activity at pool {short(rel.cause)} leads activity at pool "
                f"{short(rel.effect)} by about "
                f"{lag_s:.0f} s: event-rate correlation {rel.corr:.2f} at that lag "
                f"(chance threshold {rel.threshold:.2f}).")
        eps = by_pool[rel.cause] + by_pool[rel.effect]
        lo, hi = span(eps)
        fact: dict[str, Any] = {"key": key, "cause": rel.cause, "effect": rel.effect,
                                "lag_s": lag_s, "metric": "event_rate", "corr": rel.corr,
                                "threshold": rel.threshold, "bin_s": params.bin_s,
                                "sign": 1}
        out.append(FactCandidate(
            key=key, text=text, fact_kind=FactKind.CAUSAL_RELATION,
            entry_type=EntryType.CAUSAL_LINK, category=InsightCategory.STRATEGIC_PATTERNS,
            decay_class=DecayClass.STRATEGIC, confidence=min(0.7, 0.3 + rel.corr / 2),
            fact=fact, episodes=len(eps), observed_from=lo, observed_to=hi,
            source_episodes=sources(eps), tokens=(rel.cause, rel.effect),
            links=(rate_key(rel.cause), rate_key(rel.effect))))
    return out


def covered(triggers: Sequence[float], window_s: float, start: float, end: float) -> float:
    """Length of the union of [t, t + window_s) clipped to [start, end)."""
    total, reach = 0.0, start
    for t in sorted(triggers):
        lo, hi = max(t, reach), min(t + window_s, end)
        if hi > lo:
            total += hi - lo
            reach = hi
    return total


def follows(triggers: Sequence[float], t: float, window_s: float) -> bool:
    idx = int(np.searchsorted(np.asarray(triggers), t, side="right")) - 1
    return idx >= 0 and t - triggers[idx] < window_s


def pattern(episodes: Sequence[Episode], start: float, end: float, *, trigger: str,
            follower: str, window_s: float, min_events: int = 5,
            min_z: float = 3.0) -> FactCandidate | None:
    """Followers clustering after triggers more than chance allows; None otherwise."""
    inside = [e for e in episodes if start <= e.observed_at <= end]
    triggers = sorted(e.observed_at for e in inside if e.payload.get("event") == trigger)
    followers = [e for e in inside if e.payload.get("event") == follower]
    if not triggers or len(followers) < min_events or end <= start:
        return None
    base = covered(triggers, window_s, start, end) / (end - start)
    hits = [e for e in followers if follows(triggers, e.observed_at, window_s)]
    n, k = len(followers), len(hits)
    if base <= 0 or base >= 1:
        return None
    z = (k - n * base) / math.sqrt(n * base * (1 - base))
    if z < min_z:
        return None
    share = k / n
    key = f"pattern|{follower}|after|{trigger}|{window_s:g}"
    text = (f"{follower} events cluster after {trigger}: {k} of {n} ({share:.0%}) came within "
            f"{window_s:g} s of one, against {base:.0%} expected by chance "
            f"({share / base:.1f}x).")
    lo, hi = span(followers)
    return FactCandidate(
        key=key, text=text, fact_kind=FactKind.PROTOCOL_PATTERN,
        entry_type=EntryType.INSIGHT, category=InsightCategory.RISK_EVENTS,
        decay_class=DecayClass.STRATEGIC, confidence=min(0.7, 0.4 + 0.05 * z),
        fact={"key": key, "pattern": text, "trigger": trigger, "follower": follower,
              "window_s": window_s, "hits": k, "followers": n, "share": share,
              "base_rate": base, "z": z},
        episodes=n + len(triggers), observed_from=lo, observed_to=hi,
        source_episodes=sources(hits or followers), importance=0.7)

"""Conditional outcomes: after a move of a given size on a price feed, in a perceived
regime, what the feed did over the next horizon (pure).

The series are the oracle answers Gamma captured (``AnswerUpdated`` episodes, their
``current`` argument, per feed address). For every answer at time t with an answer at
or before ``t - lookback_s`` and one at or after ``t + horizon_s``, the trailing move is
bucketed (``move_bucket``) and the forward return (first answer at or after
``t + horizon_s`` over the answer at t, minus 1) is counted for (feed, regime at t,
bucket). The regime at t is the tape's (``golem.perception.market.tape_regime`` over
the answers from the last one at or before ``t - lookback_s`` to t), the same reading
Theta makes of its own tape, so a fact learned in "volatile" is found in "volatile".
With ``counted_after``, an answer counts only when its forward answer was observed after
that time: a run over the episodes since its cursor, given the answers of the preceding
lookback and horizon as context, counts every answer exactly once over successive runs.
A group with at least ``min_samples`` returns becomes a fact of kind
``conditional_outcome``: n, mean, population stddev, the share of returns above 0
(``p_up``), the shares of down, flat and up outcomes as the prediction scoring
defines them (``shares``; flat: within ``golem.cognition.predictions.FLAT_BAND``), and
``n_eff``, the number of distinct horizon-long spans of time the answers fall in.
Answers closer together than the horizon share most of their forward return, so n
overstates the evidence; ``n_eff`` is what standard errors (and the offline tier's
weights) count.

A repeat sighting pools the statistics exactly, unless the new sample's mean lies more
than ``SHIFT_Z`` standard errors (over ``n_eff``) from the stored one (each side with
at least ``min_samples`` effective observations): the behaviour changed, and the new
measurement replaces the old one instead of being averaged into it (the fact records
what it superseded).

The buckets (``golem.perception.market.move_bucket``) are what the offline tier looks
situations up by.

``trade_outcomes``: the golem's own swaps (``strategy_outcome`` episodes with result
"ok" or "dry_run") in the same terms, a procedural fact per (side, regime, bucket):
when there is exactly one feed, the situation at a swap is the one of the feed's last
answer at or before it, and the swap "paid" when the feed's move from that answer to
the first one at or after ``horizon_s`` later, in the swap's direction (up for a buy of
``BASE``, down for a sell), beat ``cost``. Counted like conditional outcomes
(``counted_after``), at least ``min_trades`` per fact; a repeat sighting adds up
(``merge_trade_outcome``). The offline tier sizes a trade by its record in the
situation.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from typing import Any

from golem.cognition.offline import BASE, SWAP_COST
from golem.cognition.predictions import observed_direction
from golem.consolidation.baselines import pool_of, pooled, stats
from golem.consolidation.facts import FactCandidate, sources, span
from golem.grimoire.payloads import OUTCOME_CATEGORY
from golem.grimoire.records import DecayClass, EntryType, Episode, FactKind, InsightCategory
from golem.perception.market import (
    BUCKET_WORDS,
    PricePoint,
    move_bucket,
    outcome_key,
    tape_regime,
    trade_key,
)

ORACLE_EVENT = "AnswerUpdated"
SHIFT_Z = 3.0
DIRECTIONS = ("down", "flat", "up")  # the order of a fact's "shares"


def _answer(e: Episode) -> float | None:
    value = e.payload.get("args", {}).get("current") if isinstance(
        e.payload.get("args"), Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    out = float(value)
    return out if math.isfinite(out) and out > 0 else None


def price_series(episodes: Sequence[Episode]) -> dict[str, list[tuple[float, float,
                                                                        Episode]]]:
    """Per feed address: (time, answer, episode), oldest first."""
    out: dict[str, list[tuple[float, float, Episode]]] = {}
    for e in episodes:
        if e.payload.get("event") != ORACLE_EVENT:
            continue
        price = _answer(e)
        feed = pool_of(e)
        if price is not None and feed:
            out.setdefault(feed, []).append((e.observed_at, price, e))
    for series in out.values():
        series.sort(key=lambda row: (row[0], row[2].id))
    return out


def conditional_outcomes(episodes: Sequence[Episode], *, lookback_s: float,
                         horizon_s: float, min_samples: int = 5,
                         counted_after: float | None = None) -> list[FactCandidate]:
    """The facts of the module docstring, one per (feed, regime, bucket) group."""
    groups: dict[tuple[str, str, str], list[tuple[float, Episode]]] = {}
    for feed, series in sorted(price_series(episodes).items()):
        times = [row[0] for row in series]
        for i, (t, price, episode) in enumerate(series):
            back = bisect.bisect_right(times, t - lookback_s) - 1
            ahead = bisect.bisect_left(times, t + horizon_s)
            if back < 0 or ahead >= len(series):
                continue
            if counted_after is not None and times[ahead] <= counted_after:
                continue
            move = price / series[back][1] - 1.0
            forward = series[ahead][1] / price - 1.0
            regime = tape_regime(tuple(PricePoint(row[0], row[1])
                                       for row in series[back:i + 1]))
            groups.setdefault((feed, regime, move_bucket(move)), []).append(
                (forward, episode))
    out = []
    for (feed, regime, bucket), rows in sorted(groups.items()):
        if len(rows) >= min_samples:
            out.append(_candidate((feed, regime, bucket), rows, horizon_s=horizon_s,
                                  lookback_s=lookback_s))
    return out


def outcome_text(fact: Mapping[str, Any]) -> str:
    regime = fact["regime"]
    minutes = int(fact["horizon_s"]) // 60
    back = int(fact["lookback_s"]) // 60
    words = BUCKET_WORDS.get(fact["bucket"], fact["bucket"])
    return (f"After oracle feed {fact['feed']} {words} over {back} min in regime {regime}, "
            f"the next {minutes} min returned mean "
            f"{fact['mean']:+.3%} (stddev {fact['stddev']:.3%}), up in "
            f"{fact['p_up']:.0%} of {fact['n']} cases.")


def _candidate(group: tuple[str, str, str], rows: Sequence[tuple[float, Episode]], *,
               horizon_s: float, lookback_s: float) -> FactCandidate:
    feed, regime, bucket = group
    returns = [r for r, _ in rows]
    eps = [e for _, e in rows]
    mean, sd = stats(returns)
    key = outcome_key(feed, regime, bucket, horizon_s)
    fact: dict[str, Any] = {
        "key": key, "feed": feed, "regime": regime, "bucket": bucket,
        "horizon_s": float(horizon_s), "lookback_s": float(lookback_s), "n": len(returns),
        "n_eff": len({math.floor(e.observed_at / horizon_s) for e in eps}),
        "mean": mean, "stddev": sd, "p_up": sum(r > 0 for r in returns) / len(returns),
        "shares": [sum(observed_direction(r) == d for r in returns) / len(returns)
                   for d in DIRECTIONS]}
    lo, hi = span(eps)
    return FactCandidate(
        key=key, text=outcome_text(fact), fact_kind=FactKind.CONDITIONAL_OUTCOME,
        entry_type=EntryType.INSIGHT, category=InsightCategory.STRATEGIC_PATTERNS,
        decay_class=DecayClass.TACTICAL,
        confidence=min(0.8, 0.4 + 0.05 * math.log2(len(returns))),
        fact=fact, episodes=len(eps), observed_from=lo, observed_to=hi,
        source_episodes=sources(eps), tokens=(feed,), importance=0.6)


def merge_outcome(old: Mapping[str, Any], new: Mapping[str, Any],
                  min_samples: int = 5) -> dict[str, Any]:
    """Pool a repeat sighting, or let it supersede the stored one (module docstring)."""
    n1, m1, s1 = int(old["n"]), float(old["mean"]), float(old["stddev"])
    n2, m2, s2 = int(new["n"]), float(new["mean"]), float(new["stddev"])
    p1, p2 = float(old["p_up"]), float(new["p_up"])
    e1, e2 = _effective(old), _effective(new)
    if e1 >= min_samples and e2 >= min_samples:
        error = math.sqrt(s1 * s1 / e1 + s2 * s2 / e2)
        if error > 0 and abs(m2 - m1) / error > SHIFT_Z:
            return {**new, "superseded": {"n": n1, "mean": m1, "stddev": s1, "p_up": p1}}
    n, mean, sd = pooled((n1, m1, s1), (n2, m2, s2))
    out = {**new, "n": n, "n_eff": e1 + e2, "mean": mean, "stddev": sd,
           "p_up": (p1 * n1 + p2 * n2) / n if n else 0.5}
    old_shares, new_shares = _shares(old.get("shares")), _shares(new.get("shares"))
    if old_shares is not None and new_shares is not None and n:
        out["shares"] = [(a * n1 + b * n2) / n for a, b in zip(old_shares, new_shares,
                                                               strict=True)]
    else:  # a fact stored before shares were counted: they cover the new sample only
        out.pop("shares", None)
    return out


def _effective(fact: Mapping[str, Any]) -> int:
    """A fact's effective count (its n where a fact predates n_eff)."""
    value = fact.get("n_eff")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) \
        and value >= 1 else int(fact["n"])


def _shares(value: object) -> list[float] | None:
    if (isinstance(value, list) and len(value) == len(DIRECTIONS)
            and all(isinstance(x, int | float) and not isinstance(x, bool) for x in value)):
        return [float(x) for x in value]
    return None


TRADED = ("ok", "dry_run")  # results whose market outcome counts


def _side(e: Episode) -> str | None:
    p = e.payload
    if e.category != OUTCOME_CATEGORY or p.get("action") != "swap" \
            or p.get("result") not in TRADED or p.get("settle"):
        return None
    if p.get("asset_out") == BASE:
        return "buy"
    return "sell" if p.get("asset_in") == BASE else None


def trade_outcomes(episodes: Sequence[Episode], *, lookback_s: float, horizon_s: float,
                   min_trades: int = 3, counted_after: float | None = None,
                   cost: float = SWAP_COST) -> list[FactCandidate]:
    """The procedural facts of the module docstring, one per (side, regime, bucket)."""
    series = price_series(episodes)
    if len(series) != 1:
        return []
    ((feed, rows),) = series.items()
    times = [row[0] for row in rows]
    groups: dict[tuple[str, str, str], list[tuple[float, Episode]]] = {}
    for e in episodes:
        side = _side(e)
        if side is None:
            continue
        at = bisect.bisect_right(times, e.observed_at) - 1
        back = bisect.bisect_right(times, times[at] - lookback_s) - 1 if at >= 0 else -1
        ahead = bisect.bisect_left(times, e.observed_at + horizon_s)
        if back < 0 or ahead >= len(rows) or (counted_after is not None
                                              and times[ahead] <= counted_after):
            continue
        move = rows[at][1] / rows[back][1] - 1.0
        regime = tape_regime(tuple(PricePoint(r[0], r[1]) for r in rows[back:at + 1]))
        forward = rows[ahead][1] / rows[at][1] - 1.0
        edge = (forward if side == "buy" else -forward) - cost
        groups.setdefault((side, regime, move_bucket(move)), []).append((edge, e))
    out = []
    for (side, regime, bucket), found in sorted(groups.items()):
        if len(found) < min_trades:
            continue
        edges = [x for x, _ in found]
        key = trade_key(side, regime, bucket, horizon_s)
        fact: dict[str, Any] = {
            "key": key, "strategy": "swap", "side": side, "feed": feed, "regime": regime,
            "bucket": bucket, "horizon_s": float(horizon_s), "lookback_s": float(lookback_s),
            "trades": len(edges), "paid": sum(x > 0 for x in edges),
            "mean_edge": sum(edges) / len(edges)}
        eps = [e for _, e in found]
        lo, hi = span(eps)
        out.append(FactCandidate(
            key=key, text=trade_text(fact), fact_kind=FactKind.PROCEDURAL,
            entry_type=EntryType.STRATEGY_FRAGMENT, category=InsightCategory.STRATEGIC_PATTERNS,
            decay_class=DecayClass.TACTICAL, confidence=min(0.7, 0.4 + 0.03 * len(eps)),
            fact=fact, episodes=len(eps), observed_from=lo, observed_to=hi,
            source_episodes=sources(eps), tokens=(feed,), importance=0.7))
    return out


def trade_text(fact: Mapping[str, Any]) -> str:
    words = BUCKET_WORDS.get(fact["bucket"], fact["bucket"])
    verb = "buys" if fact["side"] == "buy" else "sells"
    return (f"Our own {verb} of {BASE} after oracle feed {fact['feed']} {words} in regime "
            f"{fact['regime']} paid (beat the swap's cost over the next "
            f"{int(fact['horizon_s']) // 60} min) in {fact['paid']} of {fact['trades']} "
            f"trades; mean edge after costs {fact['mean_edge']:+.3%}.")


def merge_trade_outcome(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A repeat sighting of a trade-outcome fact: counts add up, the edge is pooled."""
    n1, n2 = int(old["trades"]), int(new["trades"])
    n = n1 + n2
    return {**new, "trades": n, "paid": int(old["paid"]) + int(new["paid"]),
            "mean_edge": (float(old["mean_edge"]) * n1 + float(new["mean_edge"]) * n2) / n
            if n else 0.0}

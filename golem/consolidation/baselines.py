"""Behavioural baselines: mean and standard deviation of sizes and event rates.

Sizes come from the decoded args Gamma stores in each payload (golem/chain/decoding.py
specs), in the token's raw integer units, per pool and perceived regime. Rates are
events per hour, from fixed-width time bins over the recent window (each bin labelled
with the regime most episodes in it perceived), per pool and regime and per pool
across regimes (regime "*", the end points of causal edges). Gas is not in payloads
today, so there is no gas baseline.

Standard deviations are population ones (divide by n), as in seed 000; a repeat
sighting pools old and new statistics exactly (Chan et al.'s parallel formula).
Pure.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from golem.consolidation.facts import FactCandidate, sources, span
from golem.grimoire.records import DecayClass, EntryType, Episode, FactKind, InsightCategory

ALL_REGIMES = "*"
HOUR_S = 3600.0

Getter = Callable[[Mapping[str, Any]], float | None]


def _num(value: Any) -> float | None:
    """A decoded amount as a float: ints (exact in payloads), floats, or digit strings."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        out = float(value)
    elif isinstance(value, str):
        try:
            out = float(int(value, 0)) if value.strip().lower().startswith("0x") \
                else float(value)
        except ValueError:
            return None
    else:
        return None
    return out if math.isfinite(out) else None


def _arg(name: str) -> Getter:
    return lambda args: _num(args.get(name))


def _abs_arg(name: str) -> Getter:
    def get(args: Mapping[str, Any]) -> float | None:
        v = _num(args.get(name))
        return None if v is None else abs(v)
    return get


def _sum_args(a: str, b: str) -> Getter:
    def get(args: Mapping[str, Any]) -> float | None:
        x, y = _num(args.get(a)), _num(args.get(b))
        return None if x is None or y is None else x + y
    return get


# (event name, number of args it must have) -> metrics read from its args.
SIZE_METRICS: dict[str, tuple[tuple[str, Getter], ...]] = {
    # Uniswap V2 Swap: the amount of each token that moved, in or out.
    "Swap:6": (("swap_amount0", _sum_args("amount0In", "amount0Out")),
               ("swap_amount1", _sum_args("amount1In", "amount1Out"))),
    # Uniswap V3 Swap: signed deltas; the size is their magnitude.
    "Swap:7": (("swap_amount0", _abs_arg("amount0")), ("swap_amount1", _abs_arg("amount1"))),
    "Sync:2": (("reserve0", _arg("reserve0")), ("reserve1", _arg("reserve1"))),
    "AnswerUpdated:3": (("oracle_answer", _arg("current")),),
    "LiquidationCall:7": (("liquidation_debt", _arg("debtToCover")),
                          ("liquidation_collateral", _arg("liquidatedCollateralAmount"))),
    "Supply:5": (("supply_amount", _arg("amount")),),
    "Withdraw:4": (("withdraw_amount", _arg("amount")),),
    "Borrow:7": (("borrow_amount", _arg("amount")),),
    "Repay:5": (("repay_amount", _arg("amount")),),
    "Transfer:3": (("transfer_value", _arg("value")),),
}


def metrics_of(payload: Mapping[str, Any]) -> list[tuple[str, float]]:
    """(metric, value) pairs an episode's decoded event contributes."""
    args = payload.get("args")
    if not isinstance(args, Mapping):
        return []
    out = []
    for name, get in SIZE_METRICS.get(f"{payload.get('event')}:{len(args)}", ()):
        value = get(args)
        if value is not None:
            out.append((name, value))
    return out


def stats(values: Sequence[float]) -> tuple[float, float]:
    """(mean, population stddev)."""
    n = len(values)
    mean = sum(values) / n
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / n)


def pooled(old: tuple[int, float, float], new: tuple[int, float, float],
           ) -> tuple[int, float, float]:
    """Exact (n, mean, population stddev) of two samples from their summaries."""
    n1, m1, s1 = old
    n2, m2, s2 = new
    n = n1 + n2
    if n == 0:
        return 0, 0.0, 0.0
    delta = m2 - m1
    mean = m1 + delta * n2 / n
    m2sum = s1 * s1 * n1 + s2 * s2 * n2 + delta * delta * n1 * n2 / n
    return n, mean, math.sqrt(max(m2sum, 0.0) / n)


def pool_of(e: Episode) -> str:
    address = e.payload.get("address")
    return address.lower() if isinstance(address, str) and address else ""


def regime_of(e: Episode) -> str:
    regime = e.payload.get("perceived_regime")
    return regime if isinstance(regime, str) and regime else "unknown"


def short(address: str) -> str:
    """0x1234...abcd: fact texts are embedded, and a full address costs ~30 tokens.
    The full address stays in the fact and in the entry's metadata tokens."""
    return f"{address[:6]}...{address[-4:]}" if len(address) > 12 else address


# Which token a size metric is denominated in: a key of the payload's "tokens"
# (token0/token1 for pools) or the arg / payload field naming the token's address.
METRIC_TOKEN: dict[str, tuple[str, str]] = {
    "swap_amount0": ("key", "token0"), "reserve0": ("key", "token0"),
    "swap_amount1": ("key", "token1"), "reserve1": ("key", "token1"),
    "transfer_value": ("payload", "address"), "oracle_answer": ("payload", "address"),
    "supply_amount": ("arg", "reserve"), "withdraw_amount": ("arg", "reserve"),
    "borrow_amount": ("arg", "reserve"), "repay_amount": ("arg", "reserve"),
    "liquidation_debt": ("arg", "debtAsset"), "liquidation_collateral": ("arg", "collateralAsset"),
}
# Token symbols are on-chain strings anyone can set: only plain ones are ever shown.
SAFE_SYMBOL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,11}")


def token_of(metric: str, payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """{"symbol": plain symbol or None, "decimals": int} of the token a metric counts in,
    from the metadata Gamma stored with the episode; None when unknown."""
    where = METRIC_TOKEN.get(metric)
    tokens = payload.get("tokens")
    if where is None or not isinstance(tokens, Mapping):
        return None
    kind, name = where
    args = payload.get("args")
    key = name if kind == "key" else payload.get(name) if kind == "payload" else \
        args.get(name) if isinstance(args, Mapping) else None
    meta = tokens.get(key) if isinstance(key, str) else None
    if not isinstance(meta, Mapping):
        return None
    decimals = meta.get("decimals")
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= 36:
        return None
    symbol = meta.get("symbol")
    plain = symbol if isinstance(symbol, str) and SAFE_SYMBOL.fullmatch(symbol) else None
    return {"symbol": plain, "decimals": decimals}


def baseline_text(fact: Mapping[str, Any]) -> str:
    regime = "all regimes" if fact["regime"] == ALL_REGIMES else f"regime {fact['regime']}"
    mean, sd = float(fact["mean"]), float(fact["stddev"])
    if fact["unit"] == "per_hour":
        unit = "events per hour"
    elif isinstance(fact.get("decimals"), int):  # human units of a known token
        scale = 10.0 ** fact["decimals"]
        mean, sd = mean / scale, sd / scale
        unit = fact.get("symbol") or "token units"
    else:
        unit = "raw token units"
    what = "over" if fact["unit"] == "per_hour" else "from"
    count = f"{fact['n']} {'bins' if fact['unit'] == 'per_hour' else 'observations'}"
    return (f"{fact['protocol'] or 'Pool'} {short(fact['pool'])} {fact['label']}, {regime}: "
            f"mean {mean:.4g}, stddev {sd:.4g} {unit} ({what} {count}).")


def _candidate(metric: str, pool: str, protocol: str, regime: str, values: Sequence[float],
               *, unit: str, eps: Sequence[Episode], label: str) -> FactCandidate:
    mean, sd = stats(values)
    key = f"baseline|{metric}|{pool}|{regime}"
    fact: dict[str, Any] = {"key": key, "metric": f"{metric}@{pool}/{regime}", "label": label,
                            "pool": pool, "protocol": protocol, "regime": regime, "unit": unit,
                            "mean": mean, "stddev": sd, "n": len(values)}
    token = next((t for e in eps if (t := token_of(metric, e.payload)) is not None), None)
    if token is not None:
        fact.update(token)
    lo, hi = span(eps)
    return FactCandidate(
        key=key, text=baseline_text(fact), fact_kind=FactKind.BASELINE,
        entry_type=EntryType.INSIGHT, category=InsightCategory.LIQUIDITY_CONDITIONS,
        decay_class=DecayClass.TACTICAL,
        confidence=min(0.7, 0.4 + 0.05 * math.log2(max(len(values), 1))),
        fact=fact, episodes=len(eps), observed_from=lo, observed_to=hi,
        source_episodes=sources(eps), protocols=(protocol,) if protocol else (),
        tokens=(pool,))


def size_baselines(episodes: Sequence[Episode], min_samples: int = 3) -> list[FactCandidate]:
    """Per (metric, pool, perceived regime)."""
    groups: dict[tuple[str, str, str], list[tuple[float, Episode]]] = {}
    protocols: dict[str, str] = {}
    for e in episodes:
        pool = pool_of(e)
        if not pool:
            continue
        protocols.setdefault(pool, e.protocol or "")
        for metric, value in metrics_of(e.payload):
            groups.setdefault((metric, pool, regime_of(e)), []).append((value, e))
    out = []
    for (metric, pool, regime), rows in sorted(groups.items()):
        if len(rows) >= min_samples:
            out.append(_candidate(metric, pool, protocols[pool], regime, [v for v, _ in rows],
                                  unit="raw", eps=[e for _, e in rows],
                                  label=metric.replace("_", " ")))
    return out


def bin_index(t: float, start: float, bin_s: float) -> int:
    return int((t - start) // bin_s)


def rate_baselines(episodes: Sequence[Episode], start: float, end: float, bin_s: float,
                   min_bins: int = 2) -> list[FactCandidate]:
    """Events per hour per pool, per regime and overall, over [start, end] in bins
    (the last bin also takes events at exactly ``end``)."""
    nbins = math.ceil((end - start) / bin_s) if end > start else 0
    if nbins < min_bins:
        return []
    inside = [e for e in episodes if start <= e.observed_at <= end]
    votes: list[Counter[str]] = [Counter() for _ in range(nbins)]
    counts: dict[str, list[int]] = {}
    by_pool: dict[str, list[Episode]] = {}
    protocols: dict[str, str] = {}
    for e in inside:
        b = min(bin_index(e.observed_at, start, bin_s), nbins - 1)
        votes[b][regime_of(e)] += 1
        pool = pool_of(e)
        if pool:
            counts.setdefault(pool, [0] * nbins)[b] += 1
            by_pool.setdefault(pool, []).append(e)
            protocols.setdefault(pool, e.protocol or "")
    labels, last = [], "unknown"
    for v in votes:  # an empty bin keeps the regime of the one before
        if v:
            last = sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        labels.append(last)
    scale = HOUR_S / bin_s
    out = []
    for pool, series in sorted(counts.items()):
        per_regime: dict[str, list[float]] = {ALL_REGIMES: [c * scale for c in series]}
        for label, c in zip(labels, series, strict=True):
            per_regime.setdefault(label, []).append(c * scale)
        for regime, values in sorted(per_regime.items()):
            if len(values) >= min_bins:
                out.append(_candidate("event_rate", pool, protocols[pool], regime, values,
                                      unit="per_hour", eps=by_pool[pool], label="event rate"))
    return out


def merge_baseline(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    n, mean, sd = pooled((int(old["n"]), float(old["mean"]), float(old["stddev"])),
                         (int(new["n"]), float(new["mean"]), float(new["stddev"])))
    return {**new, "n": n, "mean": mean, "stddev": sd}

"""What one finished life measured, read from its own data dir through the rooms' readers.

The measures are fixed before any run (docs/lab/README.md says why each):

* primary: ``brier``, the mean three-way Brier score of the outlooks of the golem's
  scored predictions over its life (JournalReader.prediction_scores; lower is better);
* secondary: the Brier score per golem-time bin (the curves), the direction hit rate,
  realised P&L (USD), context tokens per decision, memory size (episodes and entries on
  disk, entries by status), decisions made, the run's wall time, the predictions it
  takes to adapt after a regime switch (``adaptation``), and its uses of stale facts
  (``stale_uses``);
* references: the regime-aware oracle bound (``oracle_brier`` and its curve, golem.lab.oracle:
  outcome frequencies per true regime, move bucket and side of the planted swap, fitted
  in hindsight on the life's own predictions) and the no-change prior's Brier on the same
  predictions (``prior_brier``); None where the life has no ground truth or a prediction
  no reference outlook.

A record is plain JSON (``result.json`` beside the run's data dir), written once the run
has reached the end of its life, so a report can be rebuilt without the data dirs.
"""

from __future__ import annotations

import bisect
import itertools
import math
import statistics
from typing import Any

from golem.cognition.journal import JOURNAL_DB, JOURNAL_DIR, JournalReader
from golem.config import Config
from golem.gamma.capture import read_fact_changes, read_ground_truth
from golem.lab import oracle
from golem.status import collect_status

BINS = 12  # points on a life's Brier curve
# The market's changes that make the offline tier's forecasting knowledge (conditional
# outcomes of the price feed) stale: the planted regularity's swap, and the feed going
# silent or coming back. The drain and the honeypot turning bear on facts the offline
# tier does not forecast with.
FEED_CHANGES = ("oracle_stale", "oracle_resumed")


def measure_run(config: Config, birth: float, life_s: float, wall_s: float) -> dict[str, Any]:
    """The record of the life in ``config.data_dir``: born at golem time ``birth``, lived
    ``life_s`` golem seconds, took ``wall_s`` wall seconds (every attempt)."""
    journal = JournalReader(config.data_dir / JOURNAL_DIR / JOURNAL_DB)
    scores = journal.prediction_scores()
    tokens = journal.context_tokens()
    status = collect_status(config)
    briers = [b for _, _, b, _ in scores]
    wallet = (status.get("wallet") or {}).get("totals", {})
    delta = status.get("delta") or {}
    data = status.get("data") or {}
    sizes = data.get("entries", {})
    switches = read_ground_truth(config.data_dir)
    planted = config.chain.planted
    changes = [t for t, kind, _ in read_fact_changes(config.data_dir) if kind in FEED_CHANGES]
    swap_at = birth + planted.swap_after_s \
        if planted.enabled and 0 < planted.swap_after_s < life_s else None
    if swap_at is not None:
        changes.append(swap_at)
    stale, leaned = stale_uses(journal.knowledge_ages(), changes)
    situations = journal.prediction_situations()
    made = oracle.calls([(s.golem_time, s.bucket, s.observed) for s in situations],
                        switches, swap_at)
    bound = oracle.oracle_briers(made) if made is not None else None
    prior = oracle.reference_briers([s.reference for s in situations],
                                    [s.observed for s in situations])
    return {
        "adapt_predictions": adaptation([(t, b) for t, _, b, _ in scores],
                                        [t for t, _ in switches[1:]]),
        "regime_switches": max(0, len(switches) - 1),
        "brier": _mean(briers),
        "predictions": len(scores),
        "hit_rate": _mean([1.0 if hit else 0.0 for *_, hit in scores]),
        "brier_curve": brier_curve([(t - birth, b) for t, _, b, _ in scores], life_s),
        "oracle_brier": None if bound is None else _mean(bound),
        "oracle_brier_curve": None if bound is None else brier_curve(
            [(s.golem_time - birth, b) for s, b in zip(situations, bound, strict=True)],
            life_s),
        "prior_brier": None if prior is None else _mean(prior),
        "realised_pnl_usd": float(wallet.get("realised_usd", 0.0)),
        "funded_usd": float(wallet.get("funded_usd", 0.0)),
        "decisions": len(tokens),
        "context_tokens": _mean([float(t) for t in tokens]),
        "memory_bytes": int(sizes.get("episodes", 0)) + int(sizes.get("grimoire.db", 0)),
        "entries": {str(k): int(v) for k, v in (delta.get("entries") or {}).items()},
        "stale_fact_uses": stale,
        "stale_fact_use_share": stale / leaned if leaned else None,
        "golem_time_s": life_s,
        "wall_s": round(wall_s, 3),
    }


def adaptation(scores: list[tuple[float, float]], switches: list[float]) -> float | None:
    """Mean, over the market's regime switches, of the scored predictions made from a
    switch until the first one at least as good as the life's median Brier (that one
    counted; censored at the next switch or the end of life, counting what was made).
    ``scores``: (golem time, Brier) in decision order. None without a switch followed
    by a prediction."""
    if not scores or not switches:
        return None
    median = statistics.median(b for _, b in scores)
    bounds = [*sorted(switches), math.inf]
    counts = []
    for start, end in itertools.pairwise(bounds):
        made = [b for t, b in scores if start <= t < end]
        if not made:
            continue
        good = next((i for i, b in enumerate(made) if b <= median), None)
        counts.append(float(len(made) if good is None else good + 1))
    return _mean(counts)


def stale_uses(ages: list[tuple[float, list[float | None]]],
               changes: list[float]) -> tuple[int, int]:
    """(stale, leaned): of the decisions made after the first change that leaned on
    learned knowledge, how many leaned on an entry whose newest episode came before the
    latest change preceding the decision (learned before it and not seen since), and how
    many leaned at all. ``ages``: (golem time, each attributed entry's observed_to) per
    decision (JournalReader.knowledge_ages); an entry without a time is not judged."""
    if not changes:
        return 0, 0
    bounds = sorted(changes)
    stale = leaned = 0
    for at, observed in ages:
        i = bisect.bisect_right(bounds, at)
        if i == 0:
            continue
        leaned += 1
        stale += any(o is not None and o < bounds[i - 1] for o in observed)
    return stale, leaned


def brier_curve(points: list[tuple[float, float]], life_s: float,
                bins: int = BINS) -> list[float | None]:
    """Mean Brier per equal slice of the life (by the prediction's golem-time offset from
    birth); None for a slice without a scored prediction."""
    sums = [0.0] * bins
    counts = [0] * bins
    for offset, brier in points:
        i = min(bins - 1, max(0, int(offset / life_s * bins)))
        sums[i] += brier
        counts[i] += 1
    return [s / c if c else None for s, c in zip(sums, counts, strict=True)]


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None

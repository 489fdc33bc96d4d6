"""Candidate facts of every kind from one replay set, and how a repeat merges.

Which episodes feed what: every fact is measured on the recent window (every
episode verified since the last run), never on replayed old episodes. Sizes,
anti-knowledge and procedural facts pool their counts with the stored fact, so an
episode must be counted once: replaying an old one again would add it twice (a
swap counted in every run that replays it). Rates, causal lags and timing patterns
need complete time series anyway; priority-sampled old episodes have gaps that
would fake low rates. What recurs is strengthened by recurring in new data: the
same key reinforces the stored entry. Replayed old episodes still feed clustering,
model-assisted insights and dreams.

The revert and strategy-outcome episode conventions live in golem.grimoire.payloads. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from golem.consolidation import baselines, causal, facts, outcomes
from golem.consolidation.facts import FactCandidate
from golem.grimoire.payloads import OUTCOME_CATEGORY, REVERT_CATEGORY
from golem.grimoire.records import Episode, FactKind


@dataclass(frozen=True)
class ExtractParams:
    min_samples: int = 3
    rate_bin_s: float = 300.0
    min_rate_bins: int = 2
    causal_params: causal.CausalParams = field(default_factory=causal.CausalParams)
    patterns: tuple[tuple[str, str], ...] = (("AnswerUpdated", "LiquidationCall"),)
    pattern_window_s: float = 60.0
    pattern_min_events: int = 5
    pattern_min_z: float = 3.0
    min_reverts: int = 3
    min_revert_share: float = 0.8
    min_outcomes: int = 3
    # Conditional outcomes: the trailing move over outcome_lookback_s, the return over
    # outcome_horizon_s (Theta's 5 ticks of 60 s), groups of at least outcome_min_samples.
    outcome_lookback_s: float = 600.0
    outcome_horizon_s: float = 300.0
    outcome_min_samples: int = 5
    # The golem's own swaps per (side, regime, bucket): a run sees a trade or two per
    # situation, so every one counts; the facts pool across runs and the offline tier
    # smooths them ((paid + 1) / (trades + 2)).
    min_trades: int = 1


def chain_events(episodes: Sequence[Episode]) -> list[Episode]:
    """The market's own events: the golem's reverts and action outcomes are not part of
    any pool's size or rate baseline."""
    own = (REVERT_CATEGORY, OUTCOME_CATEGORY)
    return [e for e in episodes if e.category not in own]


def extract(recent: Sequence[Episode], window: tuple[float, float], params: ExtractParams,
            seed: int, *, context: Sequence[Episode] = (),
            counted_after: float | None = None) -> list[FactCandidate]:
    """All candidates; keys are unique (the first of a duplicate key wins).

    ``context``: episodes observed before ``recent`` (the last outcome lookback and
    horizon before the cursor), read only as the conditional outcomes' price history;
    ``counted_after``: the cursor, so each oracle answer's outcome is counted in exactly
    one run (``outcomes.conditional_outcomes``)."""
    start, end = window
    window_market = chain_events(recent)
    out: list[FactCandidate] = []
    out += baselines.size_baselines(window_market, params.min_samples)
    out += baselines.rate_baselines(window_market, start, end, params.rate_bin_s,
                                    params.min_rate_bins)
    out += causal.causal_relations(window_market, start, end, params.causal_params, seed)
    for trigger, follower in params.patterns:
        found = causal.pattern(window_market, start, end, trigger=trigger, follower=follower,
                               window_s=params.pattern_window_s,
                               min_events=params.pattern_min_events,
                               min_z=params.pattern_min_z)
        if found is not None:
            out.append(found)
    out += outcomes.conditional_outcomes(
        [*chain_events(context), *window_market], lookback_s=params.outcome_lookback_s,
        horizon_s=params.outcome_horizon_s, min_samples=params.outcome_min_samples,
        counted_after=counted_after)
    out += outcomes.trade_outcomes(
        [*context, *recent], lookback_s=params.outcome_lookback_s,
        horizon_s=params.outcome_horizon_s, min_trades=params.min_trades,
        counted_after=counted_after)
    out += facts.anti_knowledge(recent, params.min_reverts, params.min_revert_share)
    out += facts.procedural(recent, params.min_outcomes)
    unique: dict[str, FactCandidate] = {}
    for cand in out:
        unique.setdefault(cand.key, cand)
    return list(unique.values())


def merge_fact(kind: FactKind | None, old: Mapping[str, Any],
               new: FactCandidate) -> tuple[dict[str, Any], str]:
    """(merged fact, its text) for a repeat sighting of ``new.key``.

    Baselines pool old and new statistics exactly; anti-knowledge and procedural facts
    add up their counts; causal relations and patterns take the newest measurement
    (their strength is re-tested every run) and count how often they held.
    """
    fact = dict(new.fact)
    try:
        if kind == FactKind.BASELINE:
            fact = baselines.merge_baseline(old, new.fact)
            return fact, baselines.baseline_text(fact)
        if kind == FactKind.CONDITIONAL_OUTCOME:
            fact = outcomes.merge_outcome(old, new.fact)
            return fact, outcomes.outcome_text(fact)
        if kind == FactKind.ANTI_KNOWLEDGE:
            fact["reverts"] = int(old["reverts"]) + int(new.fact["reverts"])
            fact["attempts"] = int(old["attempts"]) + int(new.fact["attempts"])
            text = new.text.replace(
                f"{new.fact['reverts']} of {new.fact['attempts']} attempts",
                f"{fact['reverts']} of {fact['attempts']} attempts")
            fact["warning"] = text
            return fact, text
        if kind == FactKind.PROCEDURAL and "trades" in new.fact:
            fact = outcomes.merge_trade_outcome(old, new.fact)
            return fact, outcomes.trade_text(fact)
        if kind == FactKind.PROCEDURAL:
            n_old, n_new = int(old["pnl_n"]), int(new.fact["pnl_n"])
            n = n_old + n_new
            fact["attempts"] = int(old["attempts"]) + int(new.fact["attempts"])
            fact["succeeded"] = int(old["succeeded"]) + int(new.fact["succeeded"])
            fact["pnl_n"] = n
            fact["pnl_mean_usd"] = ((float(old["pnl_mean_usd"]) * n_old
                                     + float(new.fact["pnl_mean_usd"]) * n_new) / n
                                    if n else 0.0)
            fact["observation"] = facts.procedural_text(fact)
            return fact, fact["observation"]
    except (KeyError, TypeError, ValueError):
        pass  # an old fact in another shape: the new measurement replaces it
    fact["confirmations"] = int(old.get("confirmations", 1)) + 1
    return fact, new.text

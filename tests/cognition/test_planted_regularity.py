"""A golem learns a planted regularity and predicts better; with its memory wiped it is
back at the prior.

The market is the simulator on revm with ``PlantedDrops``: in "volatile" a large drop
(1.5% or more over 10 minutes) reverts within the 5-minute horizon, in "calm" it
continues. Regimes alternate in blocks of three hours (forced, so every simulated day
holds both). The real pieces run in process at a coarse cadence (one market step, one
oracle answer and one forecast per simulated minute; consolidation every hour): the
chain's logs decoded and stored as Gamma's payloads, the price tape Gamma keeps for
Theta, ``conditional_outcomes`` over each hour's episodes with the preceding lookback and
horizon as context (counted once, as the consolidation engine runs it) merged into
memory as ``merge_fact`` merges a repeat sighting, and the offline tier's decision over
those facts. What is not exercised here: embedding and recall (the Governor's choice of
which facts enter the workspace; here all of them do) and the daemon's loops.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace

import pytest

from golem.chain.decoding import decode
from golem.chain.market import deploy_market
from golem.chain.planted import PlantedDrops
from golem.chain.revm import RevmEvm
from golem.chain.simulator import MarketSimulator
from golem.cognition import experts, offline
from golem.cognition.forecast import brier3
from golem.cognition.predictions import observed_direction
from golem.consolidation.extract import merge_fact
from golem.consolidation.facts import reinforce_step
from golem.consolidation.outcomes import conditional_outcomes
from golem.gamma.capture import episode_payload
from golem.governor.workspace import Knowledge
from golem.grimoire.records import Episode, FactKind, episode_id
from golem.perception.market import PricePoint, move_bucket, record, tape_regime

SEED = 5
T0 = 1_800_000_000.0
STEP_S = 60.0
HOUR, DAY = 3600.0, 86400.0
DAYS = 3
BLOCK_S = 3 * HOUR
LOOKBACK_S, HORIZON_S = 600.0, 300.0
HORIZON_STEPS = int(HORIZON_S / STEP_S)
PLANTED = PlantedDrops(drop=0.015, pull=0.03, revert_in="volatile", continue_in="calm")


def regime_at(t: float) -> str:
    return "volatile" if int((t - T0) // BLOCK_S) % 2 == 0 else "calm"


@dataclass
class Memory:
    """What the golem has consolidated: fact key -> (fact, confidence)."""

    facts: dict[str, tuple[dict[str, object], float]] = field(default_factory=dict)

    def consolidate(self, recent: list[Episode], context: list[Episode],
                    cursor: float | None) -> None:
        for cand in conditional_outcomes([*context, *recent], lookback_s=LOOKBACK_S,
                                         horizon_s=HORIZON_S, counted_after=cursor):
            old = self.facts.get(cand.key)
            if old is None:
                self.facts[cand.key] = (dict(cand.fact), cand.confidence)
            else:
                merged, _ = merge_fact(FactKind.CONDITIONAL_OUTCOME, old[0], cand)
                self.facts[cand.key] = (merged, reinforce_step(old[1], 0.1))

    def entries(self) -> tuple[offline.Entry, ...]:
        return tuple(offline.Entry(key, "insights", key,
                                   Knowledge("conditional_outcome", fact, confidence))
                     for key, (fact, confidence) in sorted(self.facts.items()))


@dataclass
class Run:
    learned: list[list[float]]  # Brier per forecast, per day: the golem that learns
    wiped: list[list[float]]  # the same market, decided with an empty memory
    attributed: list[int]  # per day: forecasts that learned knowledge moved
    wiped_attributed: int
    facts: dict[str, tuple[dict[str, object], float]]
    # (day, tape regime, move bucket, learned Brier, wiped Brier) per scored forecast
    cases: list[tuple[int, str, str, float, float]] = field(default_factory=list)
    # the golem as Theta runs it: the knowledge weighed by its own record (experts)
    weighed: list[list[float]] = field(default_factory=list)


def run_market(days: int = DAYS) -> Run:
    evm = RevmEvm()
    market = deploy_market(evm, SEED)
    sim = MarketSimulator(evm, market, SEED, planted=PlantedDrops(**{
        k: getattr(PLANTED, k) for k in ("drop", "pull", "revert_in", "continue_in")}))
    feed = market.oracle_eth_usd.lower()
    memory = Memory()
    tape: tuple[PricePoint, ...] = ()
    episodes: list[Episode] = []
    cursor: float | None = None
    pending: list[tuple[int, float, tuple[float, float, float], tuple[float, float, float],
                        int, str, str]] = []
    run = Run([[] for _ in range(days)], [[] for _ in range(days)], [0] * days, 0, {},
              weighed=[[] for _ in range(days)])
    scored: list[experts.Scored] = []
    prices: list[float] = []
    next_block = evm.head().number + 1
    steps = int(days * DAY / STEP_S)
    for i in range(steps):
        t = T0 + i * STEP_S
        sim.force_regime(regime_at(t))
        sim.step(t, STEP_S)
        head = evm.head().number
        for raw in evm.get_logs(next_block, head):
            if raw.address.lower() != feed:
                continue
            event = decode(raw)
            if event.name != "AnswerUpdated":
                continue
            episodes.append(Episode(
                id=episode_id(raw.chain_id, raw.block_hash, raw.log_index), namespace="g",
                chain_id=raw.chain_id, block_number=raw.block_number,
                block_hash=raw.block_hash, log_index=raw.log_index, tx_hash=raw.tx_hash,
                tick=i, observed_at=t, category="oracle", protocol=event.protocol,
                text="", payload=episode_payload(event, "stationary", "store")))
            tape = record(tape, PricePoint(float(event.args["updatedAt"]),
                                           float(event.args["current"])))
        next_block = head + 1
        prices.append(tape[-1].price)
        if (i + 1) % int(HOUR / STEP_S) == 0:  # Delta: consolidate the hour
            recent = [e for e in episodes if cursor is None or e.observed_at > cursor]
            context = [] if cursor is None else [
                e for e in episodes if cursor - LOOKBACK_S - HORIZON_S <= e.observed_at
                <= cursor]
            memory.consolidate(recent, context, cursor)
            cursor = t
            episodes = [e for e in episodes if e.observed_at > t - 2 * LOOKBACK_S]
        situation = offline.Situation(feed, tape, memory.entries(), regime=tape_regime(tape),
                                      horizon_s=HORIZON_S)
        learned = offline.decide(situation)
        wiped = offline.decide(offline.Situation(feed, tape, (), regime=tape_regime(tape),
                                                 horizon_s=HORIZON_S))
        weighed = offline.decide(replace(situation, record=experts.record(scored)))
        day = int((t - T0) // DAY)
        run.attributed[day] += bool(learned.attribution)
        run.wiped_attributed += bool(wiped.attribution)
        if learned.outlook is None or wiped.outlook is None or weighed.outlook is None:
            continue  # one answer: no move yet
        pending.append((i, prices[-1], learned.outlook, wiped.outlook, weighed.outlook, day,
                        situation.regime, move_bucket(tape[-1].price / tape[0].price - 1)))
        while pending and pending[0][0] + HORIZON_STEPS <= i:
            _, base, lo, wo, mo, d, regime, bucket = pending.pop(0)
            seen = observed_direction(prices[-1] / base - 1.0)
            run.learned[d].append(brier3(lo, seen))
            run.wiped[d].append(brier3(wo, seen))
            run.weighed[d].append(brier3(mo, seen))
            scored.append(experts.Scored(lo, wo, seen))
            run.cases.append((d, regime, bucket, run.learned[d][-1], run.wiped[d][-1]))
    run.facts = memory.facts
    return run


@pytest.fixture(scope="module")
def market_run() -> Run:
    run = run_market()
    print("brier per day, learned:", [round(statistics.fmean(d), 4) for d in run.learned],
          "wiped:", [round(statistics.fmean(d), 4) for d in run.wiped],
          "weighed:", [round(statistics.fmean(d), 4) for d in run.weighed],
          "attributed:", run.attributed)
    return run


def test_the_planted_regularity_is_what_the_golem_learned(market_run: Run) -> None:
    by = {(f["regime"], f["bucket"]): f for f, _ in market_run.facts.values()}
    revert, carry = by[("volatile", "fell_hard")], by[("trending", "fell_hard")]
    assert float(revert["mean"]) > 0 and float(revert["p_up"]) > 0.5  # type: ignore[arg-type]
    assert float(carry["mean"]) < 0 and float(carry["p_up"]) < 0.5  # type: ignore[arg-type]


def test_after_a_few_days_it_predicts_better_than_on_day_one(market_run: Run) -> None:
    first, last = (statistics.fmean(day) for day in (market_run.learned[0],
                                                      market_run.learned[-1]))
    assert last < first
    assert market_run.attributed[-1] > market_run.attributed[0]


def test_with_its_memory_wiped_it_is_back_at_the_prior(market_run: Run) -> None:
    assert market_run.wiped_attributed == 0
    learned, wiped = (statistics.fmean(days[-1]) for days in (market_run.learned,
                                                              market_run.wiped))
    assert learned < wiped


def test_weighed_by_its_own_record_it_keeps_most_of_what_it_learned(market_run: Run) -> None:
    """Theta's rule (golem.cognition.experts): the knowledge earns its weight from its
    record against the prior. On this market, where the knowledge is right, the weighed
    golem ends better than the prior, though below the knowledge used unchecked."""
    weighed, wiped = (statistics.fmean(days[-1]) for days in (market_run.weighed,
                                                              market_run.wiped))
    assert weighed < wiped

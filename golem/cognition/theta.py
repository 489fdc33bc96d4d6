"""Theta's decision cycle: the Governor assembles, the tier decides, the cage checks,
the journal records, and the feedback loops learn.

Each Theta tick: take the price feed's recent answers and the events Gamma
escalated from Gamma's hand-off (golem.gamma.handoff); the Context Governor
assembles a budgeted workspace from recall and live state under the current
ContextPolicy (its budget scaled by the vitality phase when mortality is on); the
tier router picks the offline tier (T0) or a model tier (T1/T2, when a model is
configured and affordable), which decides over that workspace; every proposed
action passes the policy cage; the decision, its predictions and its
Loop 1 outcome (categories injected and referenced, missing context) are
journalled in one transaction; the record carries the knowledge behind the decision
(``knowledge_record``: the attributed entries with their shares and short texts, the
offline tier's outlook, malformed facts skipped; those are also logged and emitted as
``KnowledgeSkipped``). A model decision is attributed to the learned entries it cited
or referenced (``offline.cited_attribution``). The offline tier also gets the
situation's own facts looked up by key (``_situation_facts``), so a fact about exactly
this situation counts even when recall ranked it out of the workspace. Predictions
whose horizon passed are scored against the price Gamma observed, which gives each
outcome its quality. Every `loop2_every` ticks, or when the market regime changes,
Loop 2 turns scored outcomes into a new policy revision (at most 0.02 per category). I-frame /
P-frame bookkeeping (seed 002 S2.2, golem.cognition.frames): an I-frame's workspace
becomes the keyframe, sent in full (and cached by the API); each P-frame after it
resends the previous request byte-identical (read from the cache) plus the changes
since that request, until next_frame calls for a new keyframe. Accepted actions go to
the executor (golem.actions.execution), which checks the cage again with the current
portfolio before signing; without one nothing acts on chain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import anyio.to_thread
import structlog

from golem.actions.cage import Cage, Portfolio, Verdict, check
from golem.actions.proposal import ProposedAction
from golem.cognition import experts, offline, theta_state
from golem.cognition.decisions import Decision, Malformed
from golem.cognition.frames import Keyframes
from golem.cognition.journal import DecisionJournal, Outcome
from golem.cognition.predictions import Outlook, score_prediction
from golem.cognition.tiers import Tier, route_tier
from golem.events import (
    ContextAssembled,
    ContextCompacted,
    ContextFeedbackLoop,
    ContextPolicyUpdated,
    ContextRegimeOverride,
    EventBus,
    KnowledgeSkipped,
)
from golem.gamma.handoff import Escalation, GammaHandoff
from golem.governor.categories import Category, MarketRegime, Phase
from golem.governor.feedback import FeedbackSample, run_loop2
from golem.governor.governor import Assembly, ContextGovernor, LiveItem
from golem.governor.policy_store import PolicyConflict, PolicyStore
from golem.governor.workspace import CognitiveWorkspace, Knowledge, one_line
from golem.grimoire.records import SemanticEntry, Source, Status
from golem.perception.market import (
    BUCKET_WORDS,
    PricePoint,
    move_bucket,
    move_label,
    move_phrase,
    situation_keys,
    tape_regime,
)
from golem.runtime.handlers import TickContext, TickCounters
from golem.runtime.stopwatch import Laps

if TYPE_CHECKING:
    from golem.actions.execution import Executor
    from golem.cognition.model import ModelCognition

log = structlog.get_logger("golem.theta")

NO_POSITIONS = Portfolio({}, equity_usd=0.0, peak_equity_usd=0.0)
ANTHROPIC = "anthropic"
STRATEGY = ("Observe the market, predict price moves over the next ticks, and hold: this "
            "golem cannot act on chain (actions are off or there is no wallet).")
TRADING_STRATEGY = ("Observe the market and predict price moves over the next ticks. Trade "
                    "only inside the policy cage: a small swap on an allowed pool when the "
                    "evidence is clear and no warning bears on it; otherwise hold. Capital is "
                    "finite, every model call is paid from it, and a dying golem only reduces "
                    "risk.")
KNOWLEDGE_TEXT_CHARS = 160
_MISSING_WORDS = ((("price", "pool", "position", "liquidity", "feed"), Category.DEFI_SNAPSHOT),
                  (("warning", "risk", "revert", "honeypot"), Category.INVARIANTS),
                  (("history", "episode", "swap", "event"), Category.EPISODES),
                  (("cause", "lag", "correlat"), Category.CAUSAL_EDGES))


def market_regime(prices: tuple[PricePoint, ...]) -> MarketRegime:
    """The regime as the Governor sees it, from the feed's recent answers (pure:
    ``golem.perception.market.tape_regime``, which consolidation counts outcomes by)."""
    return MarketRegime(tape_regime(prices))


def forecasts_with(entry: SemanticEntry) -> bool:
    """Whether the offline tier forecasts with a fact found by key: an active one, or one
    a parent's testament left that is still staged (tested against the golem's own
    memory by InheritedReplay). An inherited fact carries the confidence its generation
    allows (golem.grimoire.scoring.inherited_confidence), and the knowledge's forecast
    counts only once it has beaten the prior (golem.cognition.experts); without it a
    successor could not use its inheritance until the curator had promoted it, by which
    time its own facts under the same keys hide it. Archived, pruned and quarantined facts,
    and staged ones of its own, never count; nor does an entry that is not a fact."""
    if entry.fact_kind is None:
        return False
    return entry.status is Status.ACTIVE or (
        entry.status is Status.STAGED and entry.provenance.source is Source.SUCCESSOR)


def situation_record(feed: str | None, prices: tuple[PricePoint, ...]) -> dict[str, Any]:
    """The situation a decision was made in as the journal keeps it: the feed, its
    trailing move over the tape (None with fewer than two answers) and that move's
    bucket (``move_bucket``: what the offline tier looks its knowledge up by)."""
    move = offline.trailing_move(prices)
    return {"feed": feed, "move": None if move is None else round(move, 8),
            "bucket": None if move is None else move_bucket(move)}


def knowledge_record(decision: Decision | None, entries: tuple[offline.Entry, ...],
                     reference: tuple[str, Outlook] | None = None) -> dict[str, Any]:
    """What the journal keeps of the knowledge behind a decision: each attributed entry
    with its share of the predicted mean, its short text and the golem time of the
    newest episode it rests on (``observed_to``: how stale it may be), the outlook, how
    many malformed facts were skipped, and the reference outlook that the epistemic
    clock judges the decision's predictions on ``reference[0]`` against
    (``offline.prior_outlook``; None without a feed or tape)."""
    ref = None if reference is None else {"subject": reference[0],
                                          "outlook": [round(p, 6) for p in reference[1]]}
    if decision is None:
        return {"attribution": [], "outlook": None, "skipped": 0, "reference": ref}
    texts = {e.uri: e.text for e in entries}
    seen = {e.uri: e.knowledge.observed_to for e in entries if e.knowledge is not None}
    return {"attribution": [{"uri": uri, "share": share,
                             "text": one_line(texts.get(uri, ""), KNOWLEDGE_TEXT_CHARS),
                             "observed_to": seen.get(uri)}
                            for uri, share in decision.attribution],
            "outlook": list(decision.outlook) if decision.outlook else None,
            "skipped": decision.skipped_knowledge, "reference": ref}


def missing_categories(signals: tuple[str, ...]) -> frozenset[str]:
    out = set()
    for signal in signals:
        text = signal.lower()
        out |= {cat.value for words, cat in _MISSING_WORDS if any(w in text for w in words)}
    return frozenset(out)


@dataclass(frozen=True)
class Thought:
    """What the tier produced this tick (decision None: malformed model output)."""

    decision: Decision | None
    provider: str
    model: str
    status: str
    cost_usd: float = 0.0
    note: str = ""
    problems: tuple[str, ...] = ()
    cited: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _Seen:
    """What a Theta tick starts from."""

    feed: str | None
    prices: tuple[PricePoint, ...]
    escalations: list[Escalation]
    escalated: list[str]
    regime: MarketRegime
    phase: Phase
    vitality: float


class VitalitySignal(Protocol):
    """What Theta needs of vitality each tick (mortality's newest reading)."""

    @property
    def phase(self) -> Phase: ...

    @property
    def composite(self) -> float: ...

    @property
    def cause(self) -> str: ...


@dataclass
class ThetaCycle:
    """Theta's tick handler. Inputs arrive at wiring time: Gamma's hand-off (prices and
    escalations; None when chain capture is off), the vitality reader (None: mortality is
    off, phase taken as Stable), the model (None: the offline tier only) and the executor
    (None: decisions are recorded, nothing acts on chain). Every tick journals exactly one
    decision record; a malformed model answer is recorded and never acted on."""

    grimoire_governor: ContextGovernor
    journal: DecisionJournal
    policies: PolicyStore
    cage: Cage
    gamma: GammaHandoff | None = None
    events: EventBus | None = None
    loop2_every: int = 50
    model: ModelCognition | None = None
    t2_curiosity: float = 0.8
    # the newest vitality reading (mortality's store); None: mortality is off (Stable, 1.0)
    vitality_reader: Callable[[], VitalitySignal] | None = None
    # carries accepted actions out on chain (golem.actions.execution); None: record only
    executor: Executor | None = None
    # off: no MEMORY.md, PLAYBOOK.md or scratch notes in the workspace and no lookup of
    # the situation's facts (the Governor is built without recall too: the lab's
    # no-memory arm)
    memory: bool = True
    # the predictions' horizon in seconds (offline.HORIZON_TICKS Theta ticks)
    horizon_s: float = offline.HORIZON_S
    name: str = "theta-decision"
    _regime: MarketRegime | None = field(default=None, init=False)
    _frames: Keyframes = field(default_factory=Keyframes, init=False)
    _reading: VitalitySignal | None = field(default=None, init=False)  # this tick's
    _resumed: bool = field(default=False, init=False)  # the saved state was looked for
    _handled: set[str] = field(default_factory=set, init=False)  # escalations decided on

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        laps = Laps()  # the tick's stages, in its counters (sense_ms ... loop2_ms)
        if not self._resumed:
            await anyio.to_thread.run_sync(self._resume)
        seen = await self._sense()
        laps.lap("sense")
        policy = await anyio.to_thread.run_sync(self.policies.latest)
        portfolio, holdings = await self.executor.view() if self.executor else (NO_POSITIONS, ())
        live = [*self._live(seen.feed, seen.prices, seen.escalated, self._positions(holdings)),
                *await self._memory_files()]
        query = self._query(seen.feed, seen.prices)
        assembly = await self.grimoire_governor.assemble(
            policy, query=query, live=live,
            escalated_ids=seen.escalated, phase=seen.phase, regime=seen.regime,
            vitality=seen.vitality,
            escalated_episodes={e.episode_id: e.episode for e in seen.escalations
                                if e.episode is not None})
        laps.lap("assemble")
        ws = assembly.workspace
        frame, keyframe, links, share = self._frames.next(
            ws, phase=seen.phase, regime=seen.regime, now=ctx.clock.now())
        entries = tuple(offline.Entry(p.candidate.source, p.candidate.category.value, p.content,
                                      p.candidate.knowledge)
                        for block in ws.blocks if not block.echo for p in block.items)
        sent_tokens = ws.used if keyframe is None else \
            keyframe.used + round(share * ws.total_budget)
        tier = await self._tier([e.curiosity for e in seen.escalations], seen.phase,
                                sent_tokens)
        keyed = await self._situation_facts(seen.feed, seen.prices, entries)
        think = await self._think(tier, ws, seen.feed, prices=seen.prices,
                                  entries=(*entries, *keyed),
                                  escalated=len(seen.escalated), keyframe=keyframe,
                                  links=links, holdings=holdings)
        laps.lap("think")
        if think.provider == ANTHROPIC:  # the request was sent: cached from now on
            self._frames.sent(ctx.clock.now())
        decision = think.decision
        verdicts = [check(a, self.cage, portfolio) for a in decision.actions] \
            if decision else []
        executed = await self.executor.execute(
            [v.action for v in verdicts if v.accepted and v.action.kind != "hold"],
            tick=ctx.tick, now=ctx.clock.now()) if self.executor else []
        laps.lap("execute")
        record = self._record(ctx.tick, assembly, decision, verdicts,
                              escalated=seen.escalated, regime=seen.regime)
        reference = (seen.feed, offline.prior_outlook(seen.prices, self.horizon_s)) \
            if seen.feed and seen.prices else None
        record["knowledge"] = knowledge_record(decision, (*entries, *keyed), reference)
        skipped = decision.skipped_knowledge if decision else 0
        if skipped:
            log.warning("malformed knowledge skipped", count=skipped, tick=ctx.tick)
            self._emit(KnowledgeSkipped(ctx.tick, skipped))
        # query, phase and live items let Loop 3 re-assemble this tick under other policies;
        # the situation is what the lab's oracle bound conditions on (golem.lab.oracle)
        record.update(query=query, phase=seen.phase.value,
                      situation=situation_record(seen.feed, seen.prices),
                      live=[asdict(item) for item in live],
                      frame={"kind": frame.kind.value, "why": frame.why,
                             "delta_share": round(share, 4)},
                      provider=think.provider, tier=tier.value, model=think.model,
                      status=think.status, cost_usd=think.cost_usd, note=think.note,
                      problems=list(think.problems), cited=sorted(think.cited),
                      executions=[r.to_dict() for r in executed])
        due, scored = await self._journal(ctx, seen, think, entries=entries, assembly=assembly,
                                          record=record)
        self._emit_assembly(ctx.tick, assembly, seen.regime, frame.kind.value)
        laps.lap("journal")
        revised = await self._loop2(ctx.tick, ctx.clock.now(), seen.regime)
        laps.lap("loop2")
        return {"decisions": 1, "predictions": due, "scored": scored,
                "rejected_actions": sum(not v.accepted for v in verdicts),
                "context_used": ws.used, "context_pressure": round(ws.pressure, 3),
                "policy_revision": revised or assembly.policy_revision,
                "tier": int(tier.value[1]), "cost_usd": think.cost_usd,
                "malformed": int(think.status == "malformed"),
                "knowledge_used": len(record["knowledge"]["attribution"]),
                "knowledge_skipped": skipped,
                **{f"actions_{k}": sum(r.status == s for r in executed) for k, s in
                   (("executed", "ok"), ("reverted", "reverted"), ("dry_run", "dry_run"))},
                **laps.ms}

    def _resume(self) -> None:
        """The first tick of a run: take back what a clean stop saved (theta_state), and
        the regime the last decision saw (from the journal: it survives a kill too)."""
        self._resumed = True
        last = self.journal.last_record() or {}
        self._regime = MarketRegime(last["regime"]) if last.get("regime") else None
        # the hand-off Gamma committed may predate the last tick's drain (a kill)
        self._handled = set(last.get("escalated", ()))
        tick = self.journal.last_tick()
        saved = theta_state.load(self.journal.path.parent, tick) if tick is not None else None
        if saved is not None:
            self.grimoire_governor.previous, self._frames = saved

    def save_state(self) -> None:
        """At a clean stop (wiring calls it once the loops stopped): what the next start
        needs to assemble and frame its first tick as this run would have."""
        if not self._resumed:  # no tick in this run: the state saved before still stands
            return
        tick = self.journal.last_tick()
        if tick is not None:
            theta_state.save(self.journal.path.parent, tick, self.grimoire_governor.previous,
                             self._frames)

    async def _sense(self) -> _Seen:
        """This tick's inputs: Gamma's tape and escalations, the regime, vitality's phase."""
        feed, prices = self._feed()
        escalations = self._drain_escalations()
        phase, vitality = Phase.STABLE, 1.0
        if self.vitality_reader is not None:  # mortality is on: the Governor scales by phase
            self._reading = await anyio.to_thread.run_sync(self.vitality_reader)
            phase, vitality = self._reading.phase, self._reading.composite
        return _Seen(feed, prices, escalations, [e.episode_id for e in escalations],
                     market_regime(prices), phase, vitality)

    async def _journal(self, ctx: TickContext, seen: _Seen, think: Thought, *,
                       entries: tuple[offline.Entry, ...], assembly: Assembly,
                       record: dict[str, Any]) -> tuple[int, int]:
        """Score the predictions now due, then journal this tick's decision, its new
        predictions and its Loop 1 outcome in one transaction. Returns (new predictions,
        predictions scored)."""
        decision = think.decision
        latest = seen.prices[-1].price if seen.prices else None
        due = [(p.subject, p.direction, p.magnitude, p.confidence, ctx.tick + p.horizon_ticks,
                latest) for p in (decision.predictions if decision else ())
               if latest is not None]
        by_source = {e.uri: e.category for e in entries}
        cited = (set(decision.referenced) if decision else set()) | think.cited
        outcome = Outcome(
            ctx.tick, seen.regime.value, assembly.policy_revision,
            injected=frozenset(e.category for e in entries),
            referenced=frozenset(by_source[u] for u in cited if u in by_source),
            missing=missing_categories(decision.missing_context if decision else ()),
            cost_usd=think.cost_usd)
        summary = (decision.analysis if decision else "malformed model output: "
                   + "; ".join(think.problems))[:160]
        scored = await anyio.to_thread.run_sync(self._score, ctx.tick, seen.feed, latest)
        await anyio.to_thread.run_sync(lambda: self.journal.record(
            ctx.tick, ctx.clock.now(), provider=think.provider, status=think.status,
            summary=summary, record=record, predictions=due, outcome=outcome,
            outlooks=decision.outlooks if decision else None))
        self._emit(ContextFeedbackLoop(1, ctx.tick, {
            "injected": sorted(outcome.injected), "referenced": sorted(outcome.referenced),
            "missing": sorted(outcome.missing), "cost_usd": think.cost_usd}))
        return len(due), scored

    async def _tier(self, curiosities: list[float], phase: Phase, context_tokens: int) -> Tier:
        if self.model is None:
            return Tier.T0
        model = self.model
        budget = await anyio.to_thread.run_sync(model.budget_left_usd)
        return route_tier(model_available=model.available(), curiosities=curiosities,
                          phase=phase, budget_left_usd=budget,
                          worst_t1_usd=model.worst_usd(Tier.T1, context_tokens),
                          worst_t2_usd=model.worst_usd(Tier.T2, context_tokens),
                          t2_curiosity=self.t2_curiosity)

    async def _think(self, tier: Tier, ws: CognitiveWorkspace, feed: str | None, *,
                     prices: tuple[PricePoint, ...], entries: tuple[offline.Entry, ...],
                     escalated: int, keyframe: CognitiveWorkspace | None,
                     links: tuple[CognitiveWorkspace, ...],
                     holdings: tuple[tuple[str, float], ...] = ()) -> Thought:
        """The model's decision for T1/T2 (or why not), else the offline tier's."""
        pool = self.executor.trade_pool if self.executor else ""
        if pool and not check(ProposedAction("swap", pool, offline.QUOTE, offline.BASE),
                              self.cage, NO_POSITIONS).accepted:
            pool = ""  # the cage would refuse any trade there: the offline tier holds
        cost = offline.SWAP_COST
        if pool and self.executor is not None:
            # the pool's fee of now: a fee raised mid-life raises the bar to trade; a fee
            # that cannot be read means no trade this tick
            fee = await self.executor.trade_fee()
            pool, cost = ("", cost) if fee is None else (pool, fee + offline.IMPACT_ALLOWANCE)
        situation = offline.Situation(feed or "no feed", prices, entries, escalated,
                                      holdings, pool, self.cage.max_notional_usd,
                                      market_regime(prices).value, self.horizon_s,
                                      swap_cost=cost)
        if tier is Tier.T0 or self.model is None:
            scored = await anyio.to_thread.run_sync(self.journal.outlook_record,
                                                    experts.WINDOW)
            situation = replace(situation, record=experts.record(scored))
            return Thought(offline.decide(situation), offline.PROVIDER, "", "ok")
        made = await self.model.decide(tier, ws, strategy=self._strategy,
                                       situation=self._situation(feed, prices), keyframe=keyframe,
                                       links=links)
        if isinstance(made.decision, Decision):
            attribution, skipped = offline.cited_attribution(
                situation, made.cited | set(made.decision.referenced))
            decision = replace(made.decision, attribution=attribution,
                               skipped_knowledge=skipped)
            return Thought(decision, ANTHROPIC, made.model, "ok", made.cost_usd,
                           cited=made.cited)
        if isinstance(made.decision, Malformed):
            log.warning("malformed model output recorded, not acted on",
                        problems=list(made.decision.problems))
            return Thought(None, ANTHROPIC, made.model, "malformed", made.cost_usd,
                           problems=made.decision.problems, cited=made.cited)
        log.warning("model unavailable; the offline tier decides this tick", error=made.error)
        return Thought(offline.decide(situation), offline.PROVIDER, "", "ok", made.cost_usd,
                       note=f"model unavailable: {made.error}")

    # --- inputs --------------------------------------------------------------------

    async def _situation_facts(self, feed: str | None, prices: tuple[PricePoint, ...],
                               seen: tuple[offline.Entry, ...]) -> tuple[offline.Entry, ...]:
        """The situation's own facts by key (``situation_keys``: its feed's outcomes after
        this kind of move, the golem's swap records), the ones the workspace does not
        already hold: recall ranks by meaning, and a fact about exactly this situation
        may rank out of the workspace (``forecasts_with`` says which count). For the
        offline tier only (the model sees the workspace); not counted as injected
        context in Loop 1."""
        if not self.memory or not feed or len(prices) < 2 or prices[0].price <= 0:
            return ()
        bucket = move_bucket(prices[-1].price / prices[0].price - 1.0)
        grimoire = self.grimoire_governor.grimoire
        found = await grimoire.entries_by_fact_key(situation_keys(feed, bucket, self.horizon_s))
        have = {e.uri for e in seen}
        out = []
        for entry in found.values():
            uri = f"grimoire://{entry.namespace}/{entry.entry_type.value}/{entry.id}"
            if uri in have or not forecasts_with(entry) or entry.fact_kind is None:
                continue
            out.append(offline.Entry(uri, entry.entry_type.value, entry.text, Knowledge(
                entry.fact_kind.value, entry.fact, entry.confidence, entry.observed_to)))
        return tuple(sorted(out, key=lambda e: e.uri))

    def _feed(self) -> tuple[str | None, tuple[PricePoint, ...]]:
        return self.gamma.latest_feed() if self.gamma is not None else (None, ())

    def _drain_escalations(self) -> list[Escalation]:
        taken = self.gamma.drain() if self.gamma is not None else []
        if self._handled:  # the first tick after a start: not what the last one decided on
            taken = [e for e in taken if e.episode_id not in self._handled]
            self._handled = set()
        return taken

    @staticmethod
    def _query(feed: str | None, prices: tuple[PricePoint, ...]) -> str:
        """What Theta asks memory: the kind of market, not its exact numbers (the seed's
        GrimoireQuery is keyed on regime and task). Exact digits in the query would churn
        the recalled set, and so the workspace, from tick to tick; this one repeats, so
        its vector comes from the embedder's cache. The model gets the exact move in
        ``_situation``."""
        label = move_label(prices)
        regime = market_regime(prices).value
        kind = (f"market {label}, {regime} regime" if label else "market state unknown")
        query = f"{kind}: large swaps, liquidations, warnings, price feed {feed or ''}"
        move = offline.trailing_move(prices)
        if feed and move is not None:  # the learned outcomes of situations like this one
            words = BUCKET_WORDS[move_bucket(move)]
            query += (f"; after oracle feed {feed} {words} in regime {regime}, what the next "
                      f"minutes returned, and whether our own buys and sells of WETH paid")
        return query

    @staticmethod
    def _situation(feed: str | None, prices: tuple[PricePoint, ...]) -> str:
        phrase = move_phrase(prices) or "market state unknown"
        return f"{phrase}: large swaps, liquidations, warnings, price feed {feed or ''}"

    def _positions(self, holdings: tuple[tuple[str, float], ...]) -> str:
        if self.executor is None:
            return "Positions: none."
        held = ", ".join(f"{symbol} ${usd:,.2f}" for symbol, usd in holdings) or "nothing"
        return f"Wallet: {held}. {self.executor.venues()}"

    @property
    def _strategy(self) -> str:
        return STRATEGY if self.executor is None else TRADING_STRATEGY

    def _live(self, feed: str | None, prices: tuple[PricePoint, ...],
              escalated: list[str], positions: str = "Positions: none.") -> list[LiveItem]:
        snapshot = (f"Price feed {feed}: latest answer {prices[-1].price:g}; "
                    f"{move_phrase(prices) or 'no move yet'}; {len(escalated)} escalated "
                    f"event(s) this tick. {positions}") if feed and prices else \
            f"No price feed observed yet. {positions}"
        cage = (f"Policy cage: {len(self.cage.allowed_contracts)} allowlisted contracts, "
                f"assets {sorted(self.cage.allowed_assets) or 'none'}, at most "
                f"${self.cage.max_notional_usd:,.0f} per action and "
                f"${self.cage.max_position_usd:,.0f} per position, drawdown limit "
                f"{self.cage.max_drawdown:.0%}, no unlimited approvals.")
        return [
            LiveItem("invariants/cage", Category.INVARIANTS, cage, importance=1.0),
            LiveItem("defi_snapshot", Category.DEFI_SNAPSHOT, snapshot),
            LiveItem("mortality", Category.MORTALITY,
                     f"Vitality {self._reading.composite:.2f}, phase "
                     f"{self._reading.phase.value}; weakest clock: {self._reading.cause}."
                     if self._reading else
                     "Mortality disabled: no vitality clock (phase taken as stable)."),
            LiveItem("affect", Category.AFFECT, "Affect: neutral (PAD 0, 0, 0; not built yet)."),
            LiveItem("tool_state", Category.TOOL_STATE,
                     "Tools: query_grimoire, working_memory_note."),
            LiveItem("owner_control", Category.OWNER_CONTROL, "Owner instructions: none."),
            LiveItem("strategy", Category.STRATEGY, f"Strategy: {self._strategy}"),
        ]

    async def _memory_files(self) -> list[LiveItem]:
        """Working memory (MEMORY.md, rewritten only by the dream cycle: stable, so it rides
        the cached prefix), PLAYBOOK.md (stable, one writer), and the scratch notes taken
        since the last rewrite (they change as the model notes things: soft context)."""
        if not self.memory:
            return []
        grimoire = self.grimoire_governor.grimoire
        items = []
        memory = await grimoire.memory_text()
        if memory and memory.strip():
            items.append(LiveItem("working_memory", Category.STRATEGY,
                                  "Working memory (MEMORY.md):\n" + memory.strip()[:8000]))
        playbook = await grimoire.playbook_text()
        if playbook.strip():
            items.append(LiveItem("playbook", Category.PLAYBOOK,
                                  "PLAYBOOK.md:\n" + playbook.strip()[:8000], importance=0.9))
        notes = (await grimoire.scratch_notes())[-10:]
        if notes:
            items.append(LiveItem("scratch", Category.TOOL_STATE, "Scratch notes (newest last):\n"
                                  + "\n".join(n.prompt_line() for n in notes),
                                  importance=0.6, untrusted=True))
        return items

    # --- outputs -------------------------------------------------------------------

    @staticmethod
    def _record(tick: int, assembly: Assembly, decision: Decision | None,
                verdicts: list[Verdict], *,
                escalated: list[str], regime: MarketRegime) -> dict[str, Any]:
        ws = assembly.workspace
        return {
            "tick": tick, "regime": regime.value,
            "policy_revision": assembly.policy_revision,
            "workspace": {"budget": ws.total_budget, "used": ws.used,
                          "pressure": round(ws.pressure, 4), "compacted": ws.compacted,
                          "reasons": {c.value: asdict(r) for c, r in ws.reasons.items()},
                          "delta_share": ws.delta.share if ws.delta else None},
            "decision": asdict(decision) if decision is not None else None,
            "cage": [{"action": asdict(v.action), "accepted": v.accepted,
                      "reasons": list(v.reasons)} for v in verdicts],
            "escalated": escalated}

    def _emit_assembly(self, tick: int, assembly: Assembly, regime: MarketRegime,
                       frame: str) -> None:
        ws = assembly.workspace
        included = sum(r.included for r in ws.reasons.values())
        self._emit(ContextAssembled(tick, assembly.policy_revision, frame, ws.total_budget,
                                    ws.used, round(ws.pressure, 4), included,
                                    len(ws.exclusions), ws.delta.share if ws.delta else 1.0))
        if ws.compacted:
            self._emit(ContextCompacted(tick, round(ws.pressure, 4)))
        if assembly.regime_override:
            self._emit(ContextRegimeOverride(tick, regime.value, assembly.policy_revision))

    def _emit(self, event: Any) -> None:
        if self.events is not None:
            self.events.emit(event)

    def _score(self, tick: int, feed: str | None, latest: float | None) -> int:
        if latest is None or feed is None:
            return 0
        scores = []
        for p in self.journal.due(tick):
            if p.subject != feed:
                continue
            s = score_prediction(p.direction, p.magnitude, p.confidence, p.baseline, latest)
            scores.append((p.id, latest, s.quality, s.direction_hit))
        if scores:
            self.journal.settle(scores)
        return len(scores)

    async def _loop2(self, tick: int, now: float, regime: MarketRegime) -> int | None:
        """Every loop2_every ticks, or on a regime change: learn a new policy revision."""
        changed = self._regime is not None and regime != self._regime
        lived = self._regime or regime
        self._regime = regime
        last = await anyio.to_thread.run_sync(self.journal.loop_tick, "loop2")
        if not changed and tick - last < self.loop2_every:
            return None
        outcomes = await anyio.to_thread.run_sync(self.journal.unlearned_outcomes)
        samples = [FeedbackSample(
            MarketRegime(o.regime), frozenset(Category(c) for c in o.injected),
            frozenset(Category(c) for c in o.referenced), o.quality,
            tuple(Category(c) for c in sorted(o.missing))) for o in outcomes]
        if not samples:
            await anyio.to_thread.run_sync(self.journal.set_loop_tick, "loop2", tick)
            return None
        policy = await anyio.to_thread.run_sync(self.policies.latest)
        betas = await anyio.to_thread.run_sync(self.policies.betas)
        update = run_loop2(policy, betas, samples, lived)
        try:
            await anyio.to_thread.run_sync(self.policies.save, update.policy, update.betas, now)
        except PolicyConflict as exc:  # Loop 3 saved a revision meanwhile: relearn next tick
            log.info("context policy revision raced; Loop 2 retries next tick", error=str(exc))
            return None
        # a crash here relearns these outcomes once more: bounded by the 0.02 cap
        await anyio.to_thread.run_sync(self.journal.set_loop_tick, "loop2", tick,
                                       tuple(o.tick for o in outcomes))
        self._emit(ContextFeedbackLoop(2, tick, {
            "samples": len(samples), "regime": lived.value, "trigger":
            "regime change" if changed else "interval",
            "proposed": {c.value: round(v, 6) for c, v in update.proposed.items()}}))
        self._emit(ContextPolicyUpdated(update.policy.revision, update.delta_dict(),
                                        len(samples)))
        log.info("context policy revised", revision=update.policy.revision,
                 samples=len(samples), trigger="regime change" if changed else "interval")
        return update.policy.revision

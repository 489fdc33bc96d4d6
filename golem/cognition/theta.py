"""Theta's decision cycle as it stands: recall, decide, cage, record, score.

Each Theta tick: take the events Gamma escalated and the price feed's recent
answers, recall what memory holds about the situation (the one recall path),
let the cognitive tier decide (today the offline tier: the Governor's workspace
assembly, policy and model providers are being built), pass every proposed
action through the policy cage, and journal the decision with its predictions.
Predictions whose horizon has passed are scored against the price Gamma
observed. Nothing here acts on chain.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import anyio.to_thread
import structlog

from golem.cognition import offline
from golem.cognition.cage import Cage, Portfolio, check
from golem.cognition.journal import DecisionJournal
from golem.cognition.predictions import score_prediction
from golem.grimoire.grimoire import Grimoire
from golem.perception.market import PricePoint
from golem.runtime.handlers import TickContext, TickCounters

if TYPE_CHECKING:
    from golem.chain.capture import GammaCapture

log = structlog.get_logger("golem.theta")

RECALL_K = 8
NO_POSITIONS = Portfolio({}, equity_usd=0.0, peak_equity_usd=0.0)


@dataclass
class ThetaCycle:
    grimoire: Grimoire
    journal: DecisionJournal
    cage: Cage
    capture: GammaCapture | None = None
    name: str = "theta-decision"

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        feed, prices = self._feed()
        escalated = self._drain_escalations()
        entries = await self._recall(feed, prices)
        decision = offline.decide(offline.Situation(feed or "no feed", prices, entries,
                                                    escalated))
        verdicts = [check(a, self.cage, NO_POSITIONS) for a in decision.actions]
        latest = prices[-1].price if prices else None
        due = [(p.subject, p.direction, p.magnitude, p.confidence, ctx.tick + p.horizon_ticks,
                latest) for p in decision.predictions if latest is not None]
        record: dict[str, Any] = {
            "tick": ctx.tick, "provider": offline.PROVIDER, "tier": "T0",
            "decision": asdict(decision),
            "cage": [{"action": asdict(v.action), "accepted": v.accepted,
                      "reasons": list(v.reasons)} for v in verdicts],
            "escalated": escalated, "recalled": [e.uri for e in entries]}
        summary = decision.analysis[:160]
        scored = await anyio.to_thread.run_sync(self._score, ctx.tick, feed, latest)
        await anyio.to_thread.run_sync(lambda: self.journal.record(
            ctx.tick, ctx.clock.now(), provider=offline.PROVIDER, status="ok", summary=summary,
            record=record, predictions=due))
        rejected = sum(not v.accepted for v in verdicts)
        return {"decisions": 1, "predictions": len(due), "scored": scored,
                "rejected_actions": rejected, "recalled": len(entries)}

    def _feed(self) -> tuple[str | None, tuple[PricePoint, ...]]:
        if self.capture is None or not self.capture.prices:
            return None, ()
        feed = sorted(self.capture.prices)[0]
        return feed, self.capture.prices[feed]

    def _drain_escalations(self) -> int:
        if self.capture is None:
            return 0
        count = len(self.capture.escalations)
        self.capture.escalations.clear()
        return count

    async def _recall(self, feed: str | None,
                      prices: tuple[PricePoint, ...]) -> tuple[offline.Entry, ...]:
        move = (prices[-1].price / prices[0].price - 1.0) if len(prices) > 1 else 0.0
        query = (f"market {'falling' if move < 0 else 'rising'} {move:+.1%}: "
                 f"large swaps, liquidations, warnings, price feed {feed or ''}")
        result = await self.grimoire.recall(query, k=RECALL_K)
        if result.refused:
            return ()
        return tuple(offline.Entry(h.uri, h.kind, h.text) for h in result.hits)

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

"""Gamma's capture handler: chain logs in, faithful episodes out, one batch per tick.

Each tick: advance the source to golem time (simulated mode), decode every new
watched log (an undecodable one is kept raw, never dropped), render it, let
perception score it (beliefs per protocol and contract, Bayesian surprise,
curiosity, EFE routing), and write all of the tick's episodes in one Grimoire
call. Episode ids come from (chain id, block hash, log index), so a replayed log
never duplicates. Escalated events go into a bounded queue that Theta will read.
Beliefs and the market's regime ground truth are written beside the data after
the episodes, so comparing detected and true regimes needs only the data dir.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.to_thread
import structlog

from golem.chain.decoding import DecodedEvent, MalformedLog, RawLog, decode
from golem.chain.render import render
from golem.chain.source import SimulatedSource
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.memory_file import atomic_write
from golem.grimoire.records import Episode, Provenance, episode_id
from golem.perception.beliefs import BeliefState
from golem.perception.curiosity import curiosity_score
from golem.perception.features import features
from golem.perception.routing import RoutingAction, route_observation
from golem.runtime.handlers import TickContext, TickCounters

log = structlog.get_logger("golem.capture")

CHAIN_DIR = "chain"
BELIEFS_FILE = "beliefs.json"
GROUND_TRUTH_FILE = "ground_truth.jsonl"


@dataclass(frozen=True)
class Escalation:
    """An event perception thinks Theta should look at."""

    episode_id: str
    curiosity: float
    reason: str


@dataclass
class GammaCapture:
    grimoire: Grimoire
    source: SimulatedSource
    data_dir: Path
    queue_size: int = 256
    name: str = "chain-capture"
    beliefs: BeliefState = field(default_factory=BeliefState)
    escalations: deque[Escalation] = field(init=False)
    _truth_written: int = 0
    _last_time: float | None = None

    def __post_init__(self) -> None:
        self.escalations = deque(maxlen=self.queue_size)
        self.beliefs = _load_beliefs(self.data_dir / CHAIN_DIR / BELIEFS_FILE)

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        now = ctx.clock.now()
        dt = now - self._last_time if self._last_time is not None else 10.0
        self._last_time = now
        batch = await anyio.to_thread.run_sync(self.source.advance, now, max(dt, 1.0))
        episodes, escalated = self._perceive(batch.logs, ctx.tick, now)
        stored = await self.grimoire.add_episodes(episodes) if episodes else 0
        await anyio.to_thread.run_sync(self._persist)
        return {"logs": len(batch.logs), "episodes": stored, "escalated": escalated,
                "reverted": len(batch.step.reverted), "head": batch.head}

    def _perceive(self, logs: tuple[RawLog, ...], tick: int,
                  now: float) -> tuple[list[Episode], int]:
        episodes: list[Episode] = []
        escalated = 0
        for raw in logs:
            try:
                event = decode(raw)
            except MalformedLog as exc:
                log.warning("malformed log kept raw", tx=raw.tx_hash, error=str(exc))
                event = DecodedEvent("unknown", "unknown", "unknown", "", raw.address, {},
                                     {"topic0": raw.topics[0] if raw.topics else None,
                                      "topics": list(raw.topics), "data": raw.data,
                                      "malformed": str(exc)})
            self.beliefs, obs = self.beliefs.observe(
                event.protocol, raw.address, tick=tick,
                continuous=features(event.name, event.args), counts={"events": (1.0, 1.0)})
            decision = route_observation(obs, relevance=0.0)  # no positions yet
            curiosity = curiosity_score(obs.max_abs_z, obs.surprise)
            eid = episode_id(raw.chain_id, raw.block_hash, raw.log_index)
            if decision.action is RoutingAction.ESCALATE:
                self.escalations.append(Escalation(eid, curiosity, decision.reason))
                escalated += 1
            episodes.append(Episode(
                id=eid, namespace=self.grimoire.namespace, chain_id=raw.chain_id,
                block_number=raw.block_number, block_hash=raw.block_hash,
                log_index=raw.log_index, tx_hash=raw.tx_hash, tick=tick, observed_at=now,
                category=event.category, protocol=event.protocol,
                text=render(event, self.source.meta_for(raw.address)),
                payload=_payload(event, obs.regime.value, decision.action.value),
                curiosity=curiosity,
                provenance=Provenance(author=self.grimoire.namespace, process="gamma",
                                      verified=True)))
        return episodes, escalated

    def _persist(self) -> None:
        folder = self.data_dir / CHAIN_DIR
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / BELIEFS_FILE, json.dumps(self.beliefs.to_dict()).encode())
        truth = self.source.ground_truth[self._truth_written:]
        if truth:
            with (folder / GROUND_TRUTH_FILE).open("a", encoding="utf-8") as fh:
                for switch in truth:
                    fh.write(json.dumps({"golem_time": switch.golem_time,
                                         "block_number": switch.block_number,
                                         "regime": switch.regime}) + "\n")
            self._truth_written += len(truth)


def _payload(event: DecodedEvent, regime: str, route: str) -> dict[str, Any]:
    return {"event": event.name, "signature": event.signature, "address": event.address,
            "args": dict(event.args),  # exact ints, JSON-safe in Python
            "raw": event.raw, "perceived_regime": regime, "route": route}


def _load_beliefs(path: Path) -> BeliefState:
    try:
        return BeliefState.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return BeliefState()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("beliefs unreadable; starting fresh", path=str(path), error=str(exc))
        return BeliefState()

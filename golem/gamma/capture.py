"""Gamma's capture handler: confirmed chain logs in, faithful episodes out, one batch per tick.

Each tick: (simulated mode) drive the market to golem time; then one follower
round over the chain reader. A `Captured` round decodes every watched log (an
undecodable one is kept raw, never dropped), renders it with token metadata read
from the chain, lets perception score it (beliefs per protocol and contract,
Bayesian surprise, curiosity, EFE routing), writes all of the round's episodes
in one Grimoire call with the round's reverted transactions to watched addresses
(golem.gamma.reverts: a revert emits no log), and only then commits the reorg
window (whose top is the cursor). On a simulated clock at max speed the commit comes
every `commit_every` ticks instead: the rounds' episodes are handed to the Grimoire as
deferred writes (every reader of the Grimoire sees them at once), and one commit writes
them, then the window and the beliefs; a crash loses only rounds above the committed
cursor, which are captured again. Each tick's counters carry the wall milliseconds of
its stages (market, poll, perceive, embed, store, commit; benchmarks/lifetime.py).
A `Rewound` round deletes the orphaned blocks' episodes, commits the rewound window,
emits `chain:reorg` and polls again. Episode ids come from (chain id, block hash, log
index or tx index), so a re-captured log or revert never duplicates. Price-feed answers
and escalated events go to Theta through the GammaHandoff (golem.gamma.handoff) wiring
gives both loops; the escalations of blocks a reorg orphans are withdrawn from it. The
hand-off as of each commit (tape, queue, last feed) is committed with the window, and
again at a clean stop (`stop`), so a start, after a kill too, hands Theta what it would
have had.

A node that fails (down, slow, malformed answers) costs a warning and a jittered
backoff on the golem clock; nothing is written until it answers again. A reorg
deeper than the window halts capture: every later tick fails loudly with the
reason instead of rewriting history.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import structlog

from golem.chain.backoff import Backoff
from golem.chain.cursor import CaptureStore
from golem.chain.decoding import DecodedEvent, MalformedLog, RawLog, decode
from golem.chain.follower import Captured, ChainFollower, Idle, Rewound
from golem.chain.names import Names
from golem.chain.ranges import RangeRefusedError
from golem.chain.reader import ChainReader
from golem.chain.render import TokenMeta, render
from golem.chain.reorg import BlockWindow, DeepReorgError
from golem.chain.rpc_errors import RpcError
from golem.chain.source import SimulatedSource
from golem.chain.tokens import TokenDirectory
from golem.chain.watch import WatchList
from golem.config import ChainSection
from golem.errors import EXIT_SOFTWARE, GolemError
from golem.events import ChainHalted, ChainReorg, EventBus
from golem.gamma.handoff import Escalation, GammaHandoff
from golem.gamma.rendering import event_identifiers, event_text, names_used, save_names
from golem.gamma.reverts import revert_episodes, verified_hashes
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.memory_file import atomic_write
from golem.grimoire.records import Episode, Provenance, episode_id
from golem.perception.beliefs import BeliefState
from golem.perception.curiosity import curiosity_score
from golem.perception.features import features, size_key
from golem.perception.market import (
    PricePoint,
    answer_change_phrase,
    context_line,
    move_phrase,
    size_phrase,
)
from golem.perception.routing import RoutingAction, route_observation
from golem.runtime.handlers import TickContext, TickCounters
from golem.runtime.stopwatch import ms_since

log = structlog.get_logger("golem.capture")

CHAIN_DIR = "chain"
BELIEFS_FILE = "beliefs.json"
GROUND_TRUTH_FILE = "ground_truth.jsonl"
FACT_CHANGES_FILE = "fact_changes.jsonl"  # golem.chain.changes: what changed mid-life
MAX_REWINDS_PER_TICK = 4
# On a simulated clock at max speed, Gamma commits every this many ticks (5 golem minutes):
# one episode write, one cursor fsync and one beliefs file for the lot.
COMMIT_EVERY_AT_MAX_SPEED = 30


class CaptureHalted(GolemError):
    """Capture stopped for good in this run: history could not be trusted."""

    exit_code = EXIT_SOFTWARE


@dataclass
class GammaCapture:
    grimoire: Grimoire
    reader: ChainReader
    watch: WatchList
    store: CaptureStore
    data_dir: Path
    chain: ChainSection
    events: EventBus | None = None
    market: SimulatedSource | None = None
    handoff: GammaHandoff | None = None  # None: a queue of chain.escalation_queue
    first_block: int | None = None
    expected_chain_id: int = 0
    name: str = "chain-capture"
    names: Names = field(default_factory=Names)  # what renderings call known addresses
    beliefs: BeliefState = field(default_factory=BeliefState)
    # Gamma ticks between durable commits (episodes, then cursor and beliefs); 1: every
    # tick. Wiring raises it on a simulated clock at max speed (commit_every_at_max_speed).
    commit_every: int = 1
    follower: ChainFollower | None = field(init=False, default=None)
    chain_id: int | None = field(init=False, default=None)
    halted: str | None = field(init=False, default=None)
    _truth_written: int = field(init=False, default=0)
    _changes_written: int = field(init=False, default=0)
    _last_time: float | None = field(init=False, default=None)
    _retry_at: float = field(init=False, default=float("-inf"))
    _last_feed: str | None = field(init=False, default=None)
    _stage: dict[str, float] = field(init=False, default_factory=dict)
    _uncommitted: tuple[BlockWindow, int, float, BeliefState] | None = field(
        init=False, default=None)
    _since_commit: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.to_theta = self.handoff or GammaHandoff(self.chain.escalation_queue)
        self.beliefs = _load_beliefs(self.data_dir / CHAIN_DIR / BELIEFS_FILE)
        self.directory = TokenDirectory(self.reader.eth_call)
        self.backoff = Backoff(self.chain.rpc.backoff_base_s, self.chain.rpc.backoff_max_s)
        self._rng = random.Random()  # noqa: S311 - jitter, not crypto
        self._truth_written = _count_lines(self.data_dir / CHAIN_DIR / GROUND_TRUTH_FILE)
        self._changes_written = _count_lines(self.data_dir / CHAIN_DIR / FACT_CHANGES_FILE)
        save_names(self.data_dir, self.names)
        if self.market is not None:  # the chain is known: Theta may tick before Gamma polls
            self._restore_handoff(self.store.load_handoff(self.market.chain_id))

    def _handoff_json(self, pending: list[Escalation]) -> str:
        """What Theta is handed as of this commit: committed with the cursor, so a start
        (after a kill too) hands Theta what it would have had."""
        return json.dumps({"last_feed": self._last_feed,
                           "handoff": self.to_theta.to_dict(pending)})

    async def stop(self) -> None:
        """At a clean stop (wiring calls it once the loops stopped, before the stores
        close): commit what is uncommitted, then the hand-off as it is now."""
        await self.commit()
        await anyio.to_thread.run_sync(self.save_handoff)

    def save_handoff(self) -> None:
        """Commit the hand-off as it is now with the window of the last round (Theta may
        have drained the queue since that round's commit); only after `commit`, so the
        cursor never passes an unwritten episode."""
        if self.follower is None or self.chain_id is None or self.follower.first_block is None:
            return
        self.store.commit(self.chain_id, self.follower.window, self.follower.first_block,
                          self._last_time or 0.0, self._handoff_json([]))

    def _restore_handoff(self, text: str | None) -> None:
        if text is None:
            return
        try:
            data = json.loads(text)
            self.to_theta.restore(data["handoff"])
            self._last_feed = data["last_feed"]
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("the committed hand-off is unreadable; starting without it",
                        error=str(exc))

    def name_addresses(self, names: Mapping[str, str]) -> None:
        """Add names (e.g. the golem's own wallet, known once actions are set up); kept
        beside the chain data for re-renderings (golem.gamma.rendering.load_names)."""
        self.names = self.names.with_names(names)
        save_names(self.data_dir, self.names)

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        if self.halted:
            raise CaptureHalted(self.halted)
        now = ctx.clock.now()
        counters: dict[str, int | float] = {}
        if self.market is not None:
            dt = now - self._last_time if self._last_time is not None else 10.0
            self._last_time = now
            started = time.perf_counter()
            step = await anyio.to_thread.run_sync(self.market.advance, now, max(dt, 1.0))
            counters["reverted"] = len(step.reverted)
            await anyio.to_thread.run_sync(self._write_ground_truth)
            counters["market_ms"] = ms_since(started)
        if now < self._retry_at:
            return {**counters, "waiting": 1}
        try:
            counters.update(await self._capture(ctx, now))
        except (RpcError, RangeRefusedError) as exc:
            delay = self.backoff.next_delay(self._rng)
            self._retry_at = now + delay
            log.warning("chain node unavailable; backing off", error=str(exc),
                        attempt=self.backoff.attempt, retry_in_s=round(delay, 2))
            return {**counters, "node_errors": 1}
        except DeepReorgError as exc:
            self.halted = str(exc)
            log.error("capture halted", reason=self.halted)
            if self.events is not None:
                self.events.emit(ChainHalted(self.chain_id or 0, self.halted))
            raise
        self.backoff.reset()
        return counters

    async def _follower(self) -> ChainFollower:
        if self.follower is None:
            chain_id = await self.reader.chain_id()
            if self.expected_chain_id and chain_id != self.expected_chain_id:
                self.halted = (f"chain.rpc.chain_id: the node reports chain {chain_id}, "
                               f"configured {self.expected_chain_id}; capture halted")
                log.error("capture halted", reason=self.halted)
                raise CaptureHalted(self.halted)
            window, first = await anyio.to_thread.run_sync(
                self.store.load, chain_id, self.chain.reorg_window)
            if self.market is None:
                self._restore_handoff(
                    await anyio.to_thread.run_sync(self.store.load_handoff, chain_id))
            self.chain_id = chain_id
            self.follower = ChainFollower(
                self.reader, self.watch, window=window,
                first_block=first if first is not None else self.first_block,
                confirmations=self.chain.confirmations,
                max_blocks=self.chain.max_blocks_per_tick,
                max_log_span=self.chain.rpc.max_log_span,
                max_logs=self.chain.max_logs_per_tick)
            log.info("capture following the chain", chain_id=chain_id, cursor=window.cursor,
                     first_block=self.follower.first_block)
        return self.follower

    async def _capture(self, ctx: TickContext, now: float) -> dict[str, int | float]:
        follower = await self._follower()
        assert self.chain_id is not None
        for _ in range(MAX_REWINDS_PER_TICK):
            started = time.perf_counter()
            round_ = await follower.poll()
            self._stage["poll_ms"] = ms_since(started)
            match round_:
                case Idle(head=head, reason=reason, normal=normal):
                    if not normal:
                        log.warning("capture waiting", reason=reason, head=head,
                                    cursor=follower.cursor)
                    return {"head": head, "logs": 0, **self._stage}
                case Rewound():
                    await self._rewind(follower, round_, now)
                case Captured():
                    return await self._store(follower, round_, ctx.tick, now)
        return {"rewinds": MAX_REWINDS_PER_TICK}

    async def _rewind(self, follower: ChainFollower, round_: Rewound, now: float) -> None:
        assert self.chain_id is not None
        await self.commit()
        deleted = await self.grimoire.drop_chain_episodes(self.chain_id, round_.common_ancestor)
        self.to_theta.drop_orphaned(self.chain_id, round_.common_ancestor)
        await anyio.to_thread.run_sync(self.store.commit, self.chain_id, round_.window,
                                       round_.first_block, now, self._handoff_json([]))
        follower.accept(round_)
        log.warning("chain reorg: re-capturing", depth=round_.depth,
                    common_ancestor=round_.common_ancestor, episodes_deleted=deleted)
        if self.events is not None:
            self.events.emit(ChainReorg(self.chain_id, round_.depth, round_.common_ancestor,
                                        deleted))

    async def _store(self, follower: ChainFollower, round_: Captured, tick: int,
                     now: float) -> dict[str, int | float]:
        assert self.chain_id is not None
        started = time.perf_counter()
        beliefs, episodes, escalated = await self._perceive(round_.logs, tick, now)
        reverts = await revert_episodes(
            self.reader, self.directory, self.watch.addresses, round_.first, round_.last,
            verified=verified_hashes(round_), succeeded={raw.tx_hash for raw in round_.logs},
            namespace=self.grimoire.namespace, tick=tick, now=now, names=self.names) \
            if self.chain.capture_reverts else []
        episodes.extend(reverts)
        stage = {**self._stage, "perceive_ms": ms_since(started)}
        stored = 0
        deferred = self.commit_every > 1
        if episodes:
            started = time.perf_counter()
            vectors = await self.grimoire.embedder.aembed_shapes([e.text for e in episodes])
            stage["embed_ms"] = ms_since(started)
            started = time.perf_counter()
            stored = await self.grimoire.add_episodes(episodes, vectors=vectors,
                                                      defer=deferred)
            stage["store_ms"] = ms_since(started)
        self._uncommitted = (round_.window, round_.first_block, now, beliefs)
        if self._since_commit + 1 >= self.commit_every:
            started = time.perf_counter()
            await self.commit(escalated)
            stage["commit_ms"] = ms_since(started)
        else:
            self._since_commit += 1
        follower.accept(round_)
        self.beliefs = beliefs
        self.to_theta.escalate(escalated)
        return {"head": round_.head, "cursor": round_.last, "logs": len(round_.logs),
                "reverts": len(reverts), "episodes": stored, "escalated": len(escalated),
                **stage}

    async def commit(self, pending: Sequence[Escalation] = ()) -> None:
        """Make what was captured durable, in order: the episodes (a deferred write), then
        the reorg window (whose top is the cursor) with the hand-off as of now (``pending``:
        this round's escalations, not yet handed over), then the beliefs that go with it.
        Every `commit_every` Gamma ticks, before a rewind, and at shutdown (`stop`). A
        crash between commits loses only what lies above the committed cursor, and that
        is captured again (ids are stable, so nothing duplicates)."""
        if self._uncommitted is None:
            return
        assert self.chain_id is not None
        window, first_block, now, beliefs = self._uncommitted
        await self.grimoire.flush_episodes()
        await anyio.to_thread.run_sync(self.store.commit, self.chain_id, window, first_block,
                                       now, self._handoff_json(list(pending)))
        await anyio.to_thread.run_sync(self._write_beliefs, beliefs)
        self._uncommitted = None
        self._since_commit = 0

    async def _perceive(self, logs: tuple[RawLog, ...], tick: int, now: float,
                        ) -> tuple[BeliefState, list[Episode], list[Escalation]]:
        beliefs = self.beliefs
        episodes: list[Episode] = []
        escalated: list[Escalation] = []
        for raw in logs:
            event = decode_kept(raw)
            track = self.to_theta.tape(raw.address.lower())
            beliefs, obs = beliefs.observe(
                event.protocol, raw.address, tick=tick,
                continuous=features(event.name, event.args, track[-1].price if track else None),
                counts={"events": (1.0, 1.0)})
            decision = route_observation(obs, relevance=0.0)  # no positions yet
            curiosity = curiosity_score(obs.max_abs_z, obs.surprise)
            eid = episode_id(raw.chain_id, raw.block_hash, raw.log_index)
            size = obs.features.get(size_key(event.name))
            meta = await self.directory.meta_for(event)
            context = self._context(event, size.error if size is not None else None)
            rendering = render(event, meta, self.names)
            payload = episode_payload(event, obs.regime.value, decision.action.value, meta)
            payload["context"] = context
            payload["names"] = names_used(rendering.identifiers, self.names)
            episodes.append(Episode(
                id=eid, namespace=self.grimoire.namespace, chain_id=raw.chain_id,
                block_number=raw.block_number, block_hash=raw.block_hash,
                log_index=raw.log_index, tx_hash=raw.tx_hash, tick=tick, observed_at=now,
                category=event.category, protocol=event.protocol,
                text=event_text(context, rendering), payload=payload, curiosity=curiosity,
                identifiers=event_identifiers(rendering, raw.tx_hash),
                provenance=Provenance(author=self.grimoire.namespace, process="gamma",
                                      verified=True)))
            if decision.action is RoutingAction.ESCALATE:
                escalated.append(Escalation(eid, curiosity, decision.reason, episodes[-1]))
        return beliefs, episodes, escalated

    def _context(self, event: DecodedEvent, size_error: float | None) -> str:
        """Perception's reading of size and market move, put before the rendering."""
        change = None
        if event.name == "AnswerUpdated":
            answer, updated = event.args.get("current"), event.args.get("updatedAt")
            if isinstance(answer, int) and isinstance(updated, int) and answer > 0:
                feed = event.address.lower()
                track = self.to_theta.tape(feed)
                change = answer_change_phrase(track[-1].price if track else None, answer)
                self.to_theta.record_price(feed, PricePoint(float(updated), float(answer)))
                self._last_feed = feed
        market = move_phrase(self.to_theta.tape(self._last_feed)) if self._last_feed else None
        return context_line(size_phrase(event.category, size_error), market, change)

    def _write_beliefs(self, beliefs: BeliefState) -> None:
        folder = self.data_dir / CHAIN_DIR
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / BELIEFS_FILE, json.dumps(beliefs.to_dict()).encode())

    def _write_ground_truth(self) -> None:
        """The market's regime switches, for comparing with what perception detected,
        and the facts that changed mid-life (a sibling file, only once one did). Each
        write adds only the new lines: the switches pile up over a life (~800 a golem
        day on the default market), and rewriting the file at every switch made the cost
        grow with the golem's age."""
        assert self.market is not None
        truth = self.market.ground_truth
        folder = self.data_dir / CHAIN_DIR
        if len(truth) != self._truth_written:
            self._truth_written = _sync_lines(
                folder / GROUND_TRUTH_FILE, self._truth_written, truth,
                lambda s: json.dumps({"golem_time": s.golem_time,
                                      "block_number": s.block_number, "regime": s.regime}))
        changes = self.market.fact_changes
        if len(changes) != self._changes_written:
            self._changes_written = _sync_lines(
                folder / FACT_CHANGES_FILE, self._changes_written, changes,
                lambda c: json.dumps(c.to_dict(), sort_keys=True))


def decode_kept(raw: RawLog) -> DecodedEvent:
    """Decode a log; a malformed one is kept raw (with why), never dropped."""
    try:
        return decode(raw)
    except MalformedLog as exc:
        log.warning("malformed log kept raw", tx=raw.tx_hash, error=str(exc))
        return DecodedEvent("unknown", "unknown", "unknown", "", raw.address, {},
                            {"topic0": raw.topics[0] if raw.topics else None,
                             "topics": list(raw.topics), "data": raw.data,
                             "malformed": str(exc)})


def episode_payload(event: DecodedEvent, regime: str, route: str,
                    tokens: Mapping[str, TokenMeta] | None = None) -> dict[str, Any]:
    """The decoded event as stored; ``tokens``: the metadata its amounts are read with
    (keys as TokenDirectory.meta_for gives them), so consolidation can state baselines in
    token units. Symbols are cleaned on-chain strings: untrusted."""
    return {"event": event.name, "signature": event.signature, "address": event.address,
            "args": dict(event.args),  # exact ints, JSON-safe in Python
            "raw": event.raw, "perceived_regime": regime, "route": route,
            "tokens": {key: {"symbol": m.symbol, "decimals": m.decimals}
                       for key, m in (tokens or {}).items()}}


T = TypeVar("T")


def _count_lines(path: Path) -> int:
    """The complete lines of a JSON-lines file this module appends to; a last line
    without its newline (a write cut short by a crash) is cut off, so the next
    _sync_lines writes that item again."""
    try:
        with path.open("rb+") as fh:
            data = fh.read()
            complete = data.rfind(b"\n") + 1
            if complete < len(data):
                fh.truncate(complete)
            return data.count(b"\n")
    except FileNotFoundError:
        return 0


def _sync_lines(path: Path, written: int, items: Sequence[T],
                line: Callable[[T], str]) -> int:
    """Bring a JSON-lines file holding ``line`` of the first ``written`` items up to all
    of ``items``: appends the missing ones (then fsyncs), or rewrites it atomically when
    ``items`` is shorter (a market restored to an earlier state). Returns len(items)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if len(items) < written:
        atomic_write(path, "".join(line(i) + "\n" for i in items).encode())
        return len(items)
    with path.open("ab") as fh:
        fh.write("".join(line(i) + "\n" for i in items[written:]).encode())
        fh.flush()
        os.fsync(fh.fileno())
    return len(items)


def _load_beliefs(path: Path) -> BeliefState:
    try:
        return BeliefState.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return BeliefState()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("beliefs unreadable; starting fresh", path=str(path), error=str(exc))
        return BeliefState()


def read_ground_truth(data_dir: Path) -> list[tuple[float, str]]:
    """The simulated market's regime switches written so far, (golem time, regime),
    oldest first; empty for a chain that is not simulated or before the first write.
    A line that does not parse is skipped."""
    return _jsonl(data_dir / CHAIN_DIR / GROUND_TRUTH_FILE,
                  lambda row: (float(row["golem_time"]), str(row["regime"])))


def read_fact_changes(data_dir: Path) -> list[tuple[float, str, dict[str, Any]]]:
    """The simulated market's fact changes written so far (golem.chain.changes),
    (golem time, kind, details), oldest first; empty for a market without changes, a
    chain that is not simulated, or before the first change. A line that does not parse
    is skipped."""
    def change(row: Any) -> tuple[float, str, dict[str, Any]]:
        if not isinstance(row["details"], dict):
            raise TypeError("details must be an object")
        return float(row["golem_time"]), str(row["kind"]), row["details"]

    return _jsonl(data_dir / CHAIN_DIR / FACT_CHANGES_FILE, change)


def _jsonl(path: Path, parse: Callable[[Any], T]) -> list[T]:
    """Each line of a JSON-lines file through ``parse``, in order; lines that are not JSON
    or that ``parse`` refuses (ValueError, KeyError, TypeError) are skipped; no file:
    empty."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(parse(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            continue
    return out

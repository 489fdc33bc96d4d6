"""The in-process event bus and its JSONL log.

Parts of the runtime announce what happened as typed events (``runtime:started``,
``tick:failed``, and later ``context:assembled``, ``GrimoireWrite`` and the
rest from the seeds). Subscribers get them synchronously, in order; events
marked ``persist`` are also appended to ``events.jsonl`` in the data dir,
which rotates by size.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import structlog

from golem.redact import redact

EVENTS_FILE = "events.jsonl"

log = structlog.get_logger("golem.events")


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str] = "event"
    persist: ClassVar[bool] = True

    def payload(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RuntimeStarted(Event):
    kind: ClassVar[str] = "runtime:started"
    run: int
    pid: int
    clock: str
    handlers: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class RuntimeStopping(Event):
    kind: ClassVar[str] = "runtime:stopping"
    reason: str


@dataclass(frozen=True)
class RuntimeStopped(Event):
    kind: ClassVar[str] = "runtime:stopped"
    reason: str
    ticks: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class TickCompleted(Event):
    kind: ClassVar[str] = "tick:completed"
    persist: ClassVar[bool] = False
    loop: str
    tick: int
    duration_ms: float
    outcome: str


@dataclass(frozen=True)
class TickFailed(Event):
    kind: ClassVar[str] = "tick:failed"
    loop: str
    tick: int
    outcome: str
    error_type: str
    message: str
    consecutive_failures: int


@dataclass(frozen=True)
class TickSkipped(Event):
    kind: ClassVar[str] = "tick:skipped"
    loop: str
    after_tick: int
    skipped: int
    reason: str


Subscriber = Callable[[Event, dict[str, Any]], None]


class EventBus:
    """Synchronous fan-out; a failing subscriber is logged and does not stop the others."""

    def __init__(self, now: Callable[[], float], sink: EventLog | None = None) -> None:
        self._now = now
        self._sink = sink
        self._subscribers: list[Subscriber] = []
        self._seq = 0

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    def emit(self, event: Event) -> dict[str, Any] | None:
        """Deliver ``event``; returns the record, or None when nobody would see it."""
        persist = event.persist and self._sink is not None
        if not persist and not self._subscribers:
            return None
        self._seq += 1
        record: dict[str, Any] = {
            "seq": self._seq,
            "kind": event.kind,
            "golem_time": self._now(),
            "wall_time": time.time(),
            **redact(event.payload()),
        }
        for subscriber in tuple(self._subscribers):
            try:
                subscriber(event, record)
            except Exception:
                log.exception("event subscriber failed", event_kind=event.kind)
        if persist and self._sink is not None:
            self._sink.append(record)
        return record


class EventLog:
    """Buffered JSONL appends; ``flush`` does the file I/O (call it from a worker thread)."""

    def __init__(self, path: Path, max_bytes: int, keep: int) -> None:
        self.path = path
        self._max_bytes = max_bytes
        self._keep = keep
        self._pending: list[str] = []

    def append(self, record: dict[str, Any]) -> None:
        self._pending.append(json.dumps(record, separators=(",", ":"), default=str))

    def flush(self) -> int:
        lines, self._pending = self._pending, []
        if not lines:
            return 0
        data = ("\n".join(lines) + "\n").encode()
        if self.path.exists() and self.path.stat().st_size + len(data) > self._max_bytes:
            self._rotate()
        with self.path.open("ab") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        return len(lines)

    def _rotate(self) -> None:
        if self._keep == 0:
            self.path.unlink(missing_ok=True)
            return
        for i in range(self._keep - 1, 0, -1):
            older = self._rotated(i)
            if older.exists():
                older.replace(self._rotated(i + 1))
        self.path.replace(self._rotated(1))

    def _rotated(self, n: int) -> Path:
        return self.path.with_name(f"{self.path.stem}.{n}{self.path.suffix}")


@dataclass(frozen=True)
class GrimoireWrite(Event):
    """A memory was written (seed 000: {entry_type, category, confidence, source})."""

    kind: ClassVar[str] = "grimoire:write"
    id: str
    namespace: str
    entry_type: str
    category: str | None
    confidence: float
    source: str
    status: str


@dataclass(frozen=True)
class GrimoireForget(Event):
    """Something was forgotten; forgetting is a first-class, logged operation."""

    kind: ClassVar[str] = "grimoire:forget"
    ids: list[str]
    namespace: str
    reason: str


@dataclass(frozen=True)
class EpisodesStored(Event):
    """A batch of episodes went to memory (``offered``: the batch size; an id already
    stored is left as it is). Not persisted: the metrics count it."""

    kind: ClassVar[str] = "grimoire:episodes"
    persist: ClassVar[bool] = False
    namespace: str
    offered: int


@dataclass(frozen=True)
class RecallCompleted(Event):
    """One recall ran (wall seconds, whether memory refused). Not persisted."""

    kind: ClassVar[str] = "grimoire:recall"
    persist: ClassVar[bool] = False
    duration_s: float
    refused: bool
    hits: int


@dataclass(frozen=True)
class ChainReorg(Event):
    """Captured blocks were orphaned: their episodes were deleted and the range re-captured."""

    kind: ClassVar[str] = "chain:reorg"
    chain_id: int
    depth: int
    common_ancestor: int
    episodes_deleted: int


@dataclass(frozen=True)
class ChainHalted(Event):
    """Capture stopped because history could not be verified (a reorg past the window)."""

    kind: ClassVar[str] = "chain:halted"
    chain_id: int
    reason: str


@dataclass(frozen=True)
class ContextAssembled(Event):
    """The Governor built a workspace (seed 002 events)."""

    kind: ClassVar[str] = "context:assembled"
    tick: int
    policy_revision: int
    frame: str
    budget: int
    used: int
    pressure: float
    included: int
    excluded: int
    delta_share: float


@dataclass(frozen=True)
class ContextCompacted(Event):
    kind: ClassVar[str] = "context:compacted"
    tick: int
    pressure: float


@dataclass(frozen=True)
class KnowledgeSkipped(Event):
    """Consolidated facts in a decision's view whose numbers made no sense (NaN, a count
    below 1, a negative stddev, ...): ignored by the decision, counted here."""

    kind: ClassVar[str] = "cognition:knowledge_skipped"
    tick: int
    count: int


@dataclass(frozen=True)
class ContextRegimeOverride(Event):
    kind: ClassVar[str] = "context:regime_override"
    tick: int
    regime: str
    policy_revision: int


@dataclass(frozen=True)
class ContextFeedbackLoop(Event):
    """Loop 1 recorded an outcome, or Loop 2 ran (with its proposed steps)."""

    kind: ClassVar[str] = "context:feedback_loop"
    loop: int
    tick: int
    detail: dict[str, Any]


@dataclass(frozen=True)
class ContextPolicyUpdated(Event):
    kind: ClassVar[str] = "context:policy_updated"
    revision: int
    delta: dict[str, float]
    samples: int


@dataclass(frozen=True)
class ConsolidationCompleted(Event):
    """One consolidation run (seed 000 ConsolidationReport, as an event)."""

    kind: ClassVar[str] = "delta:consolidation"
    tick: int
    episodes_replayed: int
    episodes_verified: int
    clusters: int
    facts_created: int
    facts_reinforced: int
    facts_quarantined: int
    decayed: int
    forgotten: int
    model_assisted: bool
    duration_s: float


@dataclass(frozen=True)
class CuratorCycleComplete(Event):
    """The curator validated, pruned, compressed and cross-referenced (seed 000)."""

    kind: ClassVar[str] = "delta:curator"
    tick: int
    entries_pruned: int
    entries_promoted: int
    entries_archived: int
    heuristics_proposed: int


@dataclass(frozen=True)
class DreamCycleComplete(Event):
    """NREM replay and REM counterfactuals ran; what they staged."""

    kind: ClassVar[str] = "delta:dream"
    tick: int
    replayed: int
    residuals: int
    hypotheses_staged: int
    mutations_staged: int


@dataclass(frozen=True)
class PolicyMutationChanged(Event):
    """A Loop 3 ContextPolicyMutation was staged, put on trial, validated or refuted."""

    kind: ClassVar[str] = "context:mutation"
    mutation_id: str
    status: str
    delta: dict[str, float]
    confidence: float
    detail: str


@dataclass(frozen=True)
class WorkingMemoryRewritten(Event):
    """MEMORY.md was rewritten by the dream cycle, or the rewrite was rejected."""

    kind: ClassVar[str] = "memory:rewrite"
    accepted: bool
    version: str
    notes_consumed: int
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class VitalityUpdated(Event):
    """Delta computed vitality: the components, their product and the phase."""

    kind: ClassVar[str] = "mortality:vitality"
    tick: int
    economic: float
    epistemic: float
    stochastic: float
    composite: float
    phase: str
    cause: str
    unproven: bool
    ttl_s: float | None


@dataclass(frozen=True)
class PhaseTransition(Event):
    """The behavioural phase changed (from None: the first reading)."""

    kind: ClassVar[str] = "mortality:phase"
    tick: int
    from_phase: str | None
    to_phase: str
    composite: float
    cause: str


@dataclass(frozen=True)
class DeathProtocolStep(Event):
    """A Thanatopsis step started, finished, or was skipped on resume (already done)."""

    kind: ClassVar[str] = "mortality:death_step"
    step: str
    state: str  # started | done | skipped
    cause: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GolemDied(Event):
    """The death protocol finished: the data dir is marked dead."""

    kind: ClassVar[str] = "mortality:died"
    cause: str
    generation: int
    testament_id: str
    testament_path: str
    reflection_source: str
    settled: bool

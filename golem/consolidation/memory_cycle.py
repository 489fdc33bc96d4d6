"""The dream cycle's working-memory rewrite, with write-ahead-log semantics (seed 004).

    cycle = WorkingMemoryCycle(grimoire, grimoire.memory_path, events, name=..., mandate=...)
    report = await cycle.run(now, crystals=[...], insights=[...])

Order, so a crash at any point loses nothing:

1. read MEMORY.md and the scratch notes;
2. make the new state: the model's proposal when a model is configured, else the
   deterministic synthesis (rewrite.py); a model failure falls back to the synthesis
   and the report says so; the first cycle over a hand-written file is always the
   deterministic, conservative migration;
3. store every crystal the new state points to: each scratch note as
   ``scratch-<id>`` (re-indexed when missing, pruned or still ephemeral, so the
   lossless copy outlives the note), folded lines and seed chunks;
4. commit through ``write_memory`` (collapse guards, atomic rename, ``.prev``);
5. only then drop the used notes from the scratch log.

A kill before 4 leaves the old MEMORY.md and every note; between 4 and 5 the new
file and every note (the next cycle finds them already placed and just consumes
them). A rejected rewrite keeps the old file and the notes, and is logged and
emitted with its problems.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread
import structlog

from golem.consolidation.rewrite import (
    Crystal,
    Insight,
    Rewrite,
    RewriteInputs,
    RewriteParams,
    synthesise,
)
from golem.consolidation.seed_migration import allowed_chars
from golem.events import EventBus, WorkingMemoryRewritten
from golem.grimoire.errors import InvalidMemory
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.memory_file import WriterBusy, atomic_write, read_text, write_memory
from golem.grimoire.records import DecayClass, MemoryType, Provenance, SemanticEntry, Status
from golem.grimoire.scratch import ScratchNote
from golem.grimoire.working_memory import parse_memory

log = structlog.get_logger("golem.consolidation")

SEED_BACKUP_SUFFIX = ".seed-backup"
PROCESS = "working-memory"


@dataclass(frozen=True)
class ModelRequest:
    """What a model gets to propose the new MEMORY.md (the draft is the synthesis)."""

    old_text: str | None
    draft: str
    notes: tuple[ScratchNote, ...]
    crystals: tuple[Crystal, ...]
    insights: tuple[Insight, ...]
    now: float
    max_chars: int


ModelFn = Callable[[ModelRequest], Awaitable[str]]
SynthesiseFn = Callable[[RewriteInputs], Rewrite]


@dataclass(frozen=True)
class CycleReport:
    accepted: bool
    source: str  # "deterministic", "model", or "deterministic (model failed: ...)"
    version: str  # sha256 prefix of the committed MEMORY.md ("" when there is none)
    notes_consumed: int
    notes_pending: int  # notes left in scratch (all of them when rejected)
    indexed: int  # crystals stored or re-stored before the write
    migrated: bool
    chars: int
    problems: tuple[str, ...] = ()


def version_of(text: str | None) -> str:
    return "" if text is None else hashlib.sha256(text.encode()).hexdigest()[:16]


class WorkingMemoryCycle:
    def __init__(self, grimoire: Grimoire, memory_path: Path, events: EventBus | None, *,
                 name: str, mandate: str, synthesise: SynthesiseFn | None = None,
                 model: ModelFn | None = None, params: RewriteParams | None = None,
                 crystal_decay: DecayClass = DecayClass.STRATEGIC) -> None:
        self.grimoire = grimoire
        self.path = memory_path
        self.events = events
        self.name, self.mandate = name, mandate
        self.params = params or RewriteParams()
        self.synthesise = synthesise or (lambda inputs: _default(inputs, self.params))
        self.model = model
        self.crystal_decay = crystal_decay

    async def run(self, now: float, crystals: Sequence[Crystal] = (),
                  insights: Sequence[Insight] = (), mood: str | None = None) -> CycleReport:
        old_text = await anyio.to_thread.run_sync(read_text, self.path)
        notes = tuple(await self.grimoire.scratch_notes())
        inputs = RewriteInputs(old_text, [(n.id, n.text, n.importance, n.at) for n in notes],
                               tuple(crystals), tuple(insights), now, self.name, self.mandate,
                               mood)
        draft = await anyio.to_thread.run_sync(self.synthesise, inputs)
        text, max_chars, source = draft.text, draft.max_chars, "deterministic"
        if self.model is not None and not draft.migrated:
            max_chars = allowed_chars(old_text, self.params.max_chars, self.params.min_keep_ratio)
            try:
                text = await self.model(ModelRequest(old_text, draft.text, notes, tuple(crystals),
                                                     tuple(insights), now, max_chars))
                source = "model"
            except Exception as exc:  # any model failure falls back, logged
                log.warning("working memory model failed; using the deterministic synthesis",
                            error=type(exc).__name__, message=str(exc)[:200])
                text, max_chars = draft.text, draft.max_chars
                source = f"deterministic (model failed: {type(exc).__name__})"
        if draft.migrated and old_text is not None:
            await anyio.to_thread.run_sync(self._seed_backup, old_text)
        indexed = await self._index(notes, draft)
        old = None if old_text is None else parse_memory(old_text)
        try:
            await anyio.to_thread.run_sync(write_memory, self.path, text, old, max_chars)
        except (InvalidMemory, WriterBusy) as exc:  # RewriteRejected is an InvalidMemory
            problems = getattr(exc, "problems", None) or (str(exc),)
            return self._rejected(old_text, source, len(notes), indexed, draft,
                                  problems=problems)
        text = text if text.endswith("\n") else text + "\n"  # as committed
        ids = [n.id for n in notes]
        consumed = await self.grimoire.consume_notes(ids)
        report = CycleReport(True, source, version_of(text), consumed, len(notes) - consumed,
                             indexed, draft.migrated, len(text))
        log.info("working memory rewritten", source=source, version=report.version,
                 chars=report.chars, notes_consumed=consumed, indexed=indexed,
                 migrated=draft.migrated, placed=draft.placed, folded=draft.folded)
        self._emit(WorkingMemoryRewritten(True, report.version, consumed))
        return report

    def _rejected(self, old_text: str | None, source: str, pending: int, indexed: int,
                  draft: Rewrite, *, problems: Sequence[str]) -> CycleReport:
        version = version_of(old_text)
        log.warning("working memory rewrite rejected; the old MEMORY.md is kept",
                    source=source, problems=list(problems), notes_kept=pending)
        self._emit(WorkingMemoryRewritten(False, version, 0, list(problems)))
        return CycleReport(False, source, version, 0, pending, indexed, draft.migrated,
                           len(old_text or ""), tuple(problems))

    def _seed_backup(self, text: str) -> None:
        backup = self.path.with_name(self.path.name + SEED_BACKUP_SUFFIX)
        if not backup.exists():
            atomic_write(backup, text.encode())

    async def _index(self, notes: tuple[ScratchNote, ...], draft: Rewrite) -> int:
        """Store what the new state points to before it is written (the WAL rule)."""
        count = 0
        for note in notes:
            found = await self.grimoire.get(f"scratch-{note.id}")
            if _needs_index(found, self.crystal_decay):
                await self._remember(f"scratch-{note.id}", note.text, note.importance, note.at)
                count += 1
        for cid, text, importance in draft.to_index:
            if _needs_index(await self.grimoire.get(cid), None):
                await self._remember(cid, text, importance, None)
                count += 1
        return count

    async def _remember(self, cid: str, text: str, importance: float,
                        at: float | None) -> None:
        await self.grimoire.remember(
            text[: self.grimoire.cfg.max_text_chars], type=MemoryType.FACT,
            importance=importance, timestamp=at, decay_class=self.crystal_decay, entry_id=cid,
            provenance=Provenance(author=self.grimoire.namespace, process=PROCESS))

    def _emit(self, event: WorkingMemoryRewritten) -> None:
        if self.events is not None:
            self.events.emit(event)


def _needs_index(found: object, decay: DecayClass | None) -> bool:
    if not isinstance(found, SemanticEntry):
        return True
    if found.status is Status.PRUNED:
        return True
    return decay is not None and found.decay_class is DecayClass.EPHEMERAL


def _default(inputs: RewriteInputs, params: RewriteParams) -> Rewrite:
    return synthesise(inputs, params)

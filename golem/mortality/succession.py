"""Succession: a new golem boots from its predecessor's testament (``golem run --inherit``).

The successor has its own identity and namespace, at generation parent + 1. Every
testament entry enters the Grimoire STAGED with provenance SUCCESSOR, generation =
entry generation + 1 and confidence = 0.4 x 0.85^generation (scoring.inherited_confidence
with base 1.0: the tier ceiling, whatever the parent believed). Retrieval applies its own
ranking weight (tier x 0.85^generation x 1.2 for bloodstains) to the rank score, never to
the stored confidence, so the two do not compound. Inherited entries reach ACTIVE only
through the curator (two useful recalls here: see inherited_replay).

Importing is once: lineage.json records it, entry ids are derived from the testament,
so a crash mid-import re-runs idempotently and a restart does not re-import.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import anyio.to_thread
import structlog

from golem.grimoire.memory_file import atomic_write
from golem.grimoire.records import (
    DecayClass,
    EntryType,
    FactKind,
    InsightCategory,
    MemoryType,
    Provenance,
    SemanticEntry,
    Source,
    Status,
)
from golem.grimoire.scoring import inherited_confidence
from golem.mortality import testament as tm
from golem.mortality.lineage import Lineage, LineageError

if TYPE_CHECKING:
    from golem.config import Config
    from golem.grimoire.grimoire import Grimoire

log = structlog.get_logger("golem.mortality.succession")

INHERITED_DIR = "inherited"  # <data_dir>/inherited/<testament_id>/: the parent's files
IMPORT_PROCESS = "inheritance"
_BATCH = 256

K = tm.EntryKind
_ENTRY_TYPE = {K.ANTI_KNOWLEDGE: EntryType.ANTI_KNOWLEDGE, K.BLOODSTAIN: EntryType.WARNING,
               K.CAUSAL_LINK: EntryType.CAUSAL_LINK, K.PROCEDURAL: EntryType.STRATEGY_FRAGMENT,
               K.EPISODE_SUMMARY: EntryType.INSIGHT, K.FACT: EntryType.INSIGHT}
_MEMORY_TYPE = {K.ANTI_KNOWLEDGE: MemoryType.CONSTRAINT, K.BLOODSTAIN: MemoryType.CONSTRAINT,
                K.PROCEDURAL: MemoryType.STRATEGY_OUTCOME, K.EPISODE_SUMMARY: MemoryType.EPISODE}


@dataclass(frozen=True)
class Boot:
    """What start-up found or did: the lineage, and how many entries were imported now."""

    lineage: Lineage
    imported: int = 0
    testament_id: str | None = None


def inherit_path(config: Config, cli_inherit: Path | None = None) -> Path | None:
    """The testament to inherit from: the CLI flag, else succession.inherit (relative to
    the config file's folder), else None."""
    if cli_inherit is not None:
        return cli_inherit
    if not config.succession.inherit:
        return None
    path = Path(config.succession.inherit).expanduser()
    base = config.source.resolve().parent if config.source is not None else Path.cwd()
    return path if path.is_absolute() else base / path


def with_inherit(config: Config, path: Path) -> Config:
    """``config`` with succession.inherit set (``golem run --inherit PATH``)."""
    return replace(config, succession=replace(config.succession,
                                              inherit=str(path.expanduser().resolve())))


def entry_id(testament_id: str, index: int, e: tm.TestamentEntry) -> str:
    key = f"{testament_id}\x00{index}\x00{e.kind.value}\x00{e.source_id}\x00{e.text}"
    return "inh-" + hashlib.sha256(key.encode()).hexdigest()[:28]


def inherited_entry(t: tm.Testament, index: int, e: tm.TestamentEntry, *, namespace: str,
                    now: float) -> SemanticEntry:
    """The successor's staged entry for one testament entry (pure)."""
    generation = e.generation + 1
    fact = dict(e.fact)
    fact.update({"inherited_from": t.testament_id, "testament_kind": e.kind.value,
                 "parent_confidence": e.confidence})
    if e.conditions:
        fact["conditions"] = dict(e.conditions)
    entry_type = _ENTRY_TYPE[e.kind] if e.kind != K.FACT or e.entry_type is None \
        else EntryType(e.entry_type)
    anti = e.kind == K.ANTI_KNOWLEDGE
    return SemanticEntry(
        id=entry_id(t.testament_id, index, e), namespace=namespace, text=e.text,
        entry_type=entry_type, memory_type=_MEMORY_TYPE.get(e.kind, MemoryType.FACT),
        created_at=now,
        confidence=inherited_confidence(1.0, Source.SUCCESSOR, generation),
        importance=e.importance, category=InsightCategory(e.category) if e.category else None,
        fact_kind=(FactKind.ANTI_KNOWLEDGE if anti and e.fact_kind is None
                   else FactKind(e.fact_kind) if e.fact_kind else None),
        fact=fact, status=Status.STAGED,
        decay_class=DecayClass.STRUCTURAL if anti else DecayClass.STRATEGIC,
        provenance=Provenance(source=Source.SUCCESSOR, generation=generation,
                              author=t.namespace, process=IMPORT_PROCESS,
                              bloodstain=e.bloodstain))


def check_inheritance(existing: Lineage | None, t: tm.Testament, namespace: str) -> bool:
    """True when the testament is already imported here; raises when inheriting into this
    data dir would overwrite another identity."""
    if namespace == t.namespace:
        raise LineageError(
            f"inherit: the successor needs its own namespace, but {namespace!r} is the "
            "parent's (set golem.name or grimoire.namespace)")
    if existing is None:
        return False
    if existing.parent_testament_id != t.testament_id:
        had = existing.parent_testament_id or "none (a golem of its own)"
        raise LineageError(
            f"inherit: this data dir already holds golem {existing.golem_id} (parent "
            f"testament {had}); a successor of {t.testament_id} needs a new data dir")
    return existing.inherited


async def boot(config: Config, grimoire: Grimoire, *, now: float,
               inherit: Path | None = None) -> Boot:
    """Start-up: load or create this data dir's lineage, importing a testament once.

    Call after the Grimoire opens and before the loops start (wiring.setup).
    """
    from golem.mortality.death import refuse_if_dead  # noqa: PLC0415 - owned by death

    data_dir = config.data_dir
    refuse_if_dead(data_dir)
    existing = await anyio.to_thread.run_sync(Lineage.load, data_dir)
    path = inherit if inherit is not None else inherit_path(config)
    if path is None:
        if existing is not None:
            return Boot(existing)
        lineage = Lineage.create(name=config.golem.name, namespace=grimoire.namespace,
                                 seed=config.golem.seed, born_at=now)
        await anyio.to_thread.run_sync(lineage.save, data_dir)
        log.info("golem born", golem_id=lineage.golem_id, generation=0)
        return Boot(lineage)
    try:
        t = await anyio.to_thread.run_sync(tm.load_testament, path)
    except tm.TestamentError as exc:
        if existing is None or not existing.inherited:
            raise
        # Imported already: a restart must not depend on the file still being there.
        log.warning("inherited testament unreadable; keeping the imported lineage",
                    error=str(exc), testament=existing.parent_testament_id)
        return Boot(existing, 0, existing.parent_testament_id)
    if check_inheritance(existing, t, grimoire.namespace):
        assert existing is not None
        return Boot(existing, 0, t.testament_id)
    lineage = existing or Lineage.create(
        name=config.golem.name, namespace=grimoire.namespace, seed=config.golem.seed,
        born_at=now, generation=t.generation + 1, parent_testament_id=t.testament_id,
        parent_golem_id=t.golem_id, parent_namespace=t.namespace)
    await anyio.to_thread.run_sync(lineage.save, data_dir)  # claims the dir for this parent
    await anyio.to_thread.run_sync(write_snapshots, data_dir, t, path)
    count = await import_entries(grimoire, t, now=now)
    done = replace(lineage, inherited_at=now, inherited_entries=count)
    await anyio.to_thread.run_sync(done.save, data_dir)
    log.info("testament inherited", testament=t.testament_id, parent=t.golem_id,
             generation=done.generation, entries=count)
    return Boot(done, count, t.testament_id)


async def import_entries(grimoire: Grimoire, t: tm.Testament, *, now: float) -> int:
    """Write every testament entry as a staged inherited entry (idempotent upsert)."""
    entries = [inherited_entry(t, i, e, namespace=grimoire.namespace, now=now)
               for i, e in enumerate(t.entries)]
    for start in range(0, len(entries), _BATCH):
        await grimoire.write_entries(entries[start:start + _BATCH], checked=False)
    return len(entries)


def snapshot_dir(data_dir: Path, testament_id: str) -> Path:
    return data_dir / INHERITED_DIR / testament_id


def write_snapshots(data_dir: Path, t: tm.Testament, source: Path) -> Path:
    """The parent's PLAYBOOK.md, MEMORY.md, reflection and testament, beside (never over)
    the successor's own files."""
    folder = snapshot_dir(data_dir, t.testament_id)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(folder / "PLAYBOOK.md", t.playbook_md.encode())
    atomic_write(folder / "MEMORY.md", t.memory_md.encode())
    atomic_write(folder / "TESTAMENT.txt", tm.render_text(t).encode())
    copy = folder / tm.TESTAMENT_FILE
    if source.resolve() != copy.resolve():
        shutil.copyfile(source, copy)
    return folder

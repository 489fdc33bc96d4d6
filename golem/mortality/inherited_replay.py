"""InheritedReplay: early Delta ticks test inherited knowledge against this golem's own eyes.

For the first ``succession.inherited_replay_ticks`` Delta ticks after an inheritance,
each tick replays a slice of the still-STAGED inherited entries (round robin, sized so
every entry is replayed twice in the window) against the golem's own memory:

- contradicted: an own, self-learned ACTIVE entry about the same subject contradicts it
  (golem.grimoire.contradiction: opposite polarity, baselines apart, causal sign) ->
  confidence x 0.8 (anti-knowledge is never weakened: a warning that does not fire did
  its job);
- agreed: otherwise, an own episode at cosine >= 0.55 or an own entry at >= 0.75 ->
  ``grimoire.reinforce(useful=True)``: +0.05 and one useful recall. The curator promotes
  an inherited entry after two (CuratorParams.inherited_min_recalls), so agreement twice
  in the window is what makes inherited knowledge the successor's own;
- silent: nothing close -> unchanged (the curator's staged-age rule decides later).

Wiring: it is a Delta tick handler of its own (name "inherited_replay"):
    replay = await InheritedReplay.open(config, grimoire)   # None when nothing to replay
    if replay is not None:
        ctx.registry.register("delta", replay)              # after open_delta's handler
or, as a stage inside a tick: ``if replay.due(): counters = await replay.run(now)``.
Once the window has passed it does nothing (and is not opened on the next start).
The progress cursor lives in <data_dir>/mortality/inherited_replay.json.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from golem.grimoire import contradiction
from golem.grimoire.decay import is_anti_knowledge
from golem.grimoire.memory_file import atomic_write
from golem.grimoire.records import SemanticEntry, Source, Status
from golem.mortality.lineage import LINEAGE_DIR, Lineage
from golem.mortality.succession import IMPORT_PROCESS

if TYPE_CHECKING:
    from golem.config import Config
    from golem.grimoire.grimoire import Grimoire
    from golem.grimoire.knowledge import Neighbourhood
    from golem.runtime.handlers import TickContext

REPLAY_FILE = "inherited_replay.json"
AGREE_EPISODE = 0.55
AGREE_ENTRY = contradiction.DEFAULT_SIMILARITY
WEAKEN = 0.8
PASSES = 2  # each inherited entry is replayed this many times within the window
MAX_PER_TICK = 512
K_EPISODES = 5
K_ENTRIES = 5


def judge(episode_sims: Sequence[float], agreeing_entries: int, contradictions: int) -> str:
    """The replay rule: contradiction beats agreement; silence changes nothing."""
    if contradictions > 0:
        return "contradicted"
    if agreeing_entries > 0 or any(s >= AGREE_EPISODE for s in episode_sims):
        return "agreed"
    return "silent"


def evidence(entry: SemanticEntry, near: Neighbourhood | None,
             namespace: str) -> tuple[list[float], int, int]:
    """(own episodes' similarities, own entries agreeing, own entries contradicting) from
    what lies nearest the entry; nothing when it has no neighbourhood (gone meanwhile)."""
    if near is None:
        return [], 0, 0
    own = [(e, vec) for e, s, vec in near.entries if is_own(e, namespace) and s >= AGREE_ENTRY]
    against = sum(1 for e, vec in own
                  if contradiction.contradicts(entry, near.vector, e, vec) is not None)
    return [s for _, s in near.episodes], len(own) - against, against


def per_tick(staged: int, ticks: int) -> int:
    return min(MAX_PER_TICK, max(1, math.ceil(PASSES * staged / max(ticks, 1))))


def is_own(e: SemanticEntry, namespace: str) -> bool:
    """Self-learned knowledge of this golem (not inherited, not granted)."""
    return (e.namespace == namespace and e.provenance.source == Source.SELF
            and e.generation == 0 and e.provenance.process != IMPORT_PROCESS)


@dataclass
class InheritedReplay:
    grimoire: Grimoire
    path: Path
    ticks: int
    ticks_done: int = 0
    offset: int = 0
    name: str = "inherited_replay"

    @classmethod
    async def open(cls, config: Config, grimoire: Grimoire) -> InheritedReplay | None:
        """The stage for an inherited golem still inside its window, else None."""
        lineage = await anyio.to_thread.run_sync(Lineage.load, config.data_dir)
        ticks = config.succession.inherited_replay_ticks
        if lineage is None or not lineage.inherited or ticks == 0:
            return None
        path = config.data_dir / LINEAGE_DIR / REPLAY_FILE
        state = await anyio.to_thread.run_sync(_read, path)
        replay = cls(grimoire, path, ticks, int(state.get("ticks_done", 0)),
                     int(state.get("offset", 0)))
        return replay if replay.due() else None

    def due(self) -> bool:
        return self.ticks_done < self.ticks

    async def __call__(self, ctx: TickContext) -> dict[str, int] | None:
        return await self.run(ctx.clock.now()) if self.due() else None

    async def run(self, now: float) -> dict[str, int]:
        """One tick's slice; returns counters for the tick log."""
        g = self.grimoire
        staged = sorted(await g.entries(statuses=(Status.STAGED,), where=_imported),
                        key=lambda e: e.id)
        counts = {"replayed": 0, "agreed": 0, "contradicted": 0, "silent": 0,
                  "staged": len(staged)}
        if staged:
            size = per_tick(len(staged), self.ticks)
            start = self.offset % len(staged)
            chosen = (staged + staged)[start:start + min(size, len(staged))]
            for entry in chosen:
                verdict = await self._replay(entry, now)
                counts[verdict] += 1
                counts["replayed"] += 1
            self.offset = start + len(chosen)
        self.ticks_done += 1
        state = {"version": 1, "ticks_done": self.ticks_done, "offset": self.offset}
        await anyio.to_thread.run_sync(atomic_write, self.path,
                                       (json.dumps(state) + "\n").encode())
        return counts

    async def _replay(self, entry: SemanticEntry, now: float) -> str:
        g = self.grimoire
        near = await g.neighbourhood(entry.id, episodes=K_EPISODES, entries=K_ENTRIES)
        verdict = judge(*evidence(entry, near, g.namespace))
        if verdict == "agreed":
            await g.reinforce(entry.id, useful=True)
        elif verdict == "contradicted" and not is_anti_knowledge(entry):
            await g.update_confidence({entry.id: entry.confidence * WEAKEN}, now=now)
        return verdict


def _imported(e: SemanticEntry) -> bool:
    return e.provenance.process == IMPORT_PROCESS


def _read(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return raw if isinstance(raw, dict) else {}

"""The curator cycle (every 50 Delta ticks): validate, prune, compress, cross-reference.

    curator = CuratorCycle(grimoire, events=bus, every=50, params=CuratorParams())
    if curator.due(ctx.tick):
        report = await curator.run(ctx.tick, ctx.clock.now())

One snapshot of the golem's entries is read in one store call
(Grimoire.curation_snapshot), the plan is made by the pure modules (curator,
curator_compress, curator_playbook) in a worker thread, and the changes are applied
through the Grimoire in chunks so recalls interleave: evidence folded into keepers and
cross-references (Grimoire.revise_entries, over a fresh read), statuses set with their
reasons (status_log), forgetting logged in the forget_log
(Grimoire.set_statuses_if_unchanged). A verdict on an entry that changed since the
snapshot (a recall reinforced it meanwhile) is left for the next cycle rather than
applied to stale evidence. Validated heuristics go into PLAYBOOK.md through
Grimoire.rewrite_playbook (one writer, a numbered snapshot each time).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import anyio
import anyio.to_thread
import structlog

from golem.consolidation import curator_compress as compress
from golem.consolidation import curator_playbook as pb
from golem.consolidation.curator import (
    Action,
    CuratorParams,
    CycleView,
    Decision,
    Quarantine,
    classify_all,
)
from golem.consolidation.curator_signals import Scope, effective_confidence, merged_into
from golem.events import CuratorCycleComplete, EventBus, GrimoireForget
from golem.grimoire.decay import Pick, half_lives_from_config, seeded_pick
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.memory_file import WriterBusy
from golem.grimoire.records import DecayClass, SemanticEntry, Status

log = structlog.get_logger("golem.consolidation.curator")
QUARANTINE_LOG_LIMIT = 100_000
APPLY_CHUNK = 250  # entries per store call while applying (recalls interleave)


@dataclass(frozen=True)
class Snapshot:
    entries: list[SemanticEntry]  # the golem's own namespace, every status
    vectors: dict[str, Any]  # ACTIVE entries only (the duplicate check)
    quarantine: dict[str, Quarantine]


@dataclass(frozen=True)
class CyclePlan:
    merges: list[compress.Merge]
    patches: list[compress.EntryPatch]
    decisions: list[Decision]  # only those that change a status
    proposals: list[pb.Proposal]
    kept: int


@dataclass(frozen=True)
class Change:
    entry_id: str
    status: Status
    reason: str
    decision: Decision | None  # None: a merged-away duplicate


@dataclass(frozen=True)
class Applied:
    decisions: list[Decision]  # verdicts applied
    merged: int  # duplicates archived into their keepers
    deferred: int  # verdicts and merges skipped: the entry changed since the snapshot


@dataclass(frozen=True)
class CuratorReport:
    tick: int
    classified: int
    promoted: int
    kept: int
    archived: int  # by verdict, plus the merged-away duplicates
    pruned: int
    merged: int
    cross_referenced: int  # entries whose related list changed
    heuristics_proposed: int
    playbook_snapshot: int | None
    deferred: int  # verdicts skipped: the entry changed since the snapshot
    duration_s: float
    by_rule: dict[str, int] = field(default_factory=dict)

    def counters(self) -> dict[str, int | float]:
        """For the Delta tick's log line."""
        return {"promoted": self.promoted, "archived": self.archived,
                "pruned": self.pruned, "merged": self.merged,
                "heuristics": self.heuristics_proposed}


def at_random(plan: CyclePlan, snap: Snapshot, namespace: str, pick: Pick) -> CyclePlan:
    """The plan with its archive and prune verdicts replaced by as many drawn by ``pick``:
    archives among this golem's unanchored active entries, prunes among its unanchored
    active and archived ones, none that another verdict or a merge already touches."""
    forgetting = [d for d in plan.decisions if d.action in (Action.ARCHIVE, Action.PRUNE)]
    if not forgetting:
        return plan
    others = [d for d in plan.decisions if d.action not in (Action.ARCHIVE, Action.PRUNE)]
    taken = {d.entry_id for d in others} | {m.absorbed_id for m in plan.merges}
    mine = [e for e in snap.entries if e.namespace == namespace and not e.anchored]
    drawn: list[Decision] = []
    for action, statuses in ((Action.ARCHIVE, (Status.ACTIVE,)),
                             (Action.PRUNE, (Status.ACTIVE, Status.ARCHIVED))):
        count = sum(d.action == action for d in forgetting)
        if not count:
            continue
        pool = [e.id for e in mine if e.status in statuses and e.id not in taken]
        for entry_id in pick(pool, count):
            taken.add(entry_id)
            drawn.append(Decision(entry_id, action, "at-random",
                                  f"drawn at random in place of {count} {action.value} "
                                  "verdict(s) (random forgetting)"))
    return replace(plan, decisions=others + drawn)


def plan_cycle(snap: Snapshot, playbook_text: str, *, now: float, namespace: str,
               params: CuratorParams, half_lives: Mapping[DecayClass, float] | None,
               scope: Scope) -> CyclePlan:
    """Pure: merges and their folds first, then verdicts on what is left, then the
    cross-references and heuristics as the statuses will be after this cycle."""
    by_id = {e.id: e for e in snap.entries}
    merges = compress.find_duplicates(snap.entries, snap.vectors, namespace, params)
    folds = {p.entry_id: p for p in compress.fold(merges, by_id)}
    absorbed = {m.absorbed_id for m in merges}
    after = {i: compress.apply_patch(e, folds[i]) if i in folds else e
             for i, e in by_id.items()}
    for i in absorbed:
        after[i] = replace(after[i], status=Status.ARCHIVED)
    view = CycleView(now=now, namespace=namespace, entries=after,
                     quarantine=snap.quarantine, half_lives=half_lives, scope=scope,
                     merged_into=merged_into(after.values()))
    verdicts = classify_all([e for i, e in after.items() if i not in absorbed], view, params)
    changes = [d for d in verdicts if d.target is not None and d.target != after[d.entry_id].status]
    for d in changes:
        after[d.entry_id] = replace(after[d.entry_id], status=d.target or Status.ACTIVE)
    related = {p.entry_id: p for p in compress.cross_references(after.values(), namespace,
                                                               params)}
    patches = [replace(folds[i], related=related[i].related) if i in folds and i in related
               else folds.get(i) or related[i] for i in sorted({*folds, *related})]
    proposals = pb.select_heuristics(
        after.values(), namespace, pb.proposed_ids(playbook_text),
        lambda e: effective_confidence(e, now, half_lives, params.anti_knowledge_floor), params)
    return CyclePlan(merges, patches, changes, proposals, len(verdicts) - len(changes))


class CuratorCycle:
    """Runs the curator over the Grimoire of one golem (its own namespace only)."""

    def __init__(self, grimoire: Grimoire, events: EventBus | None = None, *,
                 every: int = 50,
                 params: CuratorParams | None = None,
                 half_lives: Mapping[DecayClass, float] | None = None,
                 scope: Scope | None = None, at_random: bool = False,
                 seed: int = 0) -> None:
        """``at_random``: each cycle archives and prunes as many entries as its verdicts
        name, drawn at random among this golem's unanchored active (archive) or active
        and archived (prune) entries, seeded by ``seed`` and the tick (random
        forgetting)."""
        if every < 1:
            raise ValueError(f"curator every: must be >= 1 tick, got {every}")
        self.grimoire = grimoire
        self.events = events
        self.every = every
        self.params = params or CuratorParams(
            anti_knowledge_floor=grimoire.cfg.anti_knowledge_floor,
            quarantine_confidence=grimoire.cfg.quarantine_confidence)
        self.half_lives = half_lives or half_lives_from_config(grimoire.cfg)
        self.scope = scope or Scope()
        self.namespace = grimoire.namespace
        self.at_random = at_random
        self.seed = seed

    def due(self, tick: int) -> bool:
        """Every ``every`` Delta ticks (ticks count from 1: 50, 100, ...)."""
        return tick > 0 and tick % self.every == 0

    async def run(self, tick: int, now: float) -> CuratorReport:
        started = time.perf_counter()
        snap = await self.read()
        plan = await self.plan(snap, now)
        if self.at_random:
            plan = at_random(plan, snap, self.namespace, seeded_pick(f"curator-{self.seed}-{tick}"))
        done = await self.apply(snap, plan, tick, now)
        number = await self._propose(plan.proposals, tick, now)
        counts = Counter(d.action for d in done.decisions)
        report = CuratorReport(
            tick=tick, classified=plan.kept + len(plan.decisions), kept=plan.kept,
            promoted=counts[Action.PROMOTE], archived=counts[Action.ARCHIVE] + done.merged,
            pruned=counts[Action.PRUNE], merged=done.merged,
            cross_referenced=sum(p.related is not None for p in plan.patches),
            heuristics_proposed=len(plan.proposals) if number is not None else 0,
            playbook_snapshot=number, deferred=done.deferred,
            duration_s=time.perf_counter() - started,
            by_rule=dict(Counter(d.rule for d in done.decisions)))
        self._emit_forgets(done.decisions)
        self._emit(CuratorCycleComplete(
            tick=tick, entries_pruned=report.pruned, entries_promoted=report.promoted,
            entries_archived=report.archived, heuristics_proposed=report.heuristics_proposed))
        log.info("curator cycle", tick=tick, promoted=report.promoted, kept=report.kept,
                 archived=report.archived, pruned=report.pruned, merged=report.merged,
                 cross_referenced=report.cross_referenced, deferred=report.deferred,
                 heuristics_proposed=report.heuristics_proposed, playbook_snapshot=number,
                 duration_s=round(report.duration_s, 3))
        return report

    # --- the steps of run, public so a test can interleave a concurrent write ---------

    async def read(self) -> Snapshot:
        snap = await self.grimoire.curation_snapshot(QUARANTINE_LOG_LIMIT)
        quarantine: dict[str, Quarantine] = {}
        for q in snap.quarantine:
            quarantine.setdefault(q.entry_id, Quarantine(q.against, q.at))  # newest first
        return Snapshot(snap.entries, dict(snap.vectors), quarantine)

    async def plan(self, snap: Snapshot, now: float) -> CyclePlan:
        text = await self.grimoire.playbook_text()
        return await anyio.to_thread.run_sync(partial(
            plan_cycle, snap, text, now=now, namespace=self.namespace, params=self.params,
            half_lives=self.half_lives, scope=self.scope))

    async def apply(self, snap: Snapshot, plan: CyclePlan, tick: int, now: float) -> Applied:
        """Apply the plan's store changes (not the playbook's), in chunks of APPLY_CHUNK
        store calls so recalls interleave. A status change is made only if the entry is
        exactly as planned (the snapshot plus this cycle's own patch)."""
        before = {e.id: e for e in snap.entries}
        expected = dict(before)
        for p in plan.patches:
            if p.entry_id in before:
                expected[p.entry_id] = compress.apply_patch(before[p.entry_id], p)
        for lo in range(0, len(plan.patches), APPLY_CHUNK):
            await self._patch(plan.patches[lo:lo + APPLY_CHUNK])
        changes = [Change(m.absorbed_id, Status.ARCHIVED, f"curator cycle {tick}: {m.reason}",
                          None) for m in plan.merges]
        changes += [Change(d.entry_id, d.target or Status.ACTIVE, f"curator: {d.reason}", d)
                    for d in plan.decisions]
        done: list[Change] = []
        for lo in range(0, len(changes), APPLY_CHUNK):
            done += await self.grimoire.set_statuses_if_unchanged(
                changes[lo:lo + APPLY_CHUNK], expected, now=now)  # PRUNED: forgotten
        decisions = [c.decision for c in done if c.decision is not None]
        return Applied(decisions, len(done) - len(decisions), len(changes) - len(done))

    async def _patch(self, patches: Sequence[compress.EntryPatch]) -> None:
        """Fold each patch into a fresh read (never over a concurrent reinforcement)."""
        by_id = {p.entry_id: p for p in patches}
        await self.grimoire.revise_entries(
            list(by_id), lambda old: compress.apply_patch(old, by_id[old.id]))

    async def _propose(self, proposals: Sequence[pb.Proposal], tick: int,
                       now: float) -> int | None:
        """Append the proposals to PLAYBOOK.md; None when there was nothing to write or
        another writer held the playbook (they are proposed again next cycle)."""
        if not proposals:
            return None
        text = await self.grimoire.playbook_text()
        new = pb.with_proposals(text, proposals)
        if new == text:
            return None
        try:
            return await self.grimoire.rewrite_playbook(
                new, f"curator cycle {tick}: {len(proposals)} heuristics proposed", now=now)
        except WriterBusy as exc:
            log.warning("playbook busy; heuristics wait for the next cycle", error=str(exc))
            return None

    def _emit_forgets(self, applied: Sequence[Decision]) -> None:
        by_rule: dict[str, list[str]] = defaultdict(list)
        for d in applied:
            if d.action == Action.PRUNE:
                by_rule[d.rule].append(d.entry_id)
        for rule, ids in by_rule.items():
            self._emit(GrimoireForget(ids, self.namespace,
                                      f"curator: {rule} (reasons in the forget log)"))

    def _emit(self, event: CuratorCycleComplete | GrimoireForget) -> None:
        if self.events is not None:
            self.events.emit(event)

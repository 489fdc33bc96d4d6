"""Loop 3's adapter: read the decision journal, re-assemble the worst ticks, keep mutations.

Mutations live in their own SQLite file (state_dir/loop3.db): MutationStore writes it,
other rooms read it only through read_mutation_rows. Theta owns the decision journal; it
is read through cognition's read-only JournalReader. A trial is a new ContextPolicy
revision saved through the PolicyStore, so Theta picks it up on its next tick and its
outcomes carry that revision; validation compares them with the ticks scored before it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import anyio.to_thread

from golem.cognition.journal import JournalReader, Outcome
from golem.errors import StateError
from golem.events import EventBus, PolicyMutationChanged
from golem.governor.assembly import AssemblySettings, assemble
from golem.governor.categories import Category, MarketRegime, Phase
from golem.governor.governor import (
    MAX_ANTI_KNOWLEDGE,
    RECALL_K,
    LiveItem,
    hit_candidate,
    live_candidate,
)
from golem.governor.policy import ContextPolicy
from golem.governor.policy_store import PolicyStore
from golem.governor.workspace import Candidate, CognitiveWorkspace
from golem.grimoire.grimoire import Grimoire
from golem.runtime.state import connect_durable, durable_write, read_only_rows

from . import loop3 as l3

MUTATIONS_DB = "loop3.db"
STATE_DIR = "consolidation"  # Delta's state dir under the data dir (delta.open_delta)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS mutations (
    id TEXT PRIMARY KEY, status TEXT NOT NULL, created_tick INTEGER NOT NULL, body TEXT NOT NULL
);
"""
Evaluator = Callable[[l3.Counterfactual, Mapping[Category, float]], Awaitable[l3.Evaluation]]


class MutationStore:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / MUTATIONS_DB
        self._conn = connect_durable(self.path, "the Loop 3 mutation store", _SCHEMA)

    def close(self) -> None:
        self._conn.close()

    def save(self, m: l3.ContextPolicyMutation) -> None:
        body = json.dumps({**asdict(m), "status": m.status.value}, sort_keys=True)
        with durable_write(self._conn, self.path) as conn:
            conn.execute("INSERT OR REPLACE INTO mutations VALUES (?, ?, ?, ?)",
                         (m.id, m.status.value, m.created_tick, body))

    def all(self, status: l3.MutationStatus | None = None) -> list[l3.ContextPolicyMutation]:
        try:
            rows = self._conn.execute(
                "SELECT body FROM mutations WHERE ? IS NULL OR status = ? "
                "ORDER BY created_tick, id",
                (status and status.value, status and status.value)).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: read failed: {exc}") from None
        return [_mutation(json.loads(r[0])) for r in rows]


def read_mutation_rows(data_dir: Path) -> list[tuple[str, str]]:
    """(status, JSON body) of every mutation stored for the golem of ``data_dir``, oldest
    first, for readers in other rooms (the death reflection): the file is opened read-only
    for the one query, so a running golem is not disturbed. [] before Loop 3 has stored
    any; StateError when the file cannot be read."""
    rows = read_only_rows(data_dir / STATE_DIR / MUTATIONS_DB, "Loop 3 mutations",
                          "SELECT status, body FROM mutations ORDER BY created_tick")
    return [(str(status), str(body)) for status, body in rows or []]


def _tick_outcome(o: Outcome) -> l3.TickOutcome:
    """A scored journal outcome as Loop 3 reads it."""
    return l3.TickOutcome(o.tick, float(o.quality or 0.0), o.regime, o.policy_revision,
                          o.injected, o.referenced, o.missing)


def _mutation(d: dict[str, Any]) -> l3.ContextPolicyMutation:
    return l3.ContextPolicyMutation(**{**d, "status": l3.MutationStatus(d["status"]),
                                       "source_ticks": tuple(d["source_ticks"])})


class MutationLab:
    """Runs Loop 3 in the dream cycle: review the trial, stage, start the next trial."""

    def __init__(self, grimoire: Grimoire, policies: PolicyStore, *, journal_path: Path,
                 state_dir: Path, total_budget: int, settings: l3.Loop3Settings | None = None,
                 events: EventBus | None = None, evaluator: Evaluator | None = None) -> None:
        self.grimoire = grimoire
        self.policies = policies
        self.journal = JournalReader(journal_path)
        self.store = MutationStore(state_dir)
        self.total_budget = total_budget
        self.s = settings or l3.Loop3Settings()
        self._events = events
        self._evaluate = evaluator or self._offline

    def close(self) -> None:
        self.store.close()

    async def run(self, tick: int, now: float) -> l3.Loop3Report:
        validated, refuted = await self.review(tick, now)
        outcomes = [_tick_outcome(o) for o in await anyio.to_thread.run_sync(
            self.journal.scored_outcomes, self.s.recent)]
        mutations = await anyio.to_thread.run_sync(self.store.all, None)
        used = {t for m in mutations for t in m.source_ticks}
        worst = l3.worst_ticks([o for o in outcomes if o.tick not in used], self.s.worst,
                               self.s.poor_below)
        lifts = l3.category_lifts(outcomes, [o.tick for o in worst], self.s.lift_min_samples)
        policy = await anyio.to_thread.run_sync(self.policies.latest)
        scored = await self.counterfactuals(worst, lifts, policy)
        known = {m.id for m in mutations}
        pending = sum(m.status is l3.MutationStatus.STAGED for m in mutations)
        staged = 0
        for m in l3.propose(scored, tick, self.s.min_gain, self.s.max_new):
            if m.id in known or pending + staged >= self.s.max_staged:
                continue
            await anyio.to_thread.run_sync(self.store.save, m)
            self._emit(m, m.rationale)
            staged += 1
        trialled = await self.start_trial(tick, now)
        return l3.Loop3Report(len(scored), staged, trialled, validated, refuted)

    async def counterfactuals(self, worst: Sequence[l3.TickOutcome],
                              lifts: Mapping[Category, float], policy: ContextPolicy,
                              ) -> list[tuple[l3.Counterfactual, l3.Evaluation]]:
        out = []
        settings = AssemblySettings.from_retrieval(policy.retrieval)
        for o in worst:
            inputs = _inputs(await anyio.to_thread.run_sync(self.journal.decision, o.tick))
            if inputs is None:
                continue  # recorded before Theta kept its inputs: cannot re-assemble
            query, escalated, phase, regime, live = inputs
            candidates = await self._candidates(query, escalated, policy, live)
            original = assemble(candidates, policy.effective(phase=phase, regime=regime),
                                self.total_budget, settings)
            for alt in l3.alternatives(policy.allocations, o.missing, lifts,
                                       boost=self.s.boost, trade=self.s.trade):
                shares, delta = l3.shifted(policy.allocations, alt.steps, self.s.cap)
                changed = replace(policy, allocations=shares)
                ws = assemble(candidates, changed.effective(phase=phase, regime=regime),
                              self.total_budget, settings)
                before, after = _ids(original), _ids(ws)
                cf = l3.Counterfactual(
                    o.tick, o.quality, o.missing, alt, delta, _use(original), _use(ws),
                    tuple(sorted(after - before)), tuple(sorted(before - after)),
                    self.total_budget)
                out.append((cf, await self._evaluate(cf, lifts)))
        return out

    async def review(self, tick: int, now: float) -> tuple[int, int]:
        """Judge the mutation on trial; (validated, refuted) counts."""
        trials = await anyio.to_thread.run_sync(self.store.all, l3.MutationStatus.TRIAL)
        if not trials:
            return 0, 0
        m = trials[0]
        revision = m.trial_revision or 0
        baseline = await anyio.to_thread.run_sync(lambda: self.journal.qualities(
            before_revision=revision, limit=self.s.rule.baseline_window))
        trial = await anyio.to_thread.run_sync(lambda: self.journal.qualities(
            from_revision=revision, limit=self.s.rule.max_trial_ticks))
        verdict, detail = l3.judge(baseline, trial, self.s.rule)
        if verdict is l3.MutationStatus.VALIDATED:
            conf = min(0.95, m.confidence + self.s.rule.validated_confidence_gain)
            await self._settle(replace(m, status=verdict, confidence=round(conf, 4),
                                       detail=detail))
            return 1, 0
        if verdict is l3.MutationStatus.REFUTED:
            undo = {k: -v for k, v in m.applied.items()}
            reverted = await self._save_revision(undo, now)
            await self._settle(replace(m, status=verdict, confidence=0.0, detail=detail,
                                       reverted_revision=reverted))
            return 0, 1
        return 0, 0

    async def start_trial(self, tick: int, now: float) -> int:
        """At most one mutation on trial: the best staged one goes on trial now."""
        mutations = await anyio.to_thread.run_sync(self.store.all, None)
        if any(m.status is l3.MutationStatus.TRIAL for m in mutations):
            return 0
        staged = sorted((m for m in mutations if m.status is l3.MutationStatus.STAGED),
                        key=lambda m: (-m.gain, m.created_tick, m.id))
        if not staged:
            return 0
        m = staged[0]
        latest = await anyio.to_thread.run_sync(self.policies.latest)
        new, applied = l3.applied_policy(latest, m.delta, self.s.cap, latest.revision + 1)
        await anyio.to_thread.run_sync(lambda: self.policies.save(
            new, self.policies.betas(), now))
        await self._settle(replace(m, status=l3.MutationStatus.TRIAL, applied=applied,
                                   trial_revision=new.revision, trial_tick=tick,
                                   detail=f"on trial as policy revision {new.revision}"))
        return 1

    async def _save_revision(self, delta: Mapping[str, float], now: float) -> int:
        latest = await anyio.to_thread.run_sync(self.policies.latest)
        new, _ = l3.applied_policy(latest, delta, self.s.cap, latest.revision + 1)
        await anyio.to_thread.run_sync(lambda: self.policies.save(
            new, self.policies.betas(), now))
        return new.revision

    async def _settle(self, m: l3.ContextPolicyMutation) -> None:
        await anyio.to_thread.run_sync(self.store.save, m)
        self._emit(m, m.detail)

    async def _candidates(self, query: str, escalated: set[str], policy: ContextPolicy,
                          live: Sequence[LiveItem]) -> list[Candidate]:
        """What the Governor would gather for this tick's query today (one recall; as in
        ContextGovernor.assemble, vitality 1; escalated episodes only if recalled)."""
        result = await self.grimoire.recall(
            query, k=min(RECALL_K, 10 * policy.retrieval.max_episode_count))
        hits = [] if result.refused else list(result.hits)
        if not result.refused:
            seen = {h.id for h in hits}
            hits += sorted((h for h in result.anti_knowledge if h.id not in seen),
                           key=lambda h: -h.similarity)[:MAX_ANTI_KNOWLEDGE]
        out = [hit_candidate(h, 1.0, h.id in escalated) for h in hits
               if h.similarity >= policy.retrieval.similarity_threshold
               or h.id in escalated or h.is_anti_knowledge]
        return out + [live_candidate(item, 1.0) for item in live]

    async def _offline(self, cf: l3.Counterfactual,
                       lifts: Mapping[Category, float]) -> l3.Evaluation:
        return l3.offline_evaluation(cf, lifts, self.s.missing_weight)

    def _emit(self, m: l3.ContextPolicyMutation, detail: str) -> None:
        if self._events is not None:
            self._events.emit(PolicyMutationChanged(
                m.id, m.status.value, dict(m.delta), m.confidence, detail[:500]))


Inputs = tuple[str, set[str], Phase, MarketRegime, list[LiveItem]]


def _inputs(record: Mapping[str, Any] | None) -> Inputs | None:
    """(query, escalated ids, phase, regime, live items) of a recorded tick, if it kept them."""
    if not record or not record.get("query"):
        return None
    try:
        live = [LiveItem(str(i["key"]), Category(i["category"]), str(i["text"]),
                         float(i.get("importance", 0.8)), bool(i.get("untrusted")))
                for i in record.get("live") or ()]
        return (str(record["query"]), set(record.get("escalated") or ()),
                Phase(record.get("phase", "stable")), MarketRegime(record["regime"]), live)
    except (KeyError, TypeError, ValueError):
        return None


def _ids(ws: CognitiveWorkspace) -> set[str]:
    return {p.candidate.id for b in ws.blocks if not b.echo for p in b.items}


def _use(ws: CognitiveWorkspace) -> dict[Category, l3.CategoryUse]:
    return {c: l3.CategoryUse(r.included, r.used) for c, r in ws.reasons.items()}

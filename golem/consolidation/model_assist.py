"""Model-assisted consolidation: a cheap-tier pass after the statistics.

    assist = ModelAssist(grimoire, model, settings=AssistSettings())
    engine = ConsolidationEngine(grimoire, state_dir, assist=assist)  # called inside run()

Two passes, each bounded (clusters, entries, operations, spend per run) and each on
its own interval, since every call is billed to the same ledger Theta spends from:

(a) insights: the biggest replay clusters, a few representative episode texts each
    fenced as untrusted chain data (as prompt.py fences on-chain text), summarised into
    insights and heuristics. They enter the Grimoire STAGED with provenance process
    "model-consolidation", confidence <= ``max_confidence``: the curator's candidate
    gate decides whether they become ACTIVE. A reply that is not the JSON asked for is
    logged and counted; nothing of it is written.
(b) maintenance (seed 003: deduplicate, update, re-rank, prune) over a bounded batch of
    recent ACTIVE entries; see model_ops for what is refused. Merged entries are
    archived (as the curator does), pruned ones forgotten with the model's reason.

Without a model none of this is built. A failure here never fails the engine's run: it
is logged and reported, and the statistical results stand. A pass that got a reply
(even a rejected one) waits its interval; one refused by the API or the spend bound is
tried again next run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import anyio.to_thread
import structlog

from golem.cognition.errors import CognitionError
from golem.cognition.tiers import Tier
from golem.consolidation import curator_compress as compress
from golem.consolidation import model_ops as mo
from golem.consolidation.clusters import Cluster
from golem.errors import GolemError
from golem.grimoire.records import (
    DecayClass,
    Episode,
    MemoryType,
    Provenance,
    SemanticEntry,
    Status,
)

if TYPE_CHECKING:
    from golem.cognition.model import ModelCognition
    from golem.grimoire.grimoire import Grimoire

log = structlog.get_logger("golem.consolidation.model")

PROCESS = "model-consolidation"
PURPOSE = "consolidation"


RESIGHT_SIMILARITY = 0.9  # cosine at which a restated insight is the same insight


@dataclass(frozen=True)
class AssistSettings:
    """Bounds per run (documented defaults; see the report for [consolidation] keys)."""

    max_clusters: int = 4  # clusters summarised per run, biggest first
    min_cluster_size: int = 3  # smaller clusters are not worth a summary
    examples: int = 4  # representative episode texts per cluster
    max_insights: int = 6
    max_confidence: float = 0.5  # staged insights start at most this confident
    max_entries: int = 30  # recent ACTIVE entries shown to the maintenance pass
    max_ops: int = 10
    max_text_chars: int = 400
    max_importance_step: float = 0.3  # a re-rank moves importance at most this far
    max_run_usd: float = 0.05  # worst-case spend per run, both passes together
    min_budget_left_usd: float = 0.5  # leave this much of the caps to Theta
    insights_every_s: float = 3600.0
    maintain_every_s: float = 86_400.0  # seed 003: daily
    max_tokens: int = 1024


@dataclass
class AssistReport:
    calls: int = 0
    cost_usd: float = 0.0
    insights_staged: int = 0
    insights_resighted: int = 0  # restated: the earlier entry was reinforced instead
    ops_applied: int = 0
    ops_refused: int = 0
    malformed: int = 0
    skipped: list[str] = field(default_factory=list)

    def counters(self) -> dict[str, int | float]:
        return {"model_calls": self.calls, "model_usd": round(self.cost_usd, 6),
                "model_insights": self.insights_staged,
                "model_resighted": self.insights_resighted, "model_ops": self.ops_applied,
                "model_refused": self.ops_refused, "model_malformed": self.malformed}


def insight_id(namespace: str, text: str) -> str:
    """Content-derived: the same summary twice is one entry."""
    return "mc-" + hashlib.sha256(f"{namespace}\n{text.lower()}".encode()).hexdigest()[:32]


class ModelAssist:
    """The engine's ``assist`` hook; ``last`` holds the latest run's report."""

    def __init__(self, grimoire: Grimoire, model: ModelCognition, *,
                 settings: AssistSettings | None = None,
                 load: Callable[[str], int | None] = lambda _name: None,
                 save: Callable[[str, int], None] = lambda _name, _value: None) -> None:
        self.grimoire, self.model = grimoire, model
        self.s = settings or AssistSettings()
        self._load, self._save = load, save  # durable "last run" times (Delta's cursors)
        self.last = AssistReport()

    async def __call__(self, tick: int, now: float, groups: Sequence[Cluster],
                       episodes: Mapping[str, Episode]) -> bool:
        """Run what is due; True when the model was consulted."""
        report = self.last = AssistReport()
        due = [name for name, every in (("insights", self.s.insights_every_s),
                                        ("maintenance", self.s.maintain_every_s))
               if await self._due(f"model_{name}", every, now)]
        for name in due:
            try:
                ran = await (self._insights(now, groups, episodes, report)
                             if name == "insights" else self._maintain(now, report))
                if ran:
                    await anyio.to_thread.run_sync(self._save, f"model_{name}", int(now))
            except Exception as exc:  # the statistics stand without the model
                report.skipped.append(f"{name}: {type(exc).__name__}: {exc}"[:300])
                log.warning("model consolidation pass failed", model_pass=name,
                            error=type(exc).__name__, message=str(exc)[:300],
                            exc_info=not isinstance(exc, GolemError | OSError))
        if report.calls:
            log.info("model consolidation", tick=tick, **report.counters())
        return report.calls > 0

    async def _due(self, name: str, every: float, now: float) -> bool:
        last = await anyio.to_thread.run_sync(self._load, name)
        return last is None or now - last >= every

    async def _ask(self, user: str, report: AssistReport, what: str) -> str | None:
        """One T1 call within the run's spend bound and the budget left for Theta."""
        worst = self.model.worst_write_usd(Tier.T1, system=mo.SYSTEM, user=user,
                                           max_tokens=self.s.max_tokens)
        left = await anyio.to_thread.run_sync(self.model.budget_left_usd)
        if report.cost_usd + worst > self.s.max_run_usd or left - worst < \
                self.s.min_budget_left_usd:
            report.skipped.append(f"{what}: over the spend bound (worst ${worst:.4f}, "
                                  f"run ${report.cost_usd:.4f}, left ${left:.4f})")
            log.info("model consolidation skipped: spend bound", model_pass=what,
                     worst_usd=worst, budget_left_usd=left)
            return None
        try:
            written = await self.model.write(Tier.T1, system=mo.SYSTEM, user=user,
                                             purpose=PURPOSE, max_tokens=self.s.max_tokens)
        except CognitionError as exc:
            report.skipped.append(f"{what}: {type(exc).__name__}: {exc}"[:300])
            log.warning("model consolidation call failed", model_pass=what,
                        error=type(exc).__name__, message=str(exc)[:300])
            return None
        report.calls += 1
        report.cost_usd += written.cost_usd
        if written.truncated:
            self._malformed(report, what, "the reply hit max_tokens", written.text)
            return None
        return written.text

    def _malformed(self, report: AssistReport, what: str, why: str, text: str) -> None:
        report.malformed += 1
        log.warning("model consolidation reply rejected; nothing written", model_pass=what,
                    problem=why[:300], reply=text[:300])

    # --- (a) cluster insights ---------------------------------------------------------------

    async def _insights(self, now: float, groups: Sequence[Cluster],
                        episodes: Mapping[str, Episode], report: AssistReport) -> bool:
        chosen = sorted((g for g in groups if len(g.ids) >= self.s.min_cluster_size),
                        key=lambda g: (-len(g.ids), g.protocol, g.pool, g.ids[0]))
        chosen = chosen[:self.s.max_clusters]
        if not chosen:
            return False
        shown = [mo.examples(g, episodes, self.s.examples) for g in chosen]
        before = report.calls
        text = await self._ask(mo.insight_prompt(chosen, shown, max_items=self.s.max_insights,
                                                 max_chars=self.s.max_text_chars),
                               report, "insights")
        if text is None:
            return report.calls > before  # a paid reply that was cut off counts as run
        try:
            found = mo.parse_insights(text, len(chosen), max_items=self.s.max_insights,
                                      max_chars=self.s.max_text_chars,
                                      max_confidence=self.s.max_confidence)
        except mo.Malformed as exc:
            self._malformed(report, "insights", str(exc), text)
            return True
        g, ns = self.grimoire, self.grimoire.namespace
        fresh = {insight_id(ns, f.text): f for f in found}
        known = {e.id for e in await g.entries_by_ids(list(fresh))}
        fresh, again = await self._resighted(fresh, known, chosen, now)
        entries = [SemanticEntry(
            id=i, namespace=ns, text=f.text, entry_type=f.kind, memory_type=MemoryType.FACT,
            created_at=now, confidence=f.confidence, importance=0.4, category=f.category,
            fact={"model": self.model.cfg.model_t1, "cluster": mo.label(chosen[f.cluster - 1])},
            episode_count=len(chosen[f.cluster - 1].ids),
            source_episodes=tuple(e.id for e in shown[f.cluster - 1]),
            status=Status.STAGED, decay_class=DecayClass.TACTICAL,
            provenance=Provenance(author=ns, process=PROCESS))
            for i, f in fresh.items() if i not in known]
        stored = await g.write_entries(entries, checked=True)
        await g.write_entries(again, checked=False)
        report.insights_staged += sum(e.status is Status.STAGED for e in stored)
        report.insights_resighted += len(again)
        return True

    async def _resighted(self, fresh: dict[str, mo.ProposedInsight], known: set[str],
                         chosen: Sequence[Cluster], now: float,
                         ) -> tuple[dict[str, mo.ProposedInsight], list[SemanticEntry]]:
        """An insight the model states again (a near-identical earlier one, staged or
        active) reinforces that entry instead of staging a copy: a later, independent
        sighting is the support the curator's gate waits for."""
        g = self.grimoire
        todo = {i: f for i, f in fresh.items() if i not in known}
        if not todo:
            return {}, []
        vectors = await g.embedder.aembed([f.text for f in todo.values()])
        keep: dict[str, mo.ProposedInsight] = {}
        again: dict[str, SemanticEntry] = {}
        for (i, f), vec in zip(todo.items(), vectors, strict=True):
            hits = await g.search_entries(vec, 5, statuses=(Status.STAGED, Status.ACTIVE))
            same = next((e for e, sim in hits if sim >= RESIGHT_SIMILARITY
                         and e.provenance.process == PROCESS and e.id not in again
                         and e.created_at < now), None)
            if same is None:
                keep[i] = f
                continue
            n = len(chosen[f.cluster - 1].ids)
            again[same.id] = replace(
                same, episode_count=same.episode_count + n, last_reinforced=now,
                confidence=min(self.s.max_confidence, same.confidence + 0.05))
        return keep, list(again.values())

    # --- (b) deduplicate / update / re-rank / prune -----------------------------------------

    async def _maintain(self, now: float, report: AssistReport) -> bool:
        batch = await self._batch()
        if len(batch) < 2:
            return False
        prompt = mo.maintenance_prompt(batch, now, max_items=self.s.max_ops,
                                       max_chars=self.s.max_text_chars)
        before = report.calls
        text = await self._ask(prompt, report, "maintenance")
        if text is None:
            return report.calls > before
        try:
            raws = mo.parse_ops(text, max_items=self.s.max_ops)
        except mo.Malformed as exc:
            self._malformed(report, "maintenance", str(exc), text)
            return True
        ops, refused = mo.check_ops(raws, {e.id: e for e in batch},
                                    max_chars=self.s.max_text_chars,
                                    max_importance_step=self.s.max_importance_step)
        report.ops_refused += len(refused)
        for why in refused:
            log.warning("model consolidation op refused", reason=why[:300])
        for op in ops:
            await self._apply(op, now)
            report.ops_applied += 1
            log.info("model consolidation op applied", op=op.op, id=op.target,
                     absorbed=list(op.absorbed), reason=op.reason)
        return True

    async def _batch(self) -> list[SemanticEntry]:
        """Recent ACTIVE entries the model may tend: not the engine's keyed statistics (the
        engine owns and re-derives them) and not working-memory crystals (MEMORY.md points
        at them by id). Anchored ones are shown, marked untouchable."""
        mine = await self.grimoire.entries(
            statuses=(Status.ACTIVE,),
            where=lambda e: ("key" not in e.fact and not e.id.startswith("scratch-")
                             and e.provenance.process != "working-memory"))
        mine.sort(key=lambda e: (-(e.last_reinforced or e.created_at), e.id))
        return mine[:self.s.max_entries]

    async def _apply(self, op: mo.Op, now: float) -> None:
        g = self.grimoire
        if op.op == "prune":
            await g.forget(op.target, f"{PROCESS}: {op.reason}")
            return
        ids = [op.target, *op.absorbed]
        fresh = {e.id: e for e in await g.entries_by_ids(ids)}
        keeper = fresh[op.target]
        if op.op == "merge":
            merges = [compress.Merge(op.target, i, op.reason) for i in op.absorbed]
            [patch] = compress.fold(merges, fresh)
            keeper = compress.apply_patch(keeper, patch)
            absorbed = [fresh[i] for i in op.absorbed]
            keeper = replace(keeper, confidence=max(e.confidence for e in [keeper, *absorbed]),
                             importance=max(e.importance for e in [keeper, *absorbed]))
        if op.importance is not None:
            keeper = replace(keeper, importance=op.importance)
        if op.absorbed:  # archived first, so the keeper's new text is not checked against them
            reason = f"{PROCESS}: merged into {op.target}: {op.reason}"
            await g.set_status(list(op.absorbed), Status.ARCHIVED, reason, now=now)
        if op.text is not None and op.text != keeper.text:
            # new text, new vector: written as a new claim (quarantined if it contradicts)
            keeper = replace(keeper, text=op.text, last_reinforced=now)
            [stored] = await g.write_entries([keeper], checked=True)
            if stored.status is Status.QUARANTINED:
                log.warning("model consolidation text quarantined", id=stored.id, op=op.op)
        else:
            await g.write_entries([keeper], checked=False)

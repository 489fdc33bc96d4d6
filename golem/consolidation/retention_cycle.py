"""Episode retention as a Delta stage: read what protects episodes, plan, forget in batches.

    retention = EpisodeRetention(grimoire, cursor=engine.cursor,
                                 journal=JournalReader(journal_path),
                                 params=RetentionParams(), every=6)
    if retention.due(ctx.tick):
        report = await retention.run(ctx.tick, now)  # report.counters() for the tick log

Run it after consolidation (the cursor has moved, replay counts are in). The episode
snapshot is read in one store call (Grimoire.retention_snapshot): only episodes past
the shortest horizon, unless the store is over its cap (then all of them, up to
``scan_limit``), with live facts' ``source_episodes``; decisions' episode
citations from Theta's journal, read incrementally (a cursor in memory; a restart
re-reads the salient horizon once). The plan (retention.py) is made in a worker
thread and applied through Grimoire.forget_episodes in batches of ``batch`` ids, one
logged forgetting and one GrimoireForget event per batch.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace

import anyio.to_thread
import structlog

from golem.cognition.journal import JournalReader
from golem.consolidation import retention as rt
from golem.grimoire.decay import seeded_pick
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import Status

log = structlog.get_logger("golem.consolidation.retention")

SCHEME = "grimoire://"
LIVE = (Status.ACTIVE, Status.STAGED)  # facts whose evidence is kept
JOURNAL_PAGE = 1000


def episode_ids(uris: Iterable[object], namespace: str) -> list[str]:
    """Episode ids from grimoire://<namespace>/episode/<id> sources of this namespace."""
    out: list[str] = []
    for uri in uris:
        if not isinstance(uri, str) or not uri.startswith(SCHEME):
            continue
        parts = uri[len(SCHEME):].split("/")
        if len(parts) == 3 and parts[0] == namespace and parts[1] == "episode" and parts[2]:
            out.append(parts[2])
    return out


@dataclass(frozen=True)
class RetentionReport:
    tick: int
    scanned: int  # episodes read for the plan
    forgotten: int  # deleted
    expired: int
    evicted: int
    surplus: int  # of the evicted, protected ones past their share of the cap
    deferred: int
    protected: int
    unconsolidated: int
    episodes: int  # in the store before the run (this namespace)
    duration_s: float

    def counters(self) -> dict[str, int | float]:
        return {k: v for k, v in asdict(self).items() if k != "tick"}


class EpisodeRetention:
    """Forgets consolidated, unprotected episodes past the horizon or over the cap."""

    def __init__(self, grimoire: Grimoire, *, cursor: Callable[[], float | None],
                 journal: JournalReader | None = None,
                 params: rt.RetentionParams | None = None, every: int = 1,
                 batch: int = 500, scan_limit: int = 250_000,
                 timer: Callable[[], float] = time.perf_counter, at_random: bool = False,
                 seed: int = 0) -> None:
        """``at_random``: each run forgets as many episodes as its plan names, drawn at
        random among the episodes it scanned, seeded by ``seed`` and the tick (random
        forgetting)."""
        if every < 1 or batch < 1 or scan_limit < 1:
            raise ValueError("every, batch and scan_limit must be >= 1")
        self.grimoire = grimoire
        self.params = params or rt.RetentionParams()
        self.every = every
        self.batch = batch
        self.scan_limit = scan_limit
        self._cursor = cursor
        self._journal = journal
        self._timer = timer
        self.at_random = at_random
        self.seed = seed
        self._cited: dict[str, float] = {}  # episode id -> newest citing decision's time
        self._journal_tick = -1

    def due(self, tick: int) -> bool:
        return tick % self.every == 0

    async def run(self, tick: int, now: float) -> RetentionReport:
        started = self._timer()
        cursor = await anyio.to_thread.run_sync(self._cursor)
        cited = await anyio.to_thread.run_sync(self._read_citations, now)
        snap = await self.grimoire.retention_snapshot(
            until=lambda total: self._until(total, now), limit=self.scan_limit,
            fact_statuses=LIVE)
        total, keep = snap.total, rt.Keep(cursor=cursor, cited=cited,
                                          fact_sources=snap.fact_sources)
        seen = snap.episodes
        plan = await anyio.to_thread.run_sync(
            lambda: rt.plan(seen, now, self.params, keep, total=total))
        if self.at_random and plan.forget:
            pick = seeded_pick(f"retention-{self.seed}-{tick}")
            reason = f"at random in place of {len(plan.forget)} (random forgetting)"
            plan = replace(plan, forget=[rt.Forget(i, reason) for i in
                                         pick([e.id for e in seen], len(plan.forget))])
        forgotten = 0
        for reason, ids in rt.by_reason(plan.forget).items():
            for start in range(0, len(ids), self.batch):
                gone = await self.grimoire.forget_episodes(ids[start:start + self.batch],
                                                           f"episode retention: {reason}")
                forgotten += len(gone)
        report = RetentionReport(
            tick=tick, scanned=len(seen), forgotten=forgotten, expired=plan.expired,
            evicted=plan.evicted, surplus=plan.surplus, deferred=plan.deferred,
            protected=plan.protected,
            unconsolidated=plan.unconsolidated, episodes=total,
            duration_s=round(self._timer() - started, 3))
        log.info("episode retention", **asdict(report))
        return report

    def _until(self, total: int, now: float) -> float:
        """The newest observed_at the plan reads: past the shortest horizon only, unless
        the store is over its cap (then every episode)."""
        return now if total > self.params.max_episodes else now - self.params.min_horizon_s

    def _read_citations(self, now: float) -> frozenset[str]:
        """Episodes cited by decisions within the salient horizon (new decisions only)."""
        horizon = now - self.params.salient_horizon_s
        if self._journal is not None:
            while True:
                rows = self._journal.citations_after(self._journal_tick, not_before=horizon,
                                                     limit=JOURNAL_PAGE)
                for tick, at, citations in rows:
                    self._journal_tick = tick
                    for episode in self._cited_in(citations):
                        self._cited[episode] = max(at, self._cited.get(episode, at))
                if len(rows) < JOURNAL_PAGE:
                    break
        self._cited = {i: at for i, at in self._cited.items() if at >= horizon}
        return frozenset(self._cited)

    def _cited_in(self, citations: str | None) -> list[str]:
        """This namespace's episode ids among a decision's citations (JournalReader.
        citations_after: ``[decision.referenced, cited]``); lists only, the rest ignored."""
        try:
            lists = json.loads(citations) if citations else None
        except ValueError:
            return []
        if not isinstance(lists, list):
            return []
        return episode_ids([uri for uris in lists if isinstance(uris, list) for uri in uris],
                           self.grimoire.namespace)

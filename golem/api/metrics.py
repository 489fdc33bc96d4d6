"""Prometheus metrics on the golem's own CollectorRegistry (never the process-global one).

Event-driven series move as the bus reports (ticks and their durations, episodes stored,
recalls, curator actions, vitality and phase); store-backed ones (memory entries, model
tokens and cost, budget, P&L) are read at each scrape by ``refresh``; the process's own
(``process_*`` from /proc, and the heap by part) are read at each scrape too, so an
operator can watch a daemon's memory over its weeks. Counters count from
this process's start, as Prometheus expects of a restartable target. Names follow
Prometheus practice: ``golem_`` prefix, base units, ``_total`` on counters.
"""

from __future__ import annotations

import platform
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from golem import __version__
from golem.api.sources import VITALITY_COMPONENTS, Money, Sources
from golem.events import (
    CuratorCycleComplete,
    EpisodesStored,
    Event,
    KnowledgeSkipped,
    RecallCompleted,
    TickCompleted,
    VitalityUpdated,
)
from golem.governor.categories import Phase
from golem.grimoire.records import EntryType, Status
from golem.runtime.heap import heap_usage

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_TICK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
_RECALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class _Spend(Collector):
    """Model tokens and cost as counters whose values come from the spend ledger."""

    def __init__(self) -> None:
        self.money: Money | None = None

    def collect(self) -> Iterator[Metric]:
        tokens = CounterMetricFamily("golem_llm_tokens", "Model tokens billed, by kind",
                                     labels=["kind"])
        for kind, n in (self.money.tokens if self.money else {}).items():
            tokens.add_metric([kind], float(n))
        yield tokens
        yield CounterMetricFamily("golem_llm_cost_usd", "Model spend over the golem's life",
                                  value=self.money.spent_usd if self.money else 0.0)


class _Heap(Collector):
    """The process's heap by part (golem.runtime.heap.heap_usage), read at each scrape:
    beside process_resident_memory_bytes it tells a leak (in use grows) from
    fragmentation (free grows) on a daemon that runs for weeks."""

    def collect(self) -> Iterator[Metric]:
        usage = heap_usage()
        heap = GaugeMetricFamily("golem_heap_bytes", "glibc malloc's memory by part (none "
                                 "where the C library does not report it)", labels=["part"])
        for part, value in (("in_use", usage.malloc_in_use_bytes),
                            ("free", usage.malloc_free_bytes)):
            if value is not None:
                heap.add_metric([part], float(value))
        yield heap
        yield GaugeMetricFamily("golem_python_allocated_blocks",
                                "Blocks held by Python's small-object allocator",
                                value=float(usage.python_blocks))


class GolemMetrics:
    def __init__(self, sources: Sources) -> None:
        self.sources = sources
        r = self.registry = CollectorRegistry(auto_describe=True)
        self.ticks = Counter("golem_ticks", "Ticks run, by loop and outcome",
                             ["loop", "outcome"], registry=r)
        self.tick_seconds = Histogram("golem_tick_duration_seconds", "Tick wall time",
                                      ["loop"], buckets=_TICK_BUCKETS, registry=r)
        self.episodes = Counter("golem_episodes", "Episodes written to memory", registry=r)
        self.entries = Gauge("golem_memory_entries", "Semantic entries by status and type",
                             ["status", "type"], registry=r)
        self.recall_seconds = Histogram("golem_recall_duration_seconds", "Recall wall time",
                                        buckets=_RECALL_BUCKETS, registry=r)
        self._spend = _Spend()
        r.register(self._spend)
        # process_* (resident and virtual memory, CPU seconds, open files, start time) from
        # /proc where there is one; nothing elsewhere
        ProcessCollector(registry=r)
        r.register(_Heap())
        self.budget = Gauge("golem_budget_remaining_usd",
                            "Spendable balance above the death reserve", registry=r)
        self.vitality = Gauge("golem_vitality", "Vitality by component (and the composite)",
                              ["component"], registry=r)
        self.phase = Gauge("golem_phase", "1 for the current behavioural phase", ["phase"],
                           registry=r)
        self.pnl = Gauge("golem_pnl_usd", "Wallet equity marked to market less the "
                         "starting budget", registry=r)
        self.curator = Counter("golem_curator_actions", "Curator actions, by action",
                               ["action"], registry=r)
        self.knowledge_skipped = Counter(
            "golem_knowledge_skipped", "Malformed consolidated facts a decision ignored",
            registry=r)
        Info("golem_build", "The running build", registry=r).info(
            {"version": __version__, "python": platform.python_version(),
             "golem": sources.config.golem.name})
        for loop in ("gamma", "theta", "delta"):
            self.tick_seconds.labels(loop)
        for action in ("pruned", "promoted", "archived", "heuristics_proposed"):
            self.curator.labels(action)

    def observe(self, event: Event, record: dict[str, Any]) -> None:
        """The event-bus subscriber (synchronous, on the event loop)."""
        del record
        if isinstance(event, KnowledgeSkipped):
            self.knowledge_skipped.inc(event.count)
        elif isinstance(event, TickCompleted):
            self.ticks.labels(event.loop, event.outcome).inc()
            self.tick_seconds.labels(event.loop).observe(event.duration_ms / 1000.0)
        elif isinstance(event, EpisodesStored):
            self.episodes.inc(event.offered)
        elif isinstance(event, RecallCompleted):
            self.recall_seconds.observe(event.duration_s)
        elif isinstance(event, CuratorCycleComplete):
            for action, n in (("pruned", event.entries_pruned),
                              ("promoted", event.entries_promoted),
                              ("archived", event.entries_archived),
                              ("heuristics_proposed", event.heuristics_proposed)):
                self.curator.labels(action).inc(n)
        elif isinstance(event, VitalityUpdated):
            v = self.sources.vitality
            v.components = {c: float(getattr(event, c)) for c in VITALITY_COMPONENTS}
            v.phase, v.ttl_s = event.phase, event.ttl_s
            for c, value in v.components.items():
                self.vitality.labels(c).set(value)
            for phase in Phase:
                self.phase.labels(phase.value).set(1.0 if phase.value == event.phase else 0.0)

    async def refresh(self) -> Money:
        """Read the store-backed series (call before rendering a scrape)."""
        counts = await self.sources.grimoire.entry_counts()
        self.entries.clear()
        # every known status and type, 0 where there is none: a series does not vanish
        # from dashboards while its count is 0 (a young golem has no entries)
        for known in Status:
            for entry_type in EntryType:
                self.entries.labels(known.value, entry_type.value).set(0)
        for (status, kind), n in counts.items():
            self.entries.labels(status, kind).set(n)
        money = await self.sources.money()
        self._spend.money = money
        self.budget.set(money.budget_remaining_usd)
        self.pnl.set(money.pnl_usd)
        return money

    def render(self) -> bytes:
        return generate_latest(self.registry)

"""The vitality store and the Delta check over real SQLite: birth, samples, transitions,
shocks that survive a restart without re-rolling, the decision journal's scored
predictions driving senescence, model spend, and on_terminal called once."""

from __future__ import annotations

from contextlib import AsyncExitStack
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import pytest
import structlog

from golem.cognition.journal import DecisionJournal
from golem.config import Config, MortalitySection, load_config
from golem.events import EventBus
from golem.governor.categories import Phase
from golem.mortality import vitality as v
from golem.mortality.vitality_check import VitalityCheck, constant_equity, open_vitality
from golem.mortality.vitality_store import Sample, VitalityStore, vitality_status
from golem.runtime.handlers import TickContext

from ..conftest import config_text

T0 = 1_767_225_600.0  # 2026-01-01
HOUR = 3600.0


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def now(self) -> float:
        return self.t


def sample(tick: int, composite: float, phase: Phase = Phase.STABLE, streak: int = 0) -> Sample:
    return Sample(tick, T0 + tick * HOUR, 1.0, 1.0, composite, composite, phase,
                  v.HAYFLICK, False, streak, 1 - composite, 1.0)


def test_store_keeps_birth_samples_transitions_and_shocks(tmp_path: Path) -> None:
    store = VitalityStore.open(tmp_path, T0)
    assert store.birth() == T0 and store.latest() is None
    assert store.latest_phase() is Phase.THRIVING  # a newborn, before the first sample
    store.record(sample(1, 0.8, Phase.THRIVING), transition_from=None, changed=True, shock=None)
    store.record(sample(2, 0.6), transition_from=Phase.THRIVING, changed=True, shock=0.1)
    store.record(sample(3, 0.55), transition_from=Phase.STABLE, changed=False, shock=None)
    store.close()
    store = VitalityStore.open(tmp_path, T0 + 99 * HOUR)  # a restart keeps the birth
    assert store.birth() == T0
    latest = store.latest()
    assert latest is not None and latest.tick == 3 and latest.phase is Phase.STABLE
    assert store.latest(before_tick=3) == sample(2, 0.6)
    assert [s.tick for s in store.recent(2)] == [2, 3]
    assert store.shocks() == [(2, 0.1)] and store.shocks(before_tick=2) == []
    assert [(t[2], t[3]) for t in store.transitions()] == [(None, "thriving"),
                                                            ("thriving", "stable")]
    # a replayed tick replaces its rows: no second shock, no duplicate transition
    store.record(sample(2, 0.6), transition_from=Phase.THRIVING, changed=True, shock=None)
    assert store.shocks() == [] and len(store.transitions()) == 2
    assert store.latest_phase() is Phase.STABLE
    assert store.terminal() is None
    assert store.mark_terminal(7, v.ECONOMIC) and not store.mark_terminal(8, v.HAZARD)
    assert store.terminal() == (7, v.ECONOMIC)
    store.close()
    status = vitality_status(tmp_path)
    assert status is not None
    assert status["latest"]["tick"] == 3 and status["latest"]["phase"] == "stable"
    assert status["age_s"] == pytest.approx(3 * HOUR)
    assert status["ttl_s"] == pytest.approx((0.55 - 0.1) / (0.125 / HOUR))  # fitted slope
    assert status["terminal"] == {"tick": 7, "cause": v.ECONOMIC}
    assert (status["transitions"], status["shocks"], status["samples"]) == (2, 0, 3)


def test_status_before_any_store_or_sample(tmp_path: Path) -> None:
    assert vitality_status(tmp_path) is None
    VitalityStore.open(tmp_path, T0).close()
    assert vitality_status(tmp_path) == {"birth": T0, "latest": None}


# --- the Delta check ----------------------------------------------------------------

def make_config(tmp_path: Path, **mortality: Any) -> Config:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"data_dir": "data", "seed": 7},
                                 "mortality": mortality}))
    return load_config(path)


def ctx(tick: int, clock: Clock, bus: EventBus) -> TickContext:
    return TickContext("delta", tick, clock.now(), clock.now() + 60, clock, bus,  # type: ignore[arg-type]
                       seed=7, logger=structlog.get_logger())


REFERENCE = {"subject": "ETH", "outlook": [0.45, 0.1, 0.45]}


def score(cfg: Config, tick: int, hits: list[bool]) -> None:
    """Theta's journal with one decision per hit, each prediction scored: a 70% "up"
    against the no-change reference, the feed up 1% (it beat the reference) or down 1%."""
    journal = DecisionJournal.open(cfg.data_dir)
    try:
        for i, hit in enumerate(hits):
            t = tick * 1000 + i
            journal.record(t, T0, provider="offline", status="ok", summary="x",
                           record={"knowledge": {"outlook": None, "reference": REFERENCE}},
                           predictions=[("ETH", "up", 0.01, 0.7, t + 1, 100.0)])
            [due] = journal.due(t + 1)
            journal.settle([(due.id, 101.0 if hit else 99.0, 0.8 if hit else 0.1, hit)])
    finally:
        journal.close()


def run_ticks(cfg: Config, ticks: range, clock: Clock, bus: EventBus, *,
              spent: float = 0.0, calls: list[str] | None = None,
              step: float = HOUR) -> list[dict[str, Any]]:
    async def on_terminal(cause: str) -> None:
        if calls is not None:
            calls.append(cause)

    async def main() -> list[dict[str, Any]]:
        async with AsyncExitStack() as stack:
            check = await open_vitality(cfg, clock.now(), stack, spent=lambda: spent,
                                        on_terminal=on_terminal)
            out = []
            for tick in ticks:
                clock.t += step
                out.append(dict(await check(ctx(tick, clock, bus))))
            return out

    return anyio.run(main)


def test_senescence_decays_the_golem_to_death_and_on_terminal_fires_once(
        tmp_path: Path) -> None:
    cfg = make_config(tmp_path, hazard_per_day=0.0, lifespan_days=3650.0)
    score(cfg, 1, [True] * 8 + [False] * 22)  # fitness 10/34 = 0.29: below 0.35
    clock = Clock(T0)
    bus = EventBus(clock.now)
    events: list[Any] = []
    bus.subscribe(lambda event, _record: events.append(event))
    calls: list[str] = []
    counters = run_ticks(cfg, range(1, 21), clock, bus, calls=calls)
    epistemic = [c["epistemic"] for c in counters]
    assert epistemic[0] == pytest.approx(0.5 * (10 / 34) / 0.35, abs=1e-4)
    assert all(b == pytest.approx(a * 0.8, abs=2e-4) for a, b in pairwise(epistemic[:6]))
    assert counters[-1]["epistemic"] == 0.0
    assert calls == [v.EPISTEMIC]  # once, though every later tick is terminal too
    phases = [e.to_phase for e in events if e.kind == "mortality:phase"]
    assert phases == ["conservation", "declining", "terminal"]
    updates = [e for e in events if e.kind == "mortality:vitality"]
    assert len(updates) == 20 and updates[0].cause == v.EPISTEMIC
    status = vitality_status(cfg.data_dir)
    assert status is not None and status["terminal"]["cause"] == v.EPISTEMIC
    assert status["latest"]["senescent_streak"] == 20


def test_unproven_epistemic_and_model_spend(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, hazard_per_day=0.0, lifespan_days=3650.0,
                      starting_budget_usd=100.0)
    score(cfg, 1, [False] * 5)  # fewer than epistemic_min_samples (10)
    clock = Clock(T0)
    bus = EventBus(clock.now)
    [c] = run_ticks(cfg, range(1, 2), clock, bus, spent=40.0)
    assert c["epistemic"] == 1.0
    assert c["economic"] == pytest.approx(58 / 98, abs=1e-4)  # (100-40-2)/(100-2)
    assert c["phase"] == v.PHASE_RANK[Phase.STABLE]
    status = vitality_status(cfg.data_dir)
    assert status is not None and status["latest"]["unproven"]


def test_restart_resumes_without_rerolling_the_hazard(tmp_path: Path) -> None:
    """Ticks 1-40 in two runs with a restart (and tick 20 replayed) end in the same state
    as one uninterrupted run; shocks do arrive."""
    knobs = {"hazard_per_day": 0.9, "hazard_shock": 0.05, "lifespan_days": 30.0}
    whole = make_config(tmp_path / "a", **knobs)
    split = make_config(tmp_path / "b", **knobs)
    one = run_ticks(whole, range(1, 41), Clock(T0), EventBus(Clock(T0).now), step=6 * HOUR)
    clock = Clock(T0)
    first = run_ticks(split, range(1, 21), clock, EventBus(clock.now), step=6 * HOUR)
    clock.t -= 6 * HOUR  # the crash lost tick 20's bookkeeping: it runs again
    second = run_ticks(split, range(20, 41), clock, EventBus(clock.now), step=6 * HOUR)
    assert first[:19] + second == one
    assert sum(c["shock"] for c in one) >= 3
    a, b = vitality_status(whole.data_dir), vitality_status(split.data_dir)
    assert a is not None and b is not None
    assert a["latest"] == b["latest"] and a["shocks"] == b["shocks"] >= 3


def test_check_without_journal_or_ledger(tmp_path: Path) -> None:
    """The callables are optional: no spend, no scored predictions (unproven)."""
    store = VitalityStore.open(tmp_path, T0)
    settings = replace(MortalitySection(), hazard_per_day=0.0, lifespan_days=1.0)
    check = VitalityCheck(store, settings, constant_equity(100.0), seed=1)
    clock = Clock(T0 + 0.5 * 86_400)
    bus = EventBus(clock.now)
    out = anyio.run(check, ctx(1, clock, bus))
    assert out["stochastic"] == pytest.approx(0.5)
    assert out["composite"] == pytest.approx(0.5)
    assert out["phase"] == v.PHASE_RANK[Phase.STABLE]
    store.close()

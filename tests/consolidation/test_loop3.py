"""Loop 3: counterfactual re-assembly of the worst ticks, staged mutations and their trials.

Real parts: a DecisionJournal written through record/settle, the state store's PolicyStore,
a real Grimoire with the real embedding model.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from pathlib import Path
from typing import TypeVar

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.cognition.journal import (
    JOURNAL_DB,
    JOURNAL_DIR,
    DecisionJournal,
    JournalReader,
    Outcome,
)
from golem.config import Config, load_config
from golem.consolidation import loop3 as l3
from golem.consolidation.dream_cycle import DreamCycle
from golem.consolidation.mutations import (
    STATE_DIR,
    MutationLab,
    MutationStore,
    read_mutation_rows,
)
from golem.events import Event, EventBus, PolicyMutationChanged
from golem.governor.categories import Category
from golem.governor.governor import LiveItem
from golem.governor.policy import default_policy, normalise
from golem.governor.policy_store import PolicyStore
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.runtime.state import StateStore

from ..conftest import config_text
from ..grimoire import conftest as grimoire_fixtures

T = TypeVar("T")
embedder = grimoire_fixtures.embedder  # the real model, shared fixtures
model_dir = grimoire_fixtures.model_dir
NOW = 1_767_225_600.0
QUERY = "price falling fast: large swaps, liquidations, warnings, price feed 0xfeed"
C = Category
S = l3.MutationStatus


# --- pure ------------------------------------------------------------------------------

def test_alternatives_boost_missing_and_trade_playbook_for_causal_edges() -> None:
    shares = normalise(default_policy().allocations)
    alts = {a.name: a for a in l3.alternatives(shares, {"insights", "bogus"}, {})}
    assert alts["boost_missing"].steps == {C.INSIGHTS: 0.02}
    trade = alts["playbook_to_causal"].steps
    assert trade[C.PLAYBOOK] == pytest.approx(-0.06) and trade[C.CAUSAL_EDGES] == \
        pytest.approx(0.06)
    assert "follow_lift" not in alts  # no Loop 1 evidence, no lift move
    lifts = {C.EPISODES: -0.2, C.INSIGHTS: 0.3}
    moved = {a.name: a for a in l3.alternatives(shares, (), lifts)}["follow_lift"].steps
    assert moved == {C.EPISODES: -0.02, C.INSIGHTS: 0.02}


@given(st.dictionaries(st.sampled_from(list(Category)), st.floats(-0.2, 0.2), max_size=5),
       st.floats(0.001, 0.1))
def test_shifted_shares_stay_a_distribution_within_the_cap(steps: dict[Category, float],
                                                           cap: float) -> None:
    new, delta = l3.shifted(default_policy().allocations, steps, cap)
    assert math.isclose(math.fsum(new.values()), 1.0, abs_tol=1e-9)
    assert all(abs(v) <= cap + 1e-9 for v in delta.values())
    assert all(v >= 0.0 for v in new.values())


def test_judge_validates_refutes_and_waits() -> None:
    rule = l3.TrialRule(min_ticks=3, margin=0.05, max_trial_ticks=6)
    base = [0.5] * 5
    assert l3.judge(base, [0.7] * 3, rule)[0] is S.VALIDATED
    assert l3.judge(base, [0.3] * 3, rule)[0] is S.REFUTED
    assert l3.judge(base, [0.52] * 3, rule)[0] is None
    assert l3.judge(base, [0.52] * 6, rule)[0] is S.REFUTED  # inconclusive too long
    assert l3.judge(base[:2], [0.9] * 5, rule)[0] is None  # too little baseline


def test_offline_evaluation_is_zero_when_nothing_reaches_the_model() -> None:
    use = {c: l3.CategoryUse(1, 10) for c in Category}
    alt = l3.Alternative("boost_missing", {C.INSIGHTS: 0.02}, "")
    cf = l3.Counterfactual(1, 0.1, frozenset({"insights"}), alt, {C.INSIGHTS: 0.02}, use, use,
                           (), (), 1000)
    assert l3.offline_evaluation(cf, {C.INSIGHTS: 0.5}).gain == 0.0
    more = {**use, C.INSIGHTS: l3.CategoryUse(2, 40)}
    cf2 = l3.Counterfactual(1, 0.1, frozenset({"insights"}), alt, {C.INSIGHTS: 0.02}, use, more,
                            ("x",), (), 1000)
    assert l3.offline_evaluation(cf2, {}).gain == pytest.approx(0.5)


def test_category_lifts_need_samples_on_both_sides() -> None:
    rows = [l3.TickOutcome(i, 0.8, "calm", 0, referenced=frozenset({"insights"}))
            for i in range(5)]
    rows += [l3.TickOutcome(10 + i, 0.4, "calm", 0) for i in range(5)]
    lifts = l3.category_lifts(rows, min_samples=5)
    assert lifts[C.INSIGHTS] == pytest.approx(0.4) and lifts[C.EPISODES] == 0.0
    assert l3.category_lifts(rows, exclude=[0], min_samples=5)[C.INSIGHTS] == 0.0


# --- real journal, policy store and Grimoire ------------------------------------------

def cfg(tmp_path: Path, model_dir: Path) -> Config:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"name": "golem-a", "data_dir": "data"},
                                 "grimoire": {"model_dir": str(model_dir)}}))
    return load_config(path)


def live_items() -> list[dict[str, object]]:
    return [asdict(LiveItem("invariants/cage", C.INVARIANTS, "Policy cage: no actions.", 1.0)),
            asdict(LiveItem("defi_snapshot", C.DEFI_SNAPSHOT, "Price feed 0xfeed falling."))]


def record_ticks(journal: DecisionJournal, ticks: range, revision: int,
                 quality: Callable[[int], float], missing: Callable[[int], set[str]]) -> None:
    """One decision per tick with one prediction, then every prediction scored."""
    for t in ticks:
        record = {"tick": t, "regime": "calm", "policy_revision": revision, "query": QUERY,
                  "phase": "stable", "live": live_items(), "escalated": [],
                  "workspace": {"budget": 1200, "reasons": {}}}
        journal.record(t, NOW + t, provider="offline", status="ok", summary="hold",
                       record=record, predictions=[("0xfeed", "down", 0.01, 0.6, t + 1, 100.0)],
                       outcome=Outcome(t, "calm", revision, frozenset({"insights", "playbook"}),
                                       frozenset(), frozenset(missing(t))))
    due = journal.due(10**9)
    journal.settle([(p.id, 99.0, quality(p.tick), True) for p in due])


def test_the_journal_and_the_mutations_are_read_through_their_owners(tmp_path: Path) -> None:
    """Other rooms read decisions.db through cognition's JournalReader and loop3.db
    through read_mutation_rows: read-only, empty before the files exist."""
    reader = JournalReader(tmp_path / JOURNAL_DIR / JOURNAL_DB)
    assert reader.scored_outcomes(5) == [] and reader.decision(1) is None
    assert read_mutation_rows(tmp_path) == []
    journal = DecisionJournal.open(tmp_path)
    try:
        record_ticks(journal, range(1, 4), 2, lambda t: 0.1 * t,
                     lambda t: {"insights"} if t == 2 else set())
    finally:
        journal.close()
    scored = reader.scored_outcomes(2)
    assert [(o.tick, o.regime, o.policy_revision) for o in scored] == [(2, "calm", 2),
                                                                      (3, "calm", 2)]
    assert scored[0].missing == frozenset({"insights"})
    assert [o.quality for o in scored] == pytest.approx([0.2, 0.3])
    assert (reader.decision(2) or {})["tick"] == 2 and reader.decision(9) is None
    assert reader.qualities(from_revision=2) == pytest.approx([0.1, 0.2, 0.3])
    assert reader.qualities(before_revision=3, limit=2) == pytest.approx([0.3, 0.2])
    assert reader.qualities(before_revision=2) == []
    assert [t for t, _, _ in reader.citations_after(1, not_before=NOW + 3, limit=9)] == [3]
    assert [(t, q) for t, q, _ in reader.scored_decisions(1, limit=1)] == [(2, pytest.approx(0.2))]
    store = MutationStore(tmp_path / STATE_DIR)
    try:
        m = l3.ContextPolicyMutation("cpm-1", "boost_missing", {"insights": 0.02}, "why",
                                     0.2, S.STAGED, 7, (5,), 0.1)
        store.save(m)
        [(status, body)] = read_mutation_rows(tmp_path)
        assert status == "staged" and json.loads(body)["rationale"] == "why"
    finally:
        store.close()


def with_lab(tmp_path: Path, model_dir: Path, embedder: Embedder,
             body: Callable[[MutationLab, DecisionJournal, PolicyStore], Awaitable[T]],
             events: EventBus) -> T:
    config = cfg(tmp_path, model_dir)

    async def main() -> T:
        g = await Grimoire.open(config, now=lambda: NOW, embedder=embedder)
        state = StateStore.open(tmp_path / "state")
        policies = PolicyStore.open(state)
        journal = DecisionJournal.open(config.data_dir)
        settings = l3.Loop3Settings(rule=l3.TrialRule(min_ticks=5, margin=0.05))
        lab = MutationLab(g, policies, journal_path=journal.path, state_dir=tmp_path / "state",
                          total_budget=1200, settings=settings, events=events)
        try:
            for i in range(25):  # more relevant insights than the category's budget holds
                await g.remember(f"When the price falls fast, large swaps on pool {i} come "
                                 f"before liquidations within {i + 2} blocks",
                                 entry_type="insight", importance=0.6)
            return await body(lab, journal, policies)
        finally:
            lab.close()
            journal.close()
            policies.close()
            state.close()
            await g.close()

    return anyio.run(main)


async def stage_and_start_trial(lab: MutationLab, journal: DecisionJournal,
                                policies: PolicyStore) -> l3.ContextPolicyMutation:
    # 12 ordinary ticks, 3 poor ones where the model said insights were missing
    record_ticks(journal, range(1, 16), 0, lambda t: 0.1 if t % 5 == 0 else 0.6,
                 lambda t: {"insights"} if t % 5 == 0 else set())
    dream = await DreamCycle(lab.grimoire, lab=lab).run(1, NOW)  # REM runs Loop 3
    assert (dream.mutations_staged, dream.mutations_trialled) == (1, 1)
    [m] = lab.store.all()
    assert m.name == "boost_missing" and m.source_ticks == (5, 10, 15)
    assert m.delta["insights"] > 0 and m.confidence == l3.STAGED_CONFIDENCE
    assert m.status is S.TRIAL and m.trial_revision == 1
    latest = policies.latest()
    assert latest.revision == 1
    before = normalise(default_policy().allocations)
    assert latest.allocations[C.INSIGHTS] == pytest.approx(before[C.INSIGHTS]
                                                           + m.applied["insights"])
    assert m.applied["insights"] > 0
    again = await lab.run(2, NOW + 60)  # nothing scored under the trial yet; ticks used
    assert (again.staged, again.trialled, again.validated, again.refuted) == (0, 0, 0, 0)
    return m


def test_mutation_validated_when_quality_rises_under_it(tmp_path: Path, model_dir: Path,
                                                        embedder: Embedder) -> None:
    seen: list[Event] = []
    bus = EventBus(lambda: NOW)
    bus.subscribe(lambda event, record: seen.append(event))

    async def body(lab: MutationLab, journal: DecisionJournal, policies: PolicyStore) -> None:
        m = await stage_and_start_trial(lab, journal, policies)
        record_ticks(journal, range(16, 24), 1, lambda t: 0.8, lambda t: set())
        report = await lab.run(3, NOW + 120)
        assert report.validated == 1 and report.refuted == 0
        [done] = lab.store.all()
        assert done.id == m.id and done.status is S.VALIDATED
        assert done.confidence > l3.STAGED_CONFIDENCE
        assert policies.latest().revision == 1  # the mutated policy stays

    with_lab(tmp_path, model_dir, embedder, body, bus)
    changes = [(e.status, e.confidence) for e in seen if isinstance(e, PolicyMutationChanged)]
    assert [s for s, _ in changes] == ["staged", "trial", "validated"]
    assert changes[0][1] == 0.2 and changes[-1][1] > 0.2


def test_mutation_refuted_and_reverted_when_quality_falls(tmp_path: Path, model_dir: Path,
                                                          embedder: Embedder) -> None:
    seen: list[Event] = []
    bus = EventBus(lambda: NOW)
    bus.subscribe(lambda event, record: seen.append(event))

    async def body(lab: MutationLab, journal: DecisionJournal, policies: PolicyStore) -> None:
        m = await stage_and_start_trial(lab, journal, policies)
        record_ticks(journal, range(16, 24), 1, lambda t: 0.2, lambda t: set())
        report = await lab.run(3, NOW + 120)
        assert report.refuted == 1 and report.validated == 0
        [done] = lab.store.all()
        assert done.id == m.id and done.status is S.REFUTED and done.reverted_revision == 2
        latest = policies.latest()
        assert latest.revision == 2
        before = normalise(default_policy().allocations)
        for c in Category:  # the delta is taken back out in a new revision
            assert latest.allocations[c] == pytest.approx(before[c], abs=1e-9)

    with_lab(tmp_path, model_dir, embedder, body, bus)
    statuses = [e.status for e in seen if isinstance(e, PolicyMutationChanged)]
    assert statuses == ["staged", "trial", "refuted"]

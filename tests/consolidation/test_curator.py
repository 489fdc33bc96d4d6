"""The curator's pure parts on crafted entries: each class reached for its reason, the
staged gate, anchored entries, near-duplicates, cross-references and playbook proposals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.consolidation.curator import (
    Action,
    CuratorParams,
    CycleView,
    Decision,
    Quarantine,
    classify,
    classify_all,
)
from golem.consolidation.curator_compress import (
    RELATED,
    Merge,
    apply_patch,
    cross_references,
    find_duplicates,
    fold,
    strength,
)
from golem.consolidation.curator_cycle import CyclePlan, Snapshot, at_random
from golem.consolidation.curator_playbook import (
    NO_RULES,
    SECTION,
    Proposal,
    proposed_ids,
    select_heuristics,
    with_proposals,
)
from golem.consolidation.curator_signals import MERGED_FROM, Scope
from golem.grimoire.playbook import STARTER_PLAYBOOK
from golem.grimoire.records import (
    DecayClass,
    EntryType,
    FactKind,
    MemoryMetadata,
    MemoryType,
    Provenance,
    SemanticEntry,
    Source,
    Status,
)

NOW = 1_767_225_600.0
DAY = 86400.0
NS = "golem-a"
P = CuratorParams()
HALF_LIVES = {DecayClass.STRUCTURAL: 365 * DAY, DecayClass.STRATEGIC: 60 * DAY,
              DecayClass.TACTICAL: 3 * DAY, DecayClass.EPHEMERAL: 0.25 * DAY}


def entry(id: str = "e1", **kw: Any) -> SemanticEntry:
    base: dict[str, Any] = dict(
        id=id, namespace=NS, text=f"Swap fees rise after whale swaps ({id})",
        entry_type=EntryType.INSIGHT, memory_type=MemoryType.FACT, created_at=NOW - 2 * DAY,
        confidence=0.7, importance=0.5, provenance=Provenance(author=NS, process="consolidation"))
    base.update(kw)
    return SemanticEntry(**base)


def view(*entries: SemanticEntry, now: float = NOW, **kw: Any) -> CycleView:
    return CycleView(now=now, namespace=NS, entries={e.id: e for e in entries}, **kw)


def verdict(e: SemanticEntry, v: CycleView | None = None) -> tuple[Action, str]:
    d = classify(e, v or view(e), P)
    assert d is not None and d.reason
    return d.action, d.rule


# --- ACTIVE ---------------------------------------------------------------------------

def test_active_entry_in_use_is_kept() -> None:
    e = entry(last_accessed=NOW - 3600, access_count=4, successful_recalls=2)
    assert verdict(e) == (Action.KEEP, "in_use")


def test_unused_entry_is_archived_unless_many_episodes_support_it() -> None:
    cold = entry(created_at=NOW - 40 * DAY, last_accessed=NOW - 20 * DAY)
    assert verdict(cold) == (Action.ARCHIVE, "cold")
    # stability ln(20) = 3.0: the same idleness is within 14 d x 3.0
    assert verdict(replace(cold, episode_count=20)) == (Action.KEEP, "in_use")


def test_low_confidence_stale_entry_is_pruned_and_verified_one_archived() -> None:
    stale = entry(created_at=NOW - 90 * DAY, last_accessed=NOW - 40 * DAY, confidence=0.12)
    assert verdict(stale) == (Action.PRUNE, "stale")
    assert verdict(replace(stale, anchored=True)) == (Action.KEEP, "anchored")
    verified = replace(stale, provenance=Provenance(author=NS, verified=True))
    assert verdict(verified) == (Action.ARCHIVE, "verified_cold")


def test_decayed_confidence_is_what_counts() -> None:
    # stored 0.6, but tactical (3 d half-life) and last reinforced 31 d ago: ~0.0005 now
    e = entry(created_at=NOW - 60 * DAY, last_reinforced=NOW - 31 * DAY, confidence=0.6,
              decay_class=DecayClass.TACTICAL)
    assert verdict(e, view(e)) == (Action.ARCHIVE, "cold")  # stored confidence only
    d = classify(e, view(e, half_lives=HALF_LIVES), P)
    assert d is not None and (d.action, d.rule) == (Action.PRUNE, "stale")
    assert "confidence 0.00" in d.reason


def test_anti_knowledge_is_kept_however_cold() -> None:
    e = entry(entry_type=EntryType.ANTI_KNOWLEDGE, created_at=NOW - 200 * DAY,
              confidence=0.05)
    assert verdict(e) == (Action.KEEP, "anti_knowledge")


def test_out_of_scope_and_unimportant_entries_cool_into_the_archive() -> None:
    other_chain = entry(created_at=NOW - 5 * DAY, metadata=MemoryMetadata(chains=(1,)))
    scoped = view(other_chain, scope=Scope(chains=frozenset({31337})))
    assert verdict(other_chain, scoped) == (Action.ARCHIVE, "out_of_scope")
    assert verdict(replace(other_chain, metadata=MemoryMetadata(chains=(31337,))),
                   scoped) == (Action.KEEP, "in_use")
    assert verdict(entry(importance=0.1)) == (Action.ARCHIVE, "unimportant")
    assert verdict(entry(importance=0.1, access_count=1)) == (Action.KEEP, "in_use")


def test_other_namespaces_and_pruned_entries_get_no_verdict() -> None:
    assert classify(entry(namespace="golem-b"), view(), P) is None
    assert classify(entry(status=Status.PRUNED), view(), P) is None


# --- anchored -------------------------------------------------------------------------

@given(status=st.sampled_from([Status.ACTIVE, Status.STAGED, Status.ARCHIVED,
                               Status.QUARANTINED]),
       age=st.floats(0, 400 * DAY), idle=st.floats(0, 1), conf=st.floats(0, 1),
       anti=st.booleans(), dream=st.booleans(), source=st.sampled_from(list(Source)),
       importance=st.floats(0, 1), decay=st.sampled_from(list(DecayClass)))
def test_anchored_entries_and_a_golem_without_forgetting_never_archive_or_prune(
        status: Status, age: float, idle: float, conf: float, anti: bool, dream: bool,
        source: Source, importance: float, decay: DecayClass) -> None:
    e = entry(status=status, created_at=NOW - age, last_accessed=NOW - age * idle,
              confidence=conf, importance=importance, decay_class=decay,
              entry_type=EntryType.ANTI_KNOWLEDGE if anti else EntryType.INSIGHT,
              fact={"expires_at": NOW - age / 2} if dream else {},
              provenance=Provenance(source=source, process="dream" if dream else "x"))
    opponent = entry("trusted", confidence=0.95)
    v = view(e, opponent, half_lives=HALF_LIVES,
             quarantine={e.id: Quarantine(("trusted",), NOW - age)})
    anchored = classify(replace(e, anchored=True), v, P)
    assert anchored is not None and anchored.action in (Action.KEEP, Action.PROMOTE)
    plain = classify(e, v, P)
    assert plain is not None
    if anchored.rule == "anchored":  # overridden: the reason says what it would have been
        assert anchored.reason.startswith("anchored: exempt from decay and pruning (else ")
    kept = classify(e, v, replace(P, forget=False))  # consolidation.forgetting off
    assert kept is not None and kept.action in (Action.KEEP, Action.PROMOTE)
    if plain.action in (Action.ARCHIVE, Action.PRUNE):
        assert (kept.rule, kept.reason) == ("no-forgetting",
                                            f"forgetting is off (else {plain.reason})")
    else:
        assert kept == plain


# --- the staged gate --------------------------------------------------------------------

def dream(**kw: Any) -> SemanticEntry:
    fact = {"hypothesis": "fees spike", "confirm_window_s": 3 * DAY,
            "expires_at": NOW - DAY + 3 * DAY}
    return entry("dream-1", status=Status.STAGED, created_at=NOW - DAY, confidence=0.25,
                 fact=fact, provenance=Provenance(author=NS, process="dream"), **kw)


def test_dream_hypothesis_promoted_when_confirmed_in_its_window() -> None:
    assert verdict(dream()) == (Action.KEEP, "dream_pending")
    assert verdict(dream(last_reinforced=NOW - 3600)) == (Action.PROMOTE, "dream_confirmed")
    assert verdict(dream(successful_recalls=1)) == (Action.PROMOTE, "dream_confirmed")
    # episodes count only against the count recorded at staging (none recorded: no signal)
    assert verdict(dream(episode_count=3)) == (Action.KEEP, "dream_pending")
    grown = dream(episode_count=3)
    grown = replace(grown, fact={**grown.fact, "episode_count_at_stage": 2})
    assert verdict(grown) == (Action.PROMOTE, "dream_confirmed")
    # confirmed inside the window, curator runs after expiry: still promoted
    late = view(now=NOW + 5 * DAY)
    assert verdict(dream(last_reinforced=NOW), late) == (Action.PROMOTE, "dream_confirmed")


def test_dream_hypothesis_pruned_after_expiry_unconfirmed() -> None:
    late = view(now=NOW + 3 * DAY)  # expires_at = NOW + 2 d
    assert verdict(dream(), late) == (Action.PRUNE, "dream_expired")
    # reinforced only after expiry, and time-less counters after expiry: not confirmation
    after = dream(last_reinforced=NOW + 2.5 * DAY, successful_recalls=1, episode_count=4)
    assert verdict(after, late) == (Action.PRUNE, "dream_expired")
    # episode count that has not grown past the one at staging is no confirmation
    staged = dream(episode_count=3)
    staged = replace(staged, fact={**staged.fact, "episode_count_at_stage": 3})
    assert verdict(staged) == (Action.KEEP, "dream_pending")


def test_dream_without_usable_window_fields_uses_the_default_window() -> None:
    bare = replace(dream(), fact={"hypothesis": "x"}, created_at=NOW - 4 * DAY)
    assert verdict(bare) == (Action.PRUNE, "dream_expired")  # 3 d default window
    junk = replace(bare, fact={"expires_at": "soon", "confirm_window_s": float("nan")})
    assert verdict(junk) == (Action.PRUNE, "dream_expired")
    assert verdict(replace(junk, created_at=NOW - DAY)) == (Action.KEEP, "dream_pending")


def inherited(**kw: Any) -> SemanticEntry:
    prov = Provenance(source=Source.SUCCESSOR, generation=1, author="golem-parent")
    return entry("inh", **{"status": Status.STAGED, "confidence": 0.34, "provenance": prov,
                           **kw})


def test_inherited_knowledge_promoted_only_after_local_validation() -> None:
    assert verdict(inherited()) == (Action.KEEP, "staged_pending")
    assert verdict(inherited(successful_recalls=1, confidence=0.39)) == (
        Action.KEEP, "staged_pending")
    assert verdict(inherited(successful_recalls=2, confidence=0.44)) == (
        Action.PROMOTE, "validated_locally")
    assert verdict(inherited(created_at=NOW - 15 * DAY)) == (Action.PRUNE, "stage_expired")
    # Lethe-level confidence is not enough even with recalls
    assert verdict(inherited(successful_recalls=2, confidence=0.2)) == (
        Action.KEEP, "staged_pending")


def test_model_candidates_need_support_and_warnings_skip_the_wait() -> None:
    cand = entry("cand", status=Status.STAGED, confidence=0.5,
                 provenance=Provenance(author=NS, process="consolidation:model"))
    assert verdict(cand) == (Action.KEEP, "staged_pending")
    assert verdict(replace(cand, episode_count=2)) == (Action.PROMOTE, "candidate_supported")
    assert verdict(replace(cand, provenance=Provenance(author=NS, verified=True))) == (
        Action.PROMOTE, "candidate_supported")
    warning = replace(cand, entry_type=EntryType.ANTI_KNOWLEDGE)
    assert verdict(warning) == (Action.PROMOTE, "warning")
    # a dream warning still has to be confirmed
    assert verdict(replace(dream(), entry_type=EntryType.ANTI_KNOWLEDGE)) == (
        Action.KEEP, "dream_pending")


# --- contradictions ---------------------------------------------------------------------

def test_quarantined_claims_are_adjudicated() -> None:
    trusted = entry("trusted", confidence=0.9)
    claim = entry("claim", status=Status.QUARANTINED, created_at=NOW - 8 * DAY)
    q = {"claim": Quarantine(("trusted",), NOW - 8 * DAY)}
    assert verdict(claim, view(claim, trusted, quarantine=q)) == (Action.PRUNE, "contradicted")
    fresh = {"claim": Quarantine(("trusted",), NOW - 2 * DAY)}
    assert verdict(claim, view(claim, trusted, quarantine=fresh)) == (
        Action.KEEP, "quarantine_pending")
    supported = replace(claim, last_reinforced=NOW - DAY)
    assert verdict(supported, view(supported, trusted, quarantine=q)) == (
        Action.KEEP, "quarantine_pending")
    # the opponent was pruned (or decayed below trust): a supported claim is released
    for gone in (replace(trusted, status=Status.PRUNED), replace(trusted, confidence=0.5)):
        assert verdict(supported, view(supported, gone, quarantine=q)) == (
            Action.PROMOTE, "contradiction_resolved")
        assert verdict(claim, view(claim, gone, quarantine=q)) == (
            Action.PRUNE, "quarantine_unsupported")


# --- ARCHIVED ---------------------------------------------------------------------------

def test_archived_entries_warm_up_again_or_are_pruned_when_stale() -> None:
    arch = entry(status=Status.ARCHIVED, created_at=NOW - 100 * DAY,
                 last_accessed=NOW - 70 * DAY, confidence=0.2)
    assert verdict(arch) == (Action.PRUNE, "archived_stale")
    assert verdict(replace(arch, confidence=0.5)) == (Action.KEEP, "archived")
    used = replace(arch, last_accessed=NOW - 3600)
    assert verdict(used) == (Action.PROMOTE, "warm_again")
    merged = view(used, merged_into={used.id: "keeper"})
    assert verdict(used, merged) == (Action.KEEP, "merged")  # never warms up again
    assert verdict(arch, view(arch, merged_into={arch.id: "keeper"})) == (
        Action.PRUNE, "archived_stale")


def test_params_are_validated() -> None:
    with pytest.raises(ValueError, match="prune_confidence"):
        CuratorParams(prune_confidence=1.5)
    with pytest.raises(ValueError, match="recent_s"):
        CuratorParams(recent_s=20 * DAY)
    with pytest.raises(ValueError, match="max_related"):
        CuratorParams(max_related=-1)


def test_every_class_reached_in_one_pass() -> None:
    entries = [entry("keep", last_accessed=NOW), dream(last_reinforced=NOW),
               entry("arch", created_at=NOW - 30 * DAY),
               entry("prune", created_at=NOW - 60 * DAY, confidence=0.1)]
    got = {d.entry_id: d.action for d in classify_all(entries, view(*entries), P)}
    assert got == {"keep": Action.KEEP, "dream-1": Action.PROMOTE, "arch": Action.ARCHIVE,
                   "prune": Action.PRUNE}


# --- compress ----------------------------------------------------------------------------

def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=16).astype(np.float32)
    return v / np.linalg.norm(v)


def near(v: np.ndarray, eps: float, seed: int = 99) -> np.ndarray:
    return v + eps * unit(seed)


def test_near_duplicates_merge_into_the_stronger() -> None:
    a = entry("a", confidence=0.8, episode_count=5, source_episodes=("x1", "x2", "x3"),
              observed_from=NOW - 5 * DAY, observed_to=NOW - DAY)
    b = entry("b", confidence=0.6, episode_count=3, source_episodes=("x3", "x4"),
              observed_from=NOW - 9 * DAY, observed_to=NOW - 2 * DAY)
    c = entry("c", text="Liquidations cluster after oracle updates")
    vecs = {"a": unit(1), "b": near(unit(1), 0.05), "c": unit(2)}
    merges = find_duplicates([b, a, c], vecs, NS, P)
    assert [(m.keeper_id, m.absorbed_id) for m in merges] == [("a", "b")]
    assert "cosine 0.99" in merges[0].reason
    [patch] = fold(merges, {e.id: e for e in (a, b, c)})
    kept = apply_patch(a, patch)
    assert kept.episode_count == 5 + 3 - 1  # x3 is shared: counted once
    assert kept.source_episodes == ("x1", "x2", "x3", "x4")
    assert (kept.observed_from, kept.observed_to) == (NOW - 9 * DAY, NOW - DAY)
    assert kept.fact[MERGED_FROM] == ["b"]
    assert apply_patch(kept, patch) == kept  # applied twice: folded once
    assert fold(merges, {"a": kept, "b": b}) == [replace(patch, add_episode_count=0,
                                                         add_source_episodes=(),
                                                         observed_from=kept.observed_from,
                                                         observed_to=kept.observed_to,
                                                         merged_from=())]


def test_what_is_not_a_duplicate() -> None:
    v = unit(3)
    keyed = entry("k1", fact={"key": "baseline:pool-a"}, fact_kind=FactKind.BASELINE)
    other_key = entry("k2", fact={"key": "baseline:pool-b"}, fact_kind=FactKind.BASELINE)
    assert find_duplicates([keyed, other_key], {"k1": v, "k2": v}, NS, P) == []
    same_key = replace(other_key, fact={"key": "baseline:pool-a"}, confidence=0.5)
    merges = find_duplicates([keyed, same_key], {"k1": v, "k2": unit(4)}, NS, P)
    assert [(m.keeper_id, m.absorbed_id) for m in merges] == [("k1", "k2")]
    assert "same fact key" in merges[0].reason
    pos = entry("p", text="Selling HONEY reverts")
    neg = entry("n", text="Selling HONEY never reverts", confidence=0.5)
    assert find_duplicates([pos, neg], {"p": v, "n": v}, NS, P) == []  # a contradiction
    x = entry("x", text="Pool 0xdead01 fees rise")
    y = entry("y", text="Pool 0xbeef02 fees rise", confidence=0.5)
    assert find_duplicates([x, y], {"x": v, "y": v}, NS, P) == []  # different subjects
    kinds = entry("h", entry_type=EntryType.HEURISTIC, confidence=0.5)
    assert find_duplicates([entry("i"), kinds], {"i": v, "h": v}, NS, P) == []
    anchored = entry("an", anchored=True, confidence=0.5)
    assert find_duplicates([entry("s", confidence=0.9), anchored], {"s": v, "an": v},
                           NS, P) != []  # the anchored one keeps; the other is absorbed
    two = [entry("an1", anchored=True), entry("an2", anchored=True, confidence=0.6)]
    assert find_duplicates(two, {"an1": v, "an2": v}, NS, P) == []
    staged = entry("st", status=Status.STAGED)
    assert find_duplicates([entry("i"), staged], {"i": v, "st": v}, NS, P) == []


def test_cross_references_link_entries_sharing_source_episodes() -> None:
    a = entry("a", source_episodes=("x1", "x2"))
    b = entry("b", source_episodes=("x2", "x1", "x9"))
    c = entry("c", source_episodes=("x2",))
    d = entry("d", source_episodes=("x7",), fact={RELATED: ["gone"]})
    patches = {p.entry_id: p.related for p in cross_references([a, b, c, d], NS, P)}
    assert patches == {"a": ("b", "c"), "b": ("a", "c"), "c": ("a", "b"), "d": ()}
    linked = [apply_patch(e, p) for e in (a, b, c, d)
              for p in cross_references([a, b, c, d], NS, P) if p.entry_id == e.id]
    assert linked[0].fact[RELATED] == ["b", "c"] and RELATED not in linked[3].fact
    assert cross_references(linked, NS, P) == []  # idempotent


# --- playbook ----------------------------------------------------------------------------

def test_validated_heuristics_are_selected_once() -> None:
    good = entry("h1", entry_type=EntryType.HEURISTIC, confidence=0.85, successful_recalls=3)
    proc = entry("p1", fact_kind=FactKind.PROCEDURAL, confidence=0.9, successful_recalls=5)
    few = replace(good, id="h2", successful_recalls=2)
    weak = replace(good, id="h3", confidence=0.6)
    insight = replace(good, id="i1", entry_type=EntryType.INSIGHT)
    staged = replace(good, id="h4", status=Status.STAGED)

    def conf(e: SemanticEntry) -> float:
        return e.confidence

    chosen = select_heuristics([good, proc, few, weak, insight, staged], NS, set(), conf, P)
    assert [p.entry_id for p in chosen] == ["p1", "h1"]
    assert select_heuristics([good], NS, {"h1"}, conf, P) == []


def test_playbook_text_gets_one_section_and_idempotent_bullets() -> None:
    first = [Proposal("h1", "Rebalance when\nthe price leaves\u202e the range", 0.85, 3)]
    text = with_proposals(STARTER_PLAYBOOK, first)
    assert SECTION in text and NO_RULES not in text
    assert "- Rebalance when the price leaves the range (entry h1; confidence 0.85, " \
           "3 useful recalls)" in text
    assert proposed_ids(text) == {"h1"}
    assert with_proposals(text, first) == text
    more = with_proposals(text + "\n## Hand-written\n\n- keep gas low\n",
                          [Proposal("h2", "Avoid thin pools", 0.9, 4)])
    section = more.split(SECTION)[1].split("## Hand-written")[0]
    assert "(entry h1;" in section and "(entry h2;" in section
    assert more.count(SECTION) == 1 and more.endswith("- keep gas low\n")


@given(picks=st.lists(st.tuples(st.integers(0, 3), st.floats(0, 0.4), st.floats(0.1, 1),
                                st.booleans(), st.integers(0, 2)), min_size=1, max_size=25))
def test_duplicate_merges_keep_their_invariants(
        picks: list[tuple[int, float, float, bool, int]]) -> None:
    entries, vecs = [], {}
    for i, (base, eps, conf, anchored, keyed) in enumerate(picks):
        e = entry(f"e{i}", confidence=conf, anchored=anchored,
                  fact={"key": f"k{base}"} if keyed == 2 else {})
        entries.append(e)
        vecs[e.id] = near(unit(base), eps, seed=i)
    merges = find_duplicates(entries, vecs, NS, P)
    by_id = {e.id: e for e in entries}
    absorbed = [m.absorbed_id for m in merges]
    assert len(absorbed) == len(set(absorbed))
    assert not {m.keeper_id for m in merges} & set(absorbed)
    for m in merges:
        keeper, gone = by_id[m.keeper_id], by_id[m.absorbed_id]
        assert not gone.anchored and strength(keeper) < strength(gone)
        a, b = vecs[keeper.id], vecs[gone.id]
        cos = float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
        assert cos >= P.duplicate_cosine - 1e-6 or keeper.fact.get("key") == gone.fact["key"]


# --- random forgetting (the lab's random-eviction arm) ----------------------------------

def test_random_forgetting_moves_archive_and_prune_verdicts_to_drawn_entries() -> None:
    """As many archives and prunes as the verdicts named, drawn from the right statuses,
    never an anchored entry or one another verdict or a merge touches."""
    entries = [entry(f"a{i}") for i in range(6)]
    entries += [entry("arch", status=Status.ARCHIVED), entry("pin", anchored=True),
                entry("other", namespace="someone-else")]
    verdicts = [Decision("a0", Action.ARCHIVE, "idle", "idle"),
                Decision("a1", Action.PRUNE, "faded", "faded"),
                Decision("a2", Action.PROMOTE, "staged", "validated")]
    merge = Merge(keeper_id="a4", absorbed_id="a3", reason="near-duplicate")
    plan = CyclePlan([merge], [], verdicts, [], kept=3)
    pools: dict[int, list[str]] = {}

    def pick(pool: Sequence[str], count: int) -> list[str]:
        pools[len(pools)] = sorted(pool)
        return sorted(pool)[-count:]

    moved = at_random(plan, Snapshot(entries, {}, {}), NS, pick)
    assert moved.merges == plan.merges and moved.kept == 3
    assert pools[0] == ["a0", "a1", "a4", "a5"]  # archive: active, not promoted/absorbed
    assert pools[1] == ["a0", "a1", "a4", "arch"]  # prune: active or archived, not taken
    by_action = {d.action: d for d in moved.decisions}
    assert by_action[Action.PROMOTE] == verdicts[2]
    assert by_action[Action.ARCHIVE].entry_id == "a5"
    assert by_action[Action.PRUNE].entry_id == "arch"
    assert {d.rule for d in moved.decisions if d.action != Action.PROMOTE} == {"at-random"}
    nothing = CyclePlan([], [], [verdicts[2]], [], kept=1)
    assert at_random(nothing, Snapshot(entries, {}, {}), NS, pick) is nothing

"""The semantic store against a real SQLite file: writes, search, lifecycle, graph, quarantine.

Vectors are synthetic unit vectors built so each test gets exactly the
similarities it needs.
"""

from __future__ import annotations

import itertools
import sqlite3
import tempfile
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem.grimoire.embedder import Embedder
from golem.grimoire.errors import (
    InvalidMemory,
    NamespaceRefused,
    SignatureMismatch,
    StoreCorrupt,
)
from golem.grimoire.records import (
    CausalEdge,
    DecayClass,
    EntryType,
    FactKind,
    InsightCategory,
    MemoryMetadata,
    MemoryType,
    Pad,
    Provenance,
    SemanticEntry,
    Source,
    Status,
)
from golem.grimoire.semantic import SemanticStore
from golem.grimoire.semantic_db import WAL_BACKSTOP_PAGES, WAL_CHECKPOINT_PAGES

DIM = 16
SIG = "minilm-test-sig"


def unit(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = 1.0
    return v


def at_cosine(c: float, base: int = 0, other: int = 1) -> np.ndarray:
    return (c * unit(base) + np.sqrt(1 - c * c) * unit(other)).astype(np.float32)


def entry(id_: str, text: str = "", ns: str = "a", **fields: Any) -> SemanticEntry:
    return SemanticEntry(id=id_, namespace=ns, text=text or f"entry {id_}",
                         entry_type=fields.pop("entry_type", EntryType.INSIGHT),
                         memory_type=fields.pop("memory_type", MemoryType.FACT),
                         created_at=fields.pop("created_at", 1000.0), **fields)


@pytest.fixture
def store(tmp_path: Path):
    s = SemanticStore.open(tmp_path / "grimoire.db", SIG, DIM)
    yield s
    s.close()


def put(store: SemanticStore, *pairs: tuple[SemanticEntry, np.ndarray]) -> None:
    store.put([e for e, _ in pairs], np.stack([v for _, v in pairs]))


def ids(results: list[tuple[SemanticEntry, float]]) -> list[str]:
    return [e.id for e, _ in results]


# ---- writes -------------------------------------------------------------------------

def test_every_field_round_trips(store: SemanticStore) -> None:
    full = SemanticEntry(
        id="full", namespace="a", text="Aave V3 liquidations cluster after oracle updates",
        entry_type=EntryType.CAUSAL_LINK, memory_type=MemoryType.STRATEGY_OUTCOME,
        created_at=10.5, confidence=0.7, importance=0.9, reinforced_confidence=0.75,
        category=InsightCategory.LIQUIDITY_CONDITIONS, fact_kind=FactKind.CAUSAL_RELATION,
        fact={"cause": "oracle update", "effect": "liquidations", "lag_s": 36.0},
        episode_count=12, observed_from=1.0, observed_to=9.0, last_reinforced=8.0,
        last_accessed=9.5, access_count=3, successful_recalls=2,
        source_episodes=("e1", "e2"), status=Status.STAGED, decay_class=DecayClass.TACTICAL,
        anchored=True, pad=Pad(0.1, -0.2, 0.3),
        metadata=MemoryMetadata(tokens=("WETH",), chains=(1, 8453), protocols=("aave-v3",),
                                strategy_id="lp-1"),
        provenance=Provenance(source=Source.CLADE, generation=2, author="sib", process="delta",
                              bloodstain=True, verified=True),
    )
    default = entry("d", ns="other")
    unset = [f.name for f in fields(SemanticEntry)
             if getattr(full, f.name) == getattr(default, f.name)]
    assert unset == [], f"set every field here so the round trip covers it: {unset}"
    put(store, (full, unit(3)))
    assert store.get(["full"]) == [full]
    np.testing.assert_array_equal(store.vectors(["full"])["full"], unit(3))
    assert store.confidence_times(["full"]) == {"full": 8.0}


def test_put_is_idempotent_and_replaces_by_id(store: SemanticStore) -> None:
    first = entry("x", "gas spikes after the zanzibar upgrade")
    put(store, (first, unit(0)))
    put(store, (first, unit(0)))
    assert store.count() == 1
    put(store, (replace(first, text="fees rise on weekends"), unit(1)))
    assert store.count() == 1
    assert store.get(["x"])[0].text == "fees rise on weekends"
    # the lexical index followed the replacement inside the same transaction
    assert store.search_text("zanzibar", 5, ["a"]) == []
    assert ids(store.search_text("weekends", 5, ["a"])) == ["x"]
    assert ids(store.search_vector(unit(1), 1, ["a"])) == ["x"]


def test_a_bad_row_in_a_batch_writes_nothing(store: SemanticStore) -> None:
    good, bad = entry("good"), entry("bad", confidence=float("nan"))
    with pytest.raises(InvalidMemory, match="confidence"):
        store.put([good, bad], np.stack([unit(0), unit(1)]))
    with pytest.raises(InvalidMemory, match="shape"):
        store.put([good], np.ones((1, DIM + 1), dtype=np.float32))
    with pytest.raises(InvalidMemory, match="NaN"):
        store.put([good], np.full((1, DIM), np.nan, dtype=np.float32))
    with pytest.raises(InvalidMemory, match="JSON"):
        store.put([entry("j", fact={"mean": float("inf")})], unit(0)[None])
    assert store.count() == 0


def test_an_id_of_another_namespace_cannot_be_overwritten(store: SemanticStore) -> None:
    put(store, (entry("shared", "theirs", ns="b"), unit(0)))
    with pytest.raises(NamespaceRefused):
        put(store, (entry("mine"), unit(1)), (entry("shared", "mine", ns="a"), unit(1)))
    assert store.get(["shared"])[0].text == "theirs"
    assert store.get(["mine"]) == []


# ---- search -------------------------------------------------------------------------

def test_search_vector_ranks_by_cosine_and_filters(store: SemanticStore) -> None:
    put(store,
        (entry("near", importance=0.9), at_cosine(0.95)),
        (entry("mid", entry_type=EntryType.WARNING, memory_type=MemoryType.CONSTRAINT,
               importance=0.2), at_cosine(0.6)),
        (entry("far", importance=0.9), at_cosine(0.1)),
        (entry("staged", status=Status.STAGED), unit(0)))
    hits = store.search_vector(unit(0) * 3.0, 10, ["a"])  # the query's length does not matter
    assert ids(hits) == ["near", "mid", "far"]
    assert [round(s, 4) for _, s in hits] == [0.95, 0.6, 0.1]
    assert ids(store.search_vector(unit(0), 1, ["a"])) == ["near"]
    assert ids(store.search_vector(unit(0), 10, ["a"], statuses=(Status.STAGED,))) == ["staged"]
    assert ids(store.search_vector(unit(0), 10, ["a"], statuses=None))[0] == "staged"
    assert ids(store.search_vector(unit(0), 10, ["a"],
                                   entry_types=(EntryType.WARNING,))) == ["mid"]
    assert ids(store.search_vector(unit(0), 10, ["a"],
                                   memory_types=(MemoryType.FACT,))) == ["near", "far"]
    assert ids(store.search_vector(unit(0), 10, ["a"], min_importance=0.5)) == ["near", "far"]
    assert store.search_vector(unit(0), 0, ["a"]) == []
    with pytest.raises(InvalidMemory, match="zero norm"):
        store.search_vector(np.zeros(DIM), 3, ["a"])


def test_search_sees_writes_after_the_matrix_is_cached(store: SemanticStore) -> None:
    put(store, (entry("one"), unit(0)))
    assert ids(store.search_vector(unit(2), 5, ["a"])) == ["one"]
    put(store, (entry("two"), unit(2)))
    assert ids(store.search_vector(unit(2), 5, ["a"])) == ["two", "one"]
    store.set_status(["two"], Status.ARCHIVED, "stale", 2000.0)
    assert ids(store.search_vector(unit(2), 5, ["a"])) == ["one"]
    store.forget(["one"], "noise", 2000.0, hard=True)
    assert store.search_vector(unit(2), 5, ["a"]) == []
    put(store, (entry("best"), unit(3)), (entry("second"), at_cosine(0.9, 3, 4)),
        (entry("third"), at_cosine(0.5, 3, 4)))
    assert ids(store.search_vector(unit(3), 1, ["a"])) == ["best"]
    store.forget(["best"], "noise", 2001.0, hard=True)  # a deleted row takes no top-k slot
    assert ids(store.search_vector(unit(3), 2, ["a"], statuses=None)) == ["second", "third"]


@settings(max_examples=30, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["put", "status", "soft", "hard", "search"]),
                              st.lists(st.integers(0, 3), min_size=1, max_size=3),
                              st.sampled_from(list(Status)), st.sampled_from(["a", "b"])),
                    min_size=1, max_size=12))
def test_the_cached_matrix_always_agrees_with_a_fresh_load(
        ops: list[tuple[str, list[int], Status, str]]) -> None:
    statuses = (Status.ACTIVE, Status.STAGED, Status.QUARANTINED)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "g.db"
        with SemanticStore.open(path, SIG, DIM) as live:
            for ns in ("a", "b"):
                live.search_vector(unit(0), 1, [ns])  # cache both (empty) namespaces
            for op, picks, status, ns in ops:
                names = [f"{ns}{i}" for i in picks]
                if op == "put":
                    live.put([entry(n, ns=ns, status=status, importance=i / 8)
                              for n, i in zip(names, picks, strict=True)],
                             np.stack([at_cosine(i / 8, 0, 1 + i % 3) for i in picks]))
                elif op == "status" and status != Status.PRUNED:
                    live.set_status(names, status, "test", 1.0)
                elif op in ("soft", "hard"):
                    live.forget(names, "test", 1.0, hard=op == "hard")
                else:
                    live.search_vector(unit(0), 3, [ns], statuses=statuses)  # caches ns
            with SemanticStore.open(path, SIG, DIM) as fresh:
                for spaces in (["a"], ["b"], ["a", "b"]):
                    for filters in ({"statuses": statuses}, {"statuses": None},
                                    {"min_importance": 0.5}):
                        got = live.search_vector(unit(0), 3, spaces, **filters)
                        want = fresh.search_vector(unit(0), 3, spaces, **filters)
                        assert sorted((e.id, round(s, 5)) for e, s in got) == \
                            sorted((e.id, round(s, 5)) for e, s in want)


def test_namespaces_are_isolated(store: SemanticStore) -> None:
    put(store, (entry("a1", "honeypot token 0xdeadbeef", ns="a"), unit(0)),
        (entry("b1", "honeypot token 0xdeadbeef", ns="b"), unit(0)),
        (entry("b2", "honeypot token 0xdeadbeef", ns="b"), unit(0)))
    for _ in range(2):  # fresh and cached matrices
        assert ids(store.search_vector(unit(0), 10, ["a"])) == ["a1"]
        assert ids(store.search_text("honeypot", 10, ["a"])) == ["a1"]
        assert sorted(ids(store.search_vector(unit(0), 10, ["b"]))) == ["b1", "b2"]
    assert sorted(ids(store.search_vector(unit(0), 10, ["a", "b"]))) == ["a1", "b1", "b2"]
    assert store.search_vector(unit(0), 10, []) == []
    assert store.search_vector(unit(0), 10, ["c"]) == []
    assert store.count(["b"]) == 2


def test_text_search_finds_a_rare_token_and_ranks_by_bm25(store: SemanticStore) -> None:
    put(store,
        (entry("t1", "Gas is cheap on sunday mornings"), unit(0)),
        (entry("t2", "Route swaps through the 0x7a25d pool when gas is cheap"), unit(1)),
        (entry("t3", "Liquidity deepens at 14:00 UTC",
               metadata=MemoryMetadata(protocols=("uniswap-v3",), tokens=("WETH",))), unit(2)))
    assert ids(store.search_text("0x7A25D", 5, ["a"])) == ["t2"]
    assert ids(store.search_text("what about uniswap?", 5, ["a"])) == ["t3"]  # tags indexed
    assert ids(store.search_text("weth", 5, ["a"])) == ["t3"]
    assert ids(store.search_text("routing swaps", 5, ["a"])) == ["t2"]  # stemmed
    hits = store.search_text("cheap gas sunday", 5, ["a"])
    assert ids(hits) == ["t1", "t2"]
    assert hits[0][1] > hits[1][1] > 0


@pytest.mark.parametrize("query", [
    '"', '""', "'", "*", "NOT", "-", "^", "(", ")", "{}", ":", "text:", "tags:gas",
    'gas" OR "', "NEAR(gas sunday)", "gas*", "NOT gas", "gas AND NOT cheap", "a OR b OR *",
    "\x00", "ø∂ƒ", "💥 gas",
])
def test_fts_syntax_in_queries_neither_raises_nor_widens(store: SemanticStore,
                                                         query: str) -> None:
    put(store, (entry("t1", "Gas is cheap on sunday mornings"), unit(0)),
        (entry("t2", "Gasoline prices are unrelated"), unit(1)))
    found = set(ids(store.search_text(query, 10, ["a"])))
    # A quoted word matches itself only: never the prefix "gasoline", never "everything".
    assert found <= ({"t1"} if "gas" in query.lower() else set())


def test_punctuation_only_query_returns_nothing(store: SemanticStore) -> None:
    put(store, (entry("t1", "anything at all"), unit(0)))
    assert store.search_text("?!.,;:'\"*()[]{}-_", 5, ["a"]) == []
    assert store.search_text("", 5, ["a"]) == []


def test_text_search_filters(store: SemanticStore) -> None:
    put(store, (entry("w", "slippage warning", entry_type=EntryType.WARNING), unit(0)),
        (entry("i", "slippage insight", importance=0.9), unit(1)),
        (entry("q", "slippage quarantined", status=Status.QUARANTINED), unit(2)))
    assert sorted(ids(store.search_text("slippage", 5, ["a"]))) == ["i", "w"]
    assert ids(store.search_text("slippage", 5, ["a"],
                                 entry_types=(EntryType.WARNING,))) == ["w"]
    assert ids(store.search_text("slippage", 5, ["a"], min_importance=0.8)) == ["i"]
    assert ids(store.search_text("slippage", 5, ["a"],
                                 statuses=(Status.QUARANTINED,))) == ["q"]


# ---- lifecycle ----------------------------------------------------------------------

def test_record_access_counts_and_stamps(store: SemanticStore) -> None:
    put(store, (entry("x"), unit(0)), (entry("y"), unit(1)))
    assert store.record_access(["x", "x", "y", "nope"], 50.0) == 2
    store.record_access(["x"], 60.0)
    x, y = store.get(["x", "y"])
    assert (x.access_count, x.last_accessed) == (2, 60.0)
    assert (y.access_count, y.last_accessed) == (1, 50.0)
    # that commit skipped its fsync; every other write still has one (FULL = 2)
    assert store._db.query("PRAGMA synchronous", ()) == [(2,)]


def test_get_reads_the_stored_row_each_time(store: SemanticStore, tmp_path: Path) -> None:
    """Decoded entries are remembered by row, so a row changed by this store or by another
    process (the CLI beside a running daemon) is read fresh, and an unchanged one is the
    same object."""
    put(store, (entry("x"), unit(0)))
    first = store.get(["x"])[0]
    assert store.get(["x"])[0] is first
    store.record_access(["x"], 50.0)
    assert store.get(["x"])[0].access_count == 1
    other = SemanticStore.open(tmp_path / "grimoire.db", SIG, DIM)
    try:
        other.record_access(["x"], 60.0)
    finally:
        other.close()
    x = store.get(["x"])[0]
    assert (x.access_count, x.last_accessed) == (2, 60.0)
    assert first.access_count == 0  # what was handed out before is not changed


def test_an_accessed_entry_is_not_decoded_again(store: SemanticStore, tmp_path: Path) -> None:
    """Recall rewrites the access columns of what it returns: the remembered entry is
    reused with the row's new access values, equal to a fresh decode of the row."""
    fact = {"key": "k", "value": [1, 2]}
    put(store, (entry("x", fact=fact), unit(0)), (entry("y"), unit(1)))
    first = store.get(["x"])[0]
    store.record_access(["x", "y"], 50.0)
    store.record_access(["x"], 70.0)
    after = store.get(["x", "y"])
    other = SemanticStore.open(tmp_path / "grimoire.db", SIG, DIM)  # decodes afresh
    try:
        assert after == other.get(["x", "y"])
    finally:
        other.close()
    x = after[0]
    assert (x.access_count, x.last_accessed) == (2, 70.0)
    assert x.fact is first.fact  # not decoded again: the remembered entry, new access values
    assert (first.access_count, first.last_accessed) == (0, None)
    assert store.get(["x"])[0] is x  # unchanged since: the same object
    # any other column changed is decoded afresh
    store.update_confidence({"x": 0.25}, 80.0)
    changed = store.get(["x"])[0]
    assert changed.confidence == 0.25 and changed.fact is not first.fact
    assert (changed.access_count, changed.last_accessed) == (2, 70.0)


def test_reinforce_raises_confidence_up_to_one(store: SemanticStore) -> None:
    put(store, (entry("x", confidence=0.9), unit(0)))
    [once] = store.reinforce_many([("x", 0.05, True)], 10.0, 0.3)
    assert once is not None and once.confidence == pytest.approx(0.95)
    [twice] = store.reinforce_many([("x", 0.2, True)], 20.0, 0.3)
    assert twice is not None and twice.confidence == 1.0
    assert twice.reinforced_confidence == 1.0  # the new decay reference
    stored = store.get(["x"])[0]
    assert stored == twice
    assert (stored.last_reinforced, stored.successful_recalls) == (20.0, 2)
    assert store.confidence_times(["x"]) == {"x": 20.0}
    assert store.reinforce_many([("missing", 0.1, True)], 20.0, 0.3) == [None]


def test_unhelpful_recall_lowers_confidence_within_limits(store: SemanticStore) -> None:
    put(store, (entry("plain", confidence=0.5), unit(0)),
        (entry("anti", confidence=0.32, entry_type=EntryType.ANTI_KNOWLEDGE), unit(1)),
        (entry("anchor", confidence=0.6, anchored=True), unit(2)))
    plain = store.reinforce_many([("plain", -0.1, False)], 5.0, 0.3)[0]  # only the size counts
    assert plain is not None and plain.confidence == pytest.approx(0.4)
    assert plain.reinforced_confidence == pytest.approx(0.4)
    store.update_confidence({"plain": 0.2}, 6.0)  # a decay pass: reference 0.4 stays
    lowered = store.reinforce_many([("plain", 0.1, False)], 7.0, 0.3)[0]
    assert lowered is not None and lowered.confidence == pytest.approx(0.1)
    assert lowered.reinforced_confidence == pytest.approx(0.2)  # 0.4 scaled by 0.1 / 0.2
    assert plain.last_reinforced is None and plain.successful_recalls == 0
    anti = store.reinforce_many([("anti", 0.1, False)], 5.0, 0.3)[0]
    assert anti is not None and anti.confidence == pytest.approx(0.3)
    anchor = store.reinforce_many([("anchor", 0.1, False)], 5.0, 0.3)[0]
    assert anchor is not None and anchor.confidence == pytest.approx(0.6)
    with pytest.raises(InvalidMemory):
        store.reinforce_many([("plain", float("nan"), True)], 5.0, 0.3)


def test_reinforce_many_is_each_reinforcement_in_order(store: SemanticStore,
                                                        tmp_path: Path) -> None:
    """One transaction gives what the same reinforcements one by one give: an entry named
    twice is reinforced twice, an unknown id is None and changes nothing, and a bad delta
    anywhere writes nothing."""
    entries = [(entry("a", confidence=0.5), unit(0)), (entry("b", confidence=0.9), unit(1)),
               (entry("c", confidence=0.32, entry_type=EntryType.ANTI_KNOWLEDGE), unit(2))]
    put(store, *entries)
    other = SemanticStore.open(tmp_path / "one_by_one.db", SIG, DIM)
    try:
        put(other, *entries)
        items = [("a", 0.05, True), ("b", 0.02, False), ("gone", 0.05, True),
                 ("a", 0.02, False), ("c", 0.02, False), ("b", 0.05, True)]
        many = store.reinforce_many(items, 30.0, 0.3)
        one_by_one = [other.reinforce_many([item], 30.0, 0.3)[0] for item in items]
        assert many == one_by_one and many[2] is None
        assert store.get(["a", "b", "c"]) == other.get(["a", "b", "c"])
        before = store.get(["a", "b", "c"])
        with pytest.raises(InvalidMemory):
            store.reinforce_many([("a", 0.05, True), ("b", float("nan"), True)], 40.0, 0.3)
        assert store.get(["a", "b", "c"]) == before
    finally:
        other.close()


@settings(max_examples=25, deadline=None)
@given(start=st.floats(0, 1), anti=st.booleans(),
       steps=st.lists(st.tuples(st.floats(0, 1), st.booleans()), max_size=8))
def test_reinforcement_keeps_confidence_in_bounds(start: float, anti: bool,
                                                  steps: list[tuple[float, bool]]) -> None:
    floor = 0.3
    kind = EntryType.ANTI_KNOWLEDGE if anti else EntryType.INSIGHT
    with tempfile.TemporaryDirectory() as tmp, \
            SemanticStore.open(Path(tmp) / "g.db", SIG, DIM) as s:
        put(s, (entry("x", confidence=start, entry_type=kind), unit(0)))
        previous = start
        for delta, useful in steps:
            [after] = s.reinforce_many([("x", delta, useful)], 1.0, floor)
            assert after is not None
            assert 0.0 <= after.confidence <= 1.0
            if useful:
                assert after.confidence >= previous
            else:
                assert after.confidence <= previous
                if anti:
                    assert after.confidence >= min(previous, floor)
            previous = after.confidence


def test_update_confidence_is_all_or_nothing(store: SemanticStore) -> None:
    put(store, (entry("x", confidence=0.8), unit(0)), (entry("y", confidence=0.8), unit(1)))
    assert store.update_confidence({"x": 0.5, "y": 0.4, "gone": 0.1}, 99.0) == 2
    assert [e.confidence for e in store.get(["x", "y"])] == [0.5, 0.4]
    store.update_confidence({"x": 0.3}, 100.0)  # never compounds: the reference stays 0.8
    assert [e.reinforced_confidence for e in store.get(["x", "y"])] == [0.8, 0.8]
    assert store.confidence_times(["x"]) == {"x": 100.0}
    with pytest.raises(InvalidMemory):
        store.update_confidence({"x": 0.1, "y": 1.5}, 101.0)
    assert [e.confidence for e in store.get(["x", "y"])] == [0.3, 0.4]


def test_forget_is_always_logged(store: SemanticStore) -> None:
    put(store, (entry("soft", "gas was high " * 40), unit(0)),
        (entry("hard", "drop me"), unit(1)), (entry("other", ns="b"), unit(2)))
    store.add_edge(CausalEdge("a", "soft", "hard", 10.0, 0.6))
    assert store.forget(["soft", "missing"], "stale tactical knowledge", 70.0) == 1
    assert store.get(["soft"])[0].status == Status.PRUNED
    assert ids(store.search_vector(unit(0), 5, ["a"])) == ["hard"]
    assert store.forget(["hard"], "operator request", 80.0, hard=True) == 1
    assert store.get(["hard"]) == []
    assert store.search_text("drop", 5, ["a"], statuses=None) == []
    assert store.edges_from("soft") == []
    log = store.forget_log(10)
    assert [(r.entry_id, r.hard, r.at) for r in log] == [("hard", True, 80.0),
                                                          ("soft", False, 70.0)]
    assert log[1].reason == "stale tactical knowledge"
    assert log[1].namespace == "a" and 0 < len(log[1].excerpt) <= 200
    assert store.forget_log(10, namespace="b") == []
    with pytest.raises(InvalidMemory, match="reason"):
        store.forget(["other"], "  ", 90.0)
    assert store.get(["other"])[0].status == Status.ACTIVE


def test_set_status_moves_and_prune_goes_through_forget(store: SemanticStore) -> None:
    put(store, (entry("x", status=Status.STAGED), unit(0)), (entry("y"), unit(1)))
    assert store.set_status(["x", "y"], Status.ACTIVE, "curator promote", 5.0) == 1
    assert store.get(["x"])[0].status == Status.ACTIVE
    assert store.set_status(["y"], Status.PRUNED, "curator prune", 6.0) == 1
    assert [r.entry_id for r in store.forget_log()] == ["y"]


def test_count_stats_and_iter_all(store: SemanticStore) -> None:
    many = [entry(f"e{i}", category=InsightCategory.GAS_TIMING if i % 2 else None,
                  status=Status.STAGED if i % 3 == 0 else Status.ACTIVE, anchored=i == 1)
            for i in range(1203)]
    store.put(many, np.tile(unit(0), (len(many), 1)))
    put(store, (entry("other", ns="b"), unit(1)))
    store.add_edge(CausalEdge("a", "e1", "e2", 5.0, 0.5))
    assert store.count() == 1204
    assert store.count(["a"], Status.STAGED) == 401
    stats = store.stats("a")
    assert stats.total == 1203 and stats.by_status == {"active": 802, "staged": 401}
    assert stats.by_category == {"": 602, "gas_timing": 601}
    assert (stats.anchored, stats.edges) == (1, 1)
    seen = [e.id for e in store.iter_all()]
    assert len(seen) == len(set(seen)) == 1204


# ---- causal graph -------------------------------------------------------------------

def chain(store: SemanticStore, names: list[str], ns: str = "a") -> None:
    put(store, *[(entry(n, ns=ns), unit(i % DIM)) for i, n in enumerate(names)])
    for cause, effect in itertools.pairwise(names):
        store.add_edge(CausalEdge(ns, cause, effect, 12.0, 0.7))


def test_causal_traversal_respects_depth(store: SemanticStore) -> None:
    names = [f"n{i}" for i in range(10)]
    chain(store, names)
    assert store.causal_neighbors("n0", 2, ["a"]) == [("n1", 1, ("n0", "n1")),
                                                      ("n2", 2, ("n0", "n1", "n2"))]
    assert [n for n, _, _ in store.causal_neighbors("n0", 100, ["a"])] == names[1:7]  # cap 6
    assert store.causal_neighbors("n3", 1, ["a"], direction="in") == [("n2", 1, ("n3", "n2"))]
    assert sorted(n for n, _, _ in store.causal_neighbors("n3", 1, ["a"], "both")) == ["n2", "n4"]
    assert store.causal_neighbors("n0", 0, ["a"]) == []
    assert store.edges_from("n0") == [CausalEdge("a", "n0", "n1", 12.0, 0.7)]
    store.add_edge(CausalEdge("a", "n0", "n1", 30.0, 0.9))  # upsert
    assert store.edges_from("n0") == [CausalEdge("a", "n0", "n1", 30.0, 0.9)]
    with pytest.raises(ValueError, match="direction"):
        store.causal_neighbors("n0", 2, ["a"], direction="sideways")


def test_causal_traversal_survives_cycles(store: SemanticStore) -> None:
    chain(store, ["a", "b", "c"])
    store.add_edge(CausalEdge("a", "c", "a", 1.0, 0.5))
    store.add_edge(CausalEdge("a", "b", "a", 1.0, 0.5))
    found = store.causal_neighbors("a", 6, ["a"], direction="both")
    assert sorted((n, d) for n, d, _ in found) == [("b", 1), ("c", 1)]
    assert [n for n, _, _ in store.causal_neighbors("a", 6, ["a"])] == ["b", "c"]
    # a dense graph stays bounded too
    put(store, *[(entry(f"k{i}"), unit(i)) for i in range(8)])
    for i in range(8):
        for j in range(8):
            if i != j:
                store.add_edge(CausalEdge("a", f"k{i}", f"k{j}", 1.0, 0.5))
    assert len(store.causal_neighbors("k0", 6, ["a"])) == 7


def test_causal_edges_stay_inside_their_namespace(store: SemanticStore) -> None:
    put(store, (entry("x", ns="a"), unit(0)), (entry("y", ns="b"), unit(1)),
        (entry("z", ns="b"), unit(2)))
    with pytest.raises(NamespaceRefused):
        store.add_edge(CausalEdge("a", "x", "y", 1.0, 0.5))
    with pytest.raises(InvalidMemory):
        store.add_edge(CausalEdge("a", "x", "nowhere", 1.0, 0.5))
    with pytest.raises(InvalidMemory):
        store.add_edge(CausalEdge("a", "x", "x", 1.0, 0.5))
    store.add_edge(CausalEdge("b", "y", "z", 1.0, 0.5))
    assert store.causal_neighbors("y", 3, ["a"]) == []
    assert [n for n, _, _ in store.causal_neighbors("y", 3, ["b"])] == ["z"]


# ---- integrity ----------------------------------------------------------------------

def test_signature_mismatch_refuses(tmp_path: Path) -> None:
    path = tmp_path / "grimoire.db"
    SemanticStore.open(path, SIG, DIM).close()
    assert SemanticStore.stored_signature(path) == (SIG, DIM)
    with pytest.raises(SignatureMismatch, match="golem memory reembed"):
        SemanticStore.open(path, "other-model", DIM)
    with pytest.raises(SignatureMismatch, match="golem memory reembed"):
        SemanticStore.open(path, SIG, DIM * 2)
    SemanticStore.open(path, SIG, DIM).close()
    assert SemanticStore.stored_signature(tmp_path / "absent.db") is None


def test_a_file_that_is_not_a_store_is_corrupt(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all " * 200)
    with pytest.raises(StoreCorrupt, match=str(junk)):
        SemanticStore.open(junk, SIG, DIM)
    with pytest.raises(StoreCorrupt, match=str(junk)):
        SemanticStore.stored_signature(junk)


def test_a_broken_schema_is_corrupt(tmp_path: Path) -> None:
    broken = tmp_path / "broken.db"
    SemanticStore.open(broken, SIG, DIM).close()
    with sqlite3.connect(broken) as conn:
        conn.execute("DROP TABLE forget_log")
    with pytest.raises(StoreCorrupt, match="forget_log"):
        SemanticStore.open(broken, SIG, DIM)
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE entries (x)")
    with pytest.raises(StoreCorrupt, match=str(foreign)):
        SemanticStore.open(foreign, SIG, DIM)
    newer = tmp_path / "newer.db"
    with sqlite3.connect(newer) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreCorrupt, match="newer"):
        SemanticStore.open(newer, SIG, DIM)


def test_replace_vectors_is_all_or_nothing(tmp_path: Path) -> None:
    path = tmp_path / "grimoire.db"
    store = SemanticStore.open(path, SIG, DIM)
    put(store, (entry("x"), unit(0)), (entry("y", ns="b"), unit(1)))
    before = store.vectors(["x", "y"])
    with pytest.raises(InvalidMemory, match="dimension"):
        store.replace_vectors({"x": np.ones(32), "y": np.ones(31)}, "new-model")
    with pytest.raises(InvalidMemory, match="dimension"):
        store.replace_vectors({"x": np.ones(32), "y": np.ones(32)}, "new-model", 31)
    with pytest.raises(InvalidMemory, match="unknown"):
        store.replace_vectors({"x": np.ones(32), "y": np.ones(32), "z": np.ones(32)}, "m")
    with pytest.raises(InvalidMemory, match="missing"):
        store.replace_vectors({"x": np.ones(32)}, "new-model")
    with pytest.raises(InvalidMemory, match="NaN"):
        store.replace_vectors({"x": np.ones(32), "y": np.full(32, np.nan)}, "new-model")
    after = store.vectors(["x", "y"])
    assert all(np.array_equal(before[i], after[i]) for i in before)
    assert (store.signature_id, store.dim) == (SIG, DIM)
    assert SemanticStore.stored_signature(path) == (SIG, DIM)

    new = {"x": np.eye(32, dtype=np.float32)[5], "y": np.eye(32, dtype=np.float32)[6]}
    assert store.replace_vectors(new, "new-model") == 2
    assert ids(store.search_vector(new["x"], 1, ["a", "b"])) == ["x"]
    store.close()
    with pytest.raises(SignatureMismatch):
        SemanticStore.open(path, SIG, DIM)
    with SemanticStore.open(path, "new-model", 32) as reopened:
        np.testing.assert_array_equal(reopened.vectors(["y"])["y"], new["y"])


def test_an_empty_store_can_change_model_and_dimension(tmp_path: Path) -> None:
    path = tmp_path / "grimoire.db"
    with SemanticStore.open(path, SIG, DIM) as store:
        assert store.replace_vectors({}, "bigger-model", 64) == 0
    assert SemanticStore.stored_signature(path) == ("bigger-model", 64)


# ---- contradiction & quarantine -----------------------------------------------------

def test_a_claim_contradicting_an_anchored_entry_is_quarantined(store: SemanticStore) -> None:
    anchor = entry("anchor", "Sells of token 0xDEAD always revert", confidence=0.4,
                   anchored=True, entry_type=EntryType.ANTI_KNOWLEDGE)
    put(store, (anchor, unit(0)))
    claim = entry("claim", "Sells of token 0xDEAD always succeed", confidence=0.6)
    stored, report = store.put_checked(claim, at_cosine(0.92), 0.8, 0.75, now=1234.0)
    assert stored.status == Status.QUARANTINED and report.quarantined
    assert report.against == ("anchor",) and "polarity" in report.reasons[0]
    assert store.get(["anchor"]) == [anchor]  # untouched
    np.testing.assert_array_equal(store.vectors(["anchor"])["anchor"], unit(0))
    assert store.get(["claim"]) == [stored]
    assert ids(store.search_vector(unit(0), 5, ["a"])) == ["anchor"]  # not recalled
    log = store.quarantine_log()
    assert [(q.entry_id, q.against, q.at) for q in log] == [("claim", ("anchor",), 1234.0)]


def test_contradicting_an_untrusted_entry_is_reported_not_quarantined(
        store: SemanticStore) -> None:
    weak = entry("weak", "Gas never spikes on Sundays", confidence=0.5)
    trusted_elsewhere = entry("far", "Gas is high on Mondays", confidence=0.99)
    put(store, (weak, unit(0)), (trusted_elsewhere, unit(5)))
    stored, report = store.put_checked(entry("new", "Gas spikes on Sundays"), at_cosine(0.9),
                                       0.8, 0.75)
    assert stored.status == Status.ACTIVE and not report.quarantined
    assert [c[0] for c in report.conflicts] == ["weak"]
    assert store.quarantine_log() == []


def test_a_confident_entry_in_another_namespace_does_not_quarantine(
        store: SemanticStore) -> None:
    put(store, (entry("theirs", "Pool X never fills", ns="b", confidence=0.95), unit(0)))
    stored, report = store.put_checked(entry("mine", "Pool X fills"), unit(0), 0.8, 0.75)
    assert stored.status == Status.ACTIVE and report.conflicts == ()


def test_a_trusted_baseline_is_protected_from_an_outlier(store: SemanticStore) -> None:
    base = entry("gas", "Gas costs about 20 gwei on weekday mornings", confidence=0.9,
                 fact_kind=FactKind.BASELINE, fact={"metric": "gas", "mean": 20, "stddev": 3})
    put(store, (base, unit(0)))
    outlier = replace(base, id="gas2", text="Gas costs about 90 gwei on weekday mornings",
                      confidence=0.5, fact={"metric": "gas", "mean": 90, "stddev": 5})
    stored, report = store.put_checked(outlier, at_cosine(0.97), 0.8, 0.75)
    assert stored.status == Status.QUARANTINED and "baseline" in report.reasons[0]
    close = replace(outlier, id="gas3", fact={"metric": "gas", "mean": 22, "stddev": 4})
    assert store.put_checked(close, at_cosine(0.97), 0.8, 0.75)[0].status == Status.ACTIVE


# ---- with the real model: the threshold against real sentence similarities -----------

MODEL_DIR = Path(__file__).resolve().parents[2] / "models" / "all-minilm-l6-v2-int8"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.load(MODEL_DIR)


@pytest.mark.parametrize(("text", "expected"), [
    ("Sells of token 0xDEAD always succeed", Status.QUARANTINED),
    ("Sells of token 0xBEEF always succeed", Status.ACTIVE),  # another token
    ("Selling 0xDEAD always reverts", Status.ACTIVE),  # agrees
    ("Gas is cheap on Sunday mornings", Status.ACTIVE),  # unrelated
])
def test_quarantine_with_real_embeddings(tmp_path: Path, embedder: Embedder, text: str,
                                         expected: Status) -> None:
    anchor = entry("anchor", "Sells of token 0xDEAD always revert: it is a honeypot",
                   anchored=True, confidence=0.5, entry_type=EntryType.ANTI_KNOWLEDGE)
    with SemanticStore.open(tmp_path / "g.db", embedder.signature.id, embedder.dim) as store:
        store.put([anchor], embedder.embed([anchor.text]))
        stored, report = store.put_checked(entry("claim", text), embedder.embed([text])[0],
                                           0.8, 0.75)
        assert stored.status == expected, report
        assert store.get(["anchor"]) == [anchor]


def _main_file_counts(path: Path, tmp: Path) -> dict[str, int]:
    """Access counts in the database file alone, without its WAL: what checkpoints wrote."""
    copy = tmp / "main-only.db"
    copy.write_bytes(path.read_bytes())
    conn = sqlite3.connect(copy)
    try:
        return dict(conn.execute("SELECT id, access_count FROM entries").fetchall())
    finally:
        conn.close()
        copy.unlink()


def test_access_bookkeeping_leaves_the_wal_checkpoint_to_durable_writes(tmp_path: Path) -> None:
    """Recall's access writes skip the checkpoint (two fsyncs) until the WAL is past the
    backstop; the next durable write past the usual threshold checkpoints them."""
    path = tmp_path / "grimoire.db"
    wal = tmp_path / "grimoire.db-wal"
    s = SemanticStore.open(path, SIG, DIM)
    try:
        pairs = [(entry(f"e{i}", f"entry {i} " + "filler words " * 80), unit(i % DIM))
                 for i in range(300)]
        put(s, *pairs)
        everyone = [e.id for e, _ in pairs]
        page = s._db.query("PRAGMA page_size", ())[0][0]

        def frames() -> int:  # the WAL only grows while nothing checkpoints it
            return max(0, (wal.stat().st_size - 32) // (int(page) + 24))

        s._db.query("PRAGMA wal_checkpoint(TRUNCATE)", ())
        writes = 0
        while frames() <= 2 * WAL_CHECKPOINT_PAGES:
            s.record_access(everyone, 100.0 + writes)
            writes += 1
            assert writes < 500, "access writes do not grow the WAL"
        assert set(_main_file_counts(path, tmp_path).values()) == {0}  # none checkpointed
        per_write = frames() / writes
        # a durable write past the usual threshold checkpoints everything before it
        s.update_confidence({"e0": 0.5}, 200.0)
        assert set(_main_file_counts(path, tmp_path).values()) == {writes}
        # access writes alone checkpoint once the WAL is past the backstop
        more = int(WAL_BACKSTOP_PAGES / per_write) + 5
        for i in range(more):
            s.record_access(everyone, 300.0 + i)
        checkpointed = set(_main_file_counts(path, tmp_path).values())
        assert len(checkpointed) == 1 and writes < checkpointed.pop() <= writes + more
        assert s.get(["e1"])[0].access_count == writes + more
        assert s._db.query("PRAGMA wal_autocheckpoint", ()) == [(WAL_CHECKPOINT_PAGES,)]
    finally:
        s.close()

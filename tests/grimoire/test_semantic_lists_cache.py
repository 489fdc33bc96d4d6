"""search_lists remembers its recent answers; they must be what a store opened afresh on
the same file answers, after every kind of write (the real SQLite store, FTS5 and numpy)."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from golem.grimoire.records import EntryType, Status
from golem.grimoire.semantic import EntryLists, SemanticStore

from .test_semantic_lexicon import DIM, SIG, WANTS, random_entry, vectors

QUERIES = ("large swaps whale price", "liquidation oracle stale feed", "honeypot revert",
           "gas spike fees", "usdc weth pool drop")
NAMESPACES = (["a"], ["a", "b"])


def answers(store: SemanticStore, query_vectors: list[np.ndarray]) -> list[list[EntryLists]]:
    return [store.search_lists(vector, query, namespaces, WANTS)
            for query, vector in zip(QUERIES, query_vectors, strict=True)
            for namespaces in NAMESPACES]


def fresh_answers(path: Path, query_vectors: list[np.ndarray]) -> list[list[EntryLists]]:
    fresh = SemanticStore.open(path, SIG, DIM)
    try:
        return answers(fresh, query_vectors)
    finally:
        fresh.close()


def assert_same(got: list[list[EntryLists]], fresh: list[list[EntryLists]], step: int) -> None:
    """The same entries in the same order with the same scores (a matrix kept current row
    by row and one loaded afresh may round a cosine's last bit apart)."""
    assert len(got) == len(fresh)
    for lists, expected in zip(got, fresh, strict=True):
        for (dense, lexical, unlisted), (dense_e, lexical_e, unlisted_e) in zip(
                lists, expected, strict=True):
            for hits, hits_e in ((dense, dense_e), (lexical, lexical_e)):
                assert [h[0] for h in hits] == [h[0] for h in hits_e], f"step {step}"
                assert [v for h in hits for v in h[1:]] == pytest.approx(
                    [v for h in hits_e for v in h[1:]], rel=1e-6, abs=1e-6), f"step {step}"
            assert unlisted == pytest.approx(unlisted_e, rel=1e-9), f"step {step}"


def test_remembered_lists_follow_every_write(tmp_path: Path) -> None:
    rng = random.Random(11)
    path = tmp_path / "grimoire.db"
    store = SemanticStore.open(path, SIG, DIM)
    query_vectors = list(vectors(rng, len(QUERIES)))
    next_id = 200
    try:
        store.put([random_entry(rng, i) for i in range(next_id)], vectors(rng, next_id))
        before = answers(store, query_vectors)
        assert answers(store, query_vectors) == before  # asked again: remembered
        changed_rounds = 0
        for step in range(14):
            ids = [f"e{i:04d}" for i in rng.sample(range(next_id), 12)]
            kind = step % 7
            if kind == 0:  # new entries, two of them the query's own words
                new = [random_entry(rng, next_id + j, QUERIES[j % len(QUERIES)])
                       for j in range(6)]
                near = np.asarray([query_vectors[j % len(QUERIES)] for j in range(6)])
                store.put([replace(e, status=Status.ACTIVE) for e in new],
                          near + 0.3 * vectors(rng, 6))  # near the queries, no two tied
                next_id += 6
            elif kind == 1:  # replaced texts, in their own namespaces
                stored = store.get(ids)
                store.put([replace(random_entry(rng, int(e.id[1:])), namespace=e.namespace)
                           for e in stored], vectors(rng, len(stored)))
            elif kind == 2:
                store.forget(ids, "test", 2000.0, hard=True)
            elif kind == 3:
                store.forget(ids, "test", 2000.0)
            elif kind == 4:
                store.set_status(ids, Status.ARCHIVED, "test", 2000.0)
            elif kind == 5:  # checked puts, anti-knowledge among them
                entry = replace(random_entry(rng, next_id, QUERIES[2]), status=Status.ACTIVE,
                                entry_type=EntryType.ANTI_KNOWLEDGE)
                store.put_checked(entry, query_vectors[2], quarantine_confidence=0.9)
                next_id += 1
            else:  # what recall itself writes: access, confidence
                store.record_access(ids, 2000.0)
                store.update_confidence({i: 0.5 for i in ids}, 2000.0)
            now = answers(store, query_vectors)
            assert_same(now, fresh_answers(path, query_vectors), step)
            changed_rounds += now != before
            before = now
        assert changed_rounds >= 6  # the writes did move the lists the store remembered
    finally:
        store.close()


def test_an_answer_changed_by_its_caller_is_not_given_again(tmp_path: Path) -> None:
    rng = random.Random(5)
    store = SemanticStore.open(tmp_path / "grimoire.db", SIG, DIM)
    try:
        store.put([replace(random_entry(rng, i), namespace="a", status=Status.ACTIVE)
                   for i in range(50)], vectors(rng, 50))
        vector = vectors(rng, 1)[0]
        first = store.search_lists(vector, "swap price", ["a"], WANTS)
        expected = [EntryLists(list(d), list(le), dict(u)) for d, le, u in first]
        for dense, lexical, unlisted in first:
            dense.clear()
            lexical.append(("x", 1.0, 1.0))
            unlisted["x"] = 1.0
        assert store.search_lists(vector, "swap price", ["a"], WANTS) == expected
    finally:
        store.close()

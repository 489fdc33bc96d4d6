"""Recall's in-memory BM25 must give FTS5's own answers: same entries, order and scores.

The reference is the SQL path (``semantic_fts.search_text_ids``: bm25() over entries_fts
on the same SQLite file), compared on random entries and queries, and again after the
writes the lexicon has to follow (replacements, hard and soft forgets, status changes).
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from golem.grimoire import semantic_fts
from golem.grimoire.records import (
    EntryType,
    MemoryMetadata,
    MemoryType,
    SemanticEntry,
    Status,
)
from golem.grimoire.semantic import SemanticStore
from golem.grimoire.semantic_schema import Filters

DIM = 16
SIG = "lexicon-test-sig"
# inflections on purpose: the porter stemmer folds them, and a query may hold two words
# of one stem (two phrases, each scored: FTS5 counts both)
WORDS = ("swap", "swaps", "swapped", "price", "prices", "pricing", "liquidation",
         "liquidations", "liquidated", "whale", "whales", "oracle", "stale", "feed", "pool",
         "pools", "fee", "fees", "gas", "spike", "honeypot", "revert", "reverts", "eth",
         "usdc", "weth", "dai", "aave", "uniswap", "chainlink", "large", "small", "drop",
         "rise")
TYPES = list(EntryType)
STATUSES = [Status.ACTIVE, Status.ACTIVE, Status.ACTIVE, Status.STAGED, Status.PRUNED]
WANTS: list[tuple[int, Filters]] = [
    (30, ((Status.ACTIVE,), None, None, None)),
    (20, ((Status.ACTIVE,), (EntryType.ANTI_KNOWLEDGE,), None, None)),
    (7, (None, (EntryType.WARNING, EntryType.HEURISTIC), (MemoryType.FACT,), 0.4)),
    (500, (None, None, None, None)),
]


def random_entry(rng: random.Random, i: int, text: str | None = None) -> SemanticEntry:
    words = text or " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14)))
    return SemanticEntry(
        id=f"e{i:04d}", namespace=rng.choice(["a", "a", "b"]), text=words,
        entry_type=rng.choice(TYPES), memory_type=rng.choice(list(MemoryType)),
        created_at=1000.0, status=rng.choice(STATUSES), importance=rng.random(),
        metadata=MemoryMetadata(protocols=tuple(rng.sample(["uniswap", "aave", "curve"],
                                                           rng.randint(0, 2))),
                                tokens=tuple(rng.sample(["ETH", "USDC", "WBTC"],
                                                        rng.randint(0, 2)))))


def vectors(rng: random.Random, n: int) -> np.ndarray:
    v = np.asarray([[rng.gauss(0, 1) for _ in range(DIM)] for _ in range(n)], np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def assert_same_as_fts5(store: SemanticStore, rng: random.Random, queries: int) -> int:
    """Compares the lists of ``queries`` random queries; returns how many dense hits
    carried a BM25 score from outside the lexical top-k."""
    query_vector = vectors(rng, 1)[0]
    carried = 0
    for _ in range(queries):
        query = " ".join(rng.choice([*WORDS, "absent", "Swaps", "PRICE"])
                         for _ in range(rng.randint(1, 9)))
        for namespaces in (["a"], ["a", "b"], ["b"]):
            lists = store.search_lists(query_vector, query, namespaces, WANTS)
            for (k, filters), (dense, lexical, dense_lexical) in zip(WANTS, lists,
                                                                      strict=True):
                expected = semantic_fts.search_text_ids(store._db, query, k, namespaces,
                                                        filters)
                assert [i for i, _, _ in lexical] == [i for i, _ in expected], query
                for (_, score, _), (_, want) in zip(lexical, expected, strict=True):
                    assert score == pytest.approx(want, rel=1e-9, abs=1e-12)
                # each dense hit the lexical top-k left out carries its own BM25 score
                every = dict(semantic_fts.search_text_ids(store._db, query, 10_000,
                                                          namespaces, filters))
                listed = {i for i, _, _ in lexical}
                unlisted = {i for i, _, _ in dense if i not in listed}
                assert set(dense_lexical) == unlisted & set(every), query
                for entry_id, score in dense_lexical.items():
                    assert score == pytest.approx(every[entry_id], rel=1e-9, abs=1e-12)
                carried += len(dense_lexical)
    return carried


def test_the_lexicon_ranks_and_scores_as_fts5_does_through_every_kind_of_write(
        tmp_path: Path) -> None:
    rng = random.Random(7)
    store = SemanticStore.open(tmp_path / "grimoire.db", SIG, DIM)
    try:
        entries = [random_entry(rng, i) for i in range(300)]
        store.put(entries, vectors(rng, len(entries)))
        assert assert_same_as_fts5(store, rng, 40) > 0  # the lexicon loads from the file here
        # replacements (new text and tags), new entries, then forgets and status moves
        changed = [replace(random_entry(rng, i), namespace=entries[i].namespace)
                   for i in rng.sample(range(300), 40)]
        fresh = [random_entry(rng, i) for i in range(300, 340)]
        store.put([*changed, *fresh], vectors(rng, 80))
        assert_same_as_fts5(store, rng, 25)
        store.forget([f"e{i:04d}" for i in rng.sample(range(340), 30)], "test", 2000.0,
                     hard=True)
        store.forget([f"e{i:04d}" for i in rng.sample(range(340), 20)], "test", 2000.0)
        store.set_status([f"e{i:04d}" for i in rng.sample(range(340), 20)],
                         Status.ARCHIVED, "test", 2000.0)
        assert_same_as_fts5(store, rng, 25)
    finally:
        store.close()
    reopened = SemanticStore.open(tmp_path / "grimoire.db", SIG, DIM)  # loaded afresh
    try:
        assert_same_as_fts5(reopened, rng, 15)
    finally:
        reopened.close()


def test_a_word_fts5_splits_is_left_to_fts5(tmp_path: Path) -> None:
    """Python's word pattern keeps "aᦰb" whole, FTS5's tokenizer makes it two tokens (a
    phrase); the lexicon cannot match phrases, so that query goes to FTS5 itself."""
    store = SemanticStore.open(tmp_path / "grimoire.db", SIG, DIM)
    try:
        rng = random.Random(3)
        entries = [random_entry(rng, 0, "a b swap"), random_entry(rng, 1, "b a swap"),
                   random_entry(rng, 2, "swap only")]
        entries = [replace(e, status=Status.ACTIVE, namespace="a") for e in entries]
        store.put(entries, vectors(rng, 3))
        assert store._tokenizer.phrases("aᦰb swap") is None
        lists = store.search_lists(vectors(rng, 1)[0], "aᦰb", ["a"], WANTS[:1])
        assert [i for i, _, _ in lists[0][1]] == ["e0000"]  # the phrase "a b", in order
        assert store._tokenizer.phrases("Swaps swap") == ["swap", "swap"]
    finally:
        store.close()

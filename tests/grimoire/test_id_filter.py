"""The filter of stored ids: never a false negative, few false positives, and a store
that grows past the filter's size still stores each episode once."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np

from golem.grimoire.embedder import Embedder
from golem.grimoire.id_filter import MIN_CAPACITY, IdFilter

from .test_episodes import make_episode, open_store, unit


def test_every_added_id_passes_and_few_others_do() -> None:
    added = [uuid.uuid4().hex for _ in range(20_000)]
    others = [uuid.uuid4().hex for _ in range(100_000)]
    made = IdFilter.of(added[:10_000], headroom=2.0)
    made.add(added[10_000:])  # up to its capacity
    assert not made.full
    assert all(made.might_hold(added))
    false_positives = sum(made.might_hold(others))
    assert false_positives < 100  # ~7 expected at capacity (0.6185 ** 20 of 100,000)
    made.add(others[:5])
    assert made.full and all(made.might_hold(others[:5]))


def test_an_empty_filter_holds_nothing() -> None:
    empty = IdFilter.of([])
    assert empty.capacity == MIN_CAPACITY
    assert empty.might_hold(["a", "b"]) == [False, False]
    assert empty.might_hold([]) == []


def test_a_store_growing_past_its_filter_stores_each_episode_once(
        tmp_path: Path, embedder: Embedder) -> None:
    """The first write reads the ids (none), so its filter is sized for MIN_CAPACITY; the
    store outgrows it, reads its ids again, and re-captured episodes are still found."""
    rng = np.random.default_rng(3)
    sig = embedder.signature
    store = open_store(tmp_path / "ep", sig)
    episodes = [make_episode(i) for i in range(MIN_CAPACITY + 600)]
    for start in range(0, len(episodes), 700):
        batch = episodes[start:start + 700]
        store.upsert(batch, unit(rng, len(batch)))
    assert store.count() == len(episodes)
    for start in range(0, len(episodes), 1500):  # every one of them captured again
        batch = episodes[start:start + 1500]
        store.upsert(batch, unit(rng, len(batch)))
    assert store.count() == len(episodes)
    reopened = open_store(tmp_path / "ep", sig)  # its filter read from the table
    reopened.upsert(episodes[::7], unit(rng, len(episodes[::7])))
    assert reopened.count() == len(episodes)
